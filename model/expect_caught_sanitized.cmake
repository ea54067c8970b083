# expect_caught_sanitized.cmake: a model mutant's ctest in a sanitizer build.
#
#   cmake -DEXE=<mutant model binary> -DSANITIZER=<tsan|asan-ubsan> -P expect_caught_sanitized.cmake -- <args>
#
# Runs EXE with <args> (its --expect-failure=<kinds>: it exits 0 when Relacy
# reports the expected failure). In a sanitizer build the model runs on real
# memory, so a planted use-after-free (a holder read after its node was freed)
# can be stopped by the sanitizer before Relacy reports it: a sanitizer report
# then counts as caught too, and says so. Exit 0 of EXE without a report is
# caught as in the default build; anything else fails. The unsanitized presets
# check that Relacy itself catches every mutant.
foreach(var EXE SANITIZER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_caught_sanitized.cmake: -D${var}=... is required")
  endif()
endforeach()
set(args "")
set(after_dashes OFF)
foreach(i RANGE ${CMAKE_ARGC})
  if(after_dashes AND DEFINED CMAKE_ARGV${i})
    list(APPEND args "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(after_dashes ON)
  endif()
endforeach()
execute_process(COMMAND "${EXE}" ${args}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT err STREQUAL "")
  message("--- stderr ---\n${err}")
endif()
if(status STREQUAL "0")
  message(STATUS "mutant caught by the model")
elseif("${out}${err}" MATCHES "(AddressSanitizer|ThreadSanitizer|LeakSanitizer|runtime error:)")
  message(STATUS "mutant caught by the sanitizer (${CMAKE_MATCH_1}) before Relacy reported it: "
                 "counted as caught in this ${SANITIZER} build")
else()
  message(FATAL_ERROR "mutant NOT caught: ${EXE} exited '${status}' with no sanitizer report")
endif()
