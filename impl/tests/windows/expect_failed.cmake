# expect_failed.cmake: passes only if a mutant binary's window test ran and failed.
#
#   cmake -DEXE=<binary> -DFILTER=<Suite.Test> -P expect_failed.cmake
#
# "Caught" means: gtest started exactly the filtered test ("[ RUN ] <FILTER>") and
# the process did not succeed: the test reported a failure (exit status 1), or the
# planted bug stopped the process inside the window (a signal, an abort, a
# sanitizer report). A test that did not run, or passed, is "not caught". The
# output is echoed so it lands in the ctest log.
foreach(var EXE FILTER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_failed.cmake: -D${var}=... is required")
  endif()
endforeach()
# A caught window bug may leave a fiber parked for good; its frame is leaked on
# purpose (as with a ManualScheduler's queued items), not a second finding.
if(DEFINED ENV{ASAN_OPTIONS} AND NOT "$ENV{ASAN_OPTIONS}" STREQUAL "")
  set(ENV{ASAN_OPTIONS} "$ENV{ASAN_OPTIONS}:detect_leaks=0")
else()
  set(ENV{ASAN_OPTIONS} "detect_leaks=0")
endif()
execute_process(
  COMMAND "${EXE}" "--gtest_filter=${FILTER}" --gtest_color=no
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
message("${out}")
if(NOT err STREQUAL "")
  message("--- stderr ---\n${err}")
endif()
string(REPLACE "." "\\." filter_re "${FILTER}")
if(NOT out MATCHES "\\[ +RUN +\\] ${filter_re}\n")
  message(FATAL_ERROR "NOT caught: the test ${FILTER} did not run (exit status '${status}')")
endif()
if(status STREQUAL "0")
  message(FATAL_ERROR "NOT caught: ${FILTER} passed on the mutant")
endif()
message("caught: ${FILTER} failed on the mutant (exit status '${status}')")
