# run_filtered_test.cmake: the part that expect_falsified.cmake (property_tests/) and
# expect_failed.cmake share. Included in script mode after
# EXE and FILTER are set (-DEXE=<binary> -DFILTER=<Suite.Test>): runs exactly that
# gtest test of a mutant binary and leaves `status`, `out` and `err` set, with the
# output echoed so it lands in the ctest log, and `ran`: ON when gtest started
# exactly that test ("[ RUN ] <FILTER>").
#
# Under AddressSanitizer leak detection is off for the mutant run: a caught bug often
# leaves a fiber parked or a world undestroyed (a hang, turns still queued), and its
# memory is leaked on purpose, not a second finding. Any other sanitizer report stays
# visible to the including script.
foreach(var EXE FILTER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE}: -D${var}=... is required")
  endif()
endforeach()
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
if(out MATCHES "\\[ +RUN +\\] ${filter_re}\n")
  set(ran ON)
else()
  set(ran OFF)
endif()
