# expect_falsified.cmake: passes only if a mutant binary's property is falsified.
#
#   cmake -DEXE=<binary> -DFILTER=<Suite.Property> [-DRC_PARAMS=...] [-DMIN_SHRINKS=1]
#         -P expect_falsified.cmake
#
# "Caught" means: gtest ran exactly the filtered property and exited with status
# 1 (a reported test failure, not a signal or abort), RapidCheck printed
# "Falsifiable after N tests [and M shrinks]" with M >= MIN_SHRINKS, and no
# sanitizer report appears. The full output, with the shrunk counterexample, is
# echoed so it lands in the ctest log.
#
# -DSANITIZER=<tsan|asan-ubsan> (a sanitizer build): a planted memory bug may be
# stopped by the sanitizer before RapidCheck can report it (a stale frame read
# through a freed pointer). Then a sanitizer report during the filtered property
# also counts as caught, and says so; the property's own verdict on that mutant
# is what the unsanitized presets check.
if(NOT DEFINED MIN_SHRINKS)
  set(MIN_SHRINKS 0)
endif()
if(DEFINED RC_PARAMS)
  set(ENV{RC_PARAMS} "${RC_PARAMS}")
endif()
# Runs the filtered property with leak detection off (a falsified case often never
# reached quiescence and leaks its world on purpose); sets status, out, err, and ran
# (whether gtest started the property).
include(${CMAKE_CURRENT_LIST_DIR}/../checks/mutants/run_filtered_test.cmake)

set(problems "")
if(NOT status STREQUAL "1")
  list(APPEND problems "exit status is '${status}', expected 1 (a falsified property)")
endif()
if(NOT ran)
  list(APPEND problems "the property ${FILTER} did not run")
endif()
# RapidCheck leaves out " and M shrinks" when it did not shrink at all.
if(out MATCHES "Falsifiable after ([0-9]+) tests?( and ([0-9]+) shrinks?)?")
  set(shrinks 0)
  if(NOT CMAKE_MATCH_3 STREQUAL "")
    set(shrinks ${CMAKE_MATCH_3})
  endif()
  if(shrinks LESS MIN_SHRINKS)
    list(APPEND problems "RapidCheck shrank ${shrinks} times, expected at least ${MIN_SHRINKS}")
  endif()
else()
  list(APPEND problems "RapidCheck did not report a falsified property")
endif()
if("${out}${err}" MATCHES "Sanitizer|runtime error:")
  list(APPEND problems "a sanitizer reported an error")
endif()

if(problems AND ran AND DEFINED SANITIZER AND NOT SANITIZER STREQUAL "none"
   AND "${out}${err}" MATCHES "(AddressSanitizer|ThreadSanitizer|LeakSanitizer|runtime error:)")
  message(STATUS "mutant caught by the sanitizer (${CMAKE_MATCH_1}) while ${FILTER} ran, before "
                 "RapidCheck could report it: counted as caught in this ${SANITIZER} build")
  return()
endif()
if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "mutant NOT caught by ${FILTER}:\n  ${text}")
endif()
message(STATUS "mutant caught: ${FILTER} falsified after ${shrinks} shrinks")
