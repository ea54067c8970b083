# script_support.cmake: helpers of the checks/install scripts (cmake -P), included
# by install_and_consume.cmake, consumer_builds.cmake and coawait_warning.cmake.
#
#   require_vars(SCRIPT VAR...)              stops with "SCRIPT: -DVAR=... is
#                                            required" when a VAR is unset or empty
#   script_step(SCRIPT NAME OUTVAR cmd...)   runs cmd (echoing it), keeps its output
#                                            (stdout and stderr) in OUTVAR; when it
#                                            fails, prints the output and stops with
#                                            "SCRIPT: step 'NAME' failed (rc)"
function(require_vars script)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
      message(FATAL_ERROR "${script}: -D${var}=... is required")
    endif()
  endforeach()
endfunction()

function(script_step script name outvar)
  list(JOIN ARGN " " shown)
  message(STATUS "${script}: ${name}: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${outvar} "${out}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    message("${out}")
    message(FATAL_ERROR "${script}: step '${name}' failed (${rc})")
  endif()
endfunction()
