# ctest static.mutants.mechanism: configures the self-test project (CMakeLists.txt
# here) in WORK_DIR with the real checks/mutants/mutants.cmake and runs its ctests.
# Passes only if the configure step succeeds although STALE's patch does not apply,
# GOOD's ctest passes (its scratch copy holds the bug), STALE's ctest fails saying its
# patch no longer applies, the manifest records both, and the product file itself is
# untouched.
#   cmake -DSOURCE_DIR=<this dir> -DWORK_DIR=<scratch> -DGENERATOR=<gen> -P run.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(READ ${SOURCE_DIR}/impl/src/answer.cpp before)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR}
                        -DTURNSTILE_MUTANTS_CMAKE=${SOURCE_DIR}/../mutants.cmake
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the self-test failed (a stale patch must not fail the build):\n${out}")
endif()
if(NOT out MATCHES "mutant STALE: [^\n]*stale.patch no longer applies")
  message(FATAL_ERROR "the configure step did not warn about STALE's patch:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${WORK_DIR} --output-on-failure
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT out MATCHES "selftest\\.mutant\\.good [.]+ +Passed")
  message(FATAL_ERROR "GOOD's ctest did not pass:\n${out}")
endif()
if(NOT out MATCHES "selftest\\.mutant\\.stale [.]+\\*\\*\\*Failed")
  message(FATAL_ERROR "STALE's ctest did not fail:\n${out}")
endif()
if(NOT out MATCHES "mutant STALE: [^\n]*stale.patch no longer applies to impl/src/answer.cpp")
  message(FATAL_ERROR "STALE's ctest did not say why it failed:\n${out}")
endif()
file(READ ${WORK_DIR}/mutants/manifest.json manifest)
string(JSON n LENGTH "${manifest}" mutants)
string(JSON good_error GET "${manifest}" mutants 0 error)
string(JSON stale_error GET "${manifest}" mutants 1 error)
if(NOT n EQUAL 2 OR NOT good_error STREQUAL "" OR NOT stale_error MATCHES "no longer applies")
  message(FATAL_ERROR "the manifest does not record the two mutants as expected:\n${manifest}")
endif()
file(READ ${SOURCE_DIR}/impl/src/answer.cpp after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "the product file was modified: a patch must apply to a scratch copy only")
endif()
message(STATUS "mutant mechanism self-test: GOOD planted, STALE reported by its own ctest")
