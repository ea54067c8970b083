# node_version.cmake: included by ports/node and peers/node, whose tests need a
# Node.js (TURNSTILE_NODE_EXECUTABLE, found by ports/node) of some major version.
#
#   turnstile_node_at_least(WHAT MIN OK_VAR VERSION_VAR [WHY])
#     OK_VAR: TRUE when TURNSTILE_NODE_EXECUTABLE is set and `--version` says a
#     major version of MIN or more; else FALSE, and a STATUS message says why
#     WHAT is skipped (WHY, when given, is added to it). VERSION_VAR: what
#     `--version` printed (v20.11.0).
function(turnstile_node_at_least what min ok_var version_var)
  set(${ok_var} FALSE PARENT_SCOPE)
  if(NOT TURNSTILE_NODE_EXECUTABLE)
    message(STATUS "${what}: skipped: node not found (install Node.js >= ${min})")
    return()
  endif()
  execute_process(COMMAND ${TURNSTILE_NODE_EXECUTABLE} --version
                  OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc)
  set(${version_var} "${version}" PARENT_SCOPE)
  if(NOT rc EQUAL 0 OR NOT version MATCHES "^v([0-9]+)\\." OR CMAKE_MATCH_1 LESS min)
    message(STATUS "${what}: skipped: ${TURNSTILE_NODE_EXECUTABLE} is '${version}', "
                   "Node.js >= ${min} is needed${ARGN}")
    return()
  endif()
  set(${ok_var} TRUE PARENT_SCOPE)
endfunction()
