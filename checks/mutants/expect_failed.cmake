# expect_failed.cmake: passes only if a mutant binary's gtest test ran and failed
# (the unit-test mutants: impl/tests/windows, impl/tests/testing; registered by
# turnstile_unit_mutant_test in mutants.cmake).
#
#   cmake -DEXE=<binary> -DFILTER=<Suite.Test> -P expect_failed.cmake
#
# "Caught" means: gtest started exactly the filtered test ("[ RUN ] <FILTER>") and
# the process did not succeed: the test reported a failure (exit status 1), or the
# planted bug stopped the process inside the window (a signal, an abort, a
# sanitizer report). A test that did not run, or passed, is "not caught". The
# output is echoed so it lands in the ctest log.
# Runs the filtered test with leak detection off (a caught window bug may leave a
# fiber parked for good); sets status, out, err, ran.
include(${CMAKE_CURRENT_LIST_DIR}/run_filtered_test.cmake)
if(NOT ran)
  message(FATAL_ERROR "NOT caught: the test ${FILTER} did not run (exit status '${status}')")
endif()
if(status STREQUAL "0")
  message(FATAL_ERROR "NOT caught: ${FILTER} passed on the mutant")
endif()
message("caught: ${FILTER} failed on the mutant (exit status '${status}')")
