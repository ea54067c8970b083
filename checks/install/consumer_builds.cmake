# consumer_builds.cmake (cmake -P): the bodies of the expensive consumer tests.
# Each builds turnstile again from TURNSTILE_SOURCE_DIR under WORK_DIR, so they run
# in ci/check (checks/install/run-consumer-tests), or in ctest with
# TURNSTILE_INSTALL_TESTS=ON.
#
#   CASE=tsan_consumer     configure turnstile with TURNSTILE_SANITIZE=thread as a
#                          package build (tests off), build and install component
#                          `library`; build tsan_consumer/ against it with no
#                          sanitizer flags of its own (the package must propagate
#                          -fsanitize=thread); run its concurrent load: it must
#                          pass and ThreadSanitizer must report nothing (after a
#                          planted race, `tsan_load --plant-race`, was reported).
#   CASE=add_subdirectory  dependency_consumer/ with add_subdirectory(turnstile)
#   CASE=fetchcontent      dependency_consumer/ with FetchContent from the checkout
#                          (both: only the library is built, not its tests; run it)
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/script_support.cmake")
require_vars(consumer_builds TURNSTILE_SOURCE_DIR WORK_DIR CXX_COMPILER CASE)
set(here "${CMAKE_CURRENT_LIST_DIR}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(generator "")
if(MAKE_PROGRAM)
  set(generator -G Ninja "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

# step(NAME OUTVAR cmd...): run, keep the output in OUTVAR, fail naming the step.
macro(step name outvar)
  script_step(consumer_builds ${name} ${outvar} ${ARGN})
endmacro()

if(CASE STREQUAL "tsan_consumer")
  set(lib_build "${WORK_DIR}/turnstile-build")
  set(prefix "${WORK_DIR}/prefix")
  step(configure-library out ${CMAKE_COMMAND} -S "${TURNSTILE_SOURCE_DIR}" -B "${lib_build}"
    ${generator} "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DTURNSTILE_SANITIZE=thread -DBUILD_TESTING=OFF -DTURNSTILE_BUILD_CONFORMANCE=OFF
    -DTURNSTILE_BUILD_EXAMPLES=OFF -DTURNSTILE_NO_GCC12_WARNING=ON)
  step(build-library out ${CMAKE_COMMAND} --build "${lib_build}" --target turnstile)
  step(install-library out ${CMAKE_COMMAND} --install "${lib_build}" --component library
    --prefix "${prefix}")
  step(configure-consumer configure_out ${CMAKE_COMMAND} -S "${here}/tsan_consumer"
    -B "${WORK_DIR}/consumer-build" ${generator} "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_PREFIX_PATH=${prefix}"
    -DTURNSTILE_NO_GCC12_WARNING=ON
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
  message("${configure_out}")
  step(build-consumer out ${CMAKE_COMMAND} --build "${WORK_DIR}/consumer-build" -v)
  if(NOT out MATCHES "-fsanitize=thread")
    message("${out}")
    message(FATAL_ERROR "consumer_builds: the consumer was not compiled with -fsanitize=thread: "
                        "the installed package did not propagate it")
  endif()
  # GCC 12's TSan runtime cannot map memory when the kernel randomises more than
  # 28 bits of mmap addresses; run without address randomisation then (as ci/check).
  set(wrap "")
  if(EXISTS /proc/sys/vm/mmap_rnd_bits)
    file(READ /proc/sys/vm/mmap_rnd_bits bits)
    string(STRIP "${bits}" bits)
    if(bits GREATER 28)
      execute_process(COMMAND uname -m OUTPUT_VARIABLE arch OUTPUT_STRIP_TRAILING_WHITESPACE)
      execute_process(COMMAND setarch ${arch} -R true RESULT_VARIABLE rc)
      if(rc EQUAL 0)
        set(wrap setarch ${arch} -R)
      endif()
    endif()
  endif()
  set(ENV{TSAN_OPTIONS} "halt_on_error=0:exitcode=66:second_deadlock_stack=1")
  # tsan_run(ARG OUTRC OUTREPORTS): run the consumer, count ThreadSanitizer reports.
  macro(tsan_run arg rcvar reportsvar)
    execute_process(COMMAND ${wrap} "${WORK_DIR}/consumer-build/tsan_load" ${arg}
      RESULT_VARIABLE ${rcvar} OUTPUT_VARIABLE out ERROR_VARIABLE out)
    message("${out}")
    string(REGEX MATCHALL "WARNING: ThreadSanitizer: [^\n]*" ${reportsvar} "${out}")
  endmacro()
  # The bad input first: a planted race must be reported, or this test cannot fail.
  tsan_run(--plant-race rc reports)
  list(LENGTH reports nreports)
  if(nreports EQUAL 0)
    message(FATAL_ERROR "consumer_builds: the planted race (tsan_load --plant-race) was not "
                        "reported (exit ${rc}): this check could not see a report")
  endif()
  tsan_run("" rc reports)
  list(LENGTH reports nreports)
  if(nreports GREATER 0 OR NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer_builds: the TSan consumer exited ${rc} with ${nreports} "
                        "ThreadSanitizer report(s): ${reports}")
  endif()
  message(STATUS "consumer_builds: TSan consumer: load passed, zero ThreadSanitizer reports")

elseif(CASE STREQUAL "add_subdirectory" OR CASE STREQUAL "fetchcontent")
  step(configure configure_out ${CMAKE_COMMAND} -S "${here}/dependency_consumer"
    -B "${WORK_DIR}/build" ${generator} "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DHOW=${CASE}"
    "-DTURNSTILE_SOURCE_DIR=${TURNSTILE_SOURCE_DIR}" -DTURNSTILE_NO_GCC12_WARNING=ON)
  message("${configure_out}")
  step(list-tests tests_out ${CMAKE_CTEST_COMMAND} -N --test-dir "${WORK_DIR}/build")
  if(NOT tests_out MATCHES "Total Tests: 0")
    message(FATAL_ERROR "consumer_builds: turnstile as a ${CASE} subproject registered tests:\n${tests_out}")
  endif()
  step(build build_out ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
  # Only the library and the consumer: no test, model, oracle or example target.
  string(REGEX MATCHALL "Linking CXX [a-z ]+ [^\n]*" linked "${build_out}")
  message(STATUS "consumer_builds: linked: ${linked}")
  foreach(l IN LISTS linked)
    if(NOT l MATCHES "(libturnstile\\.a|dependency_consumer)$")
      message(FATAL_ERROR "consumer_builds: a ${CASE} consumer built more than the library: ${l}")
    endif()
  endforeach()
  step(run out "${WORK_DIR}/build/dependency_consumer")
  message(STATUS "consumer_builds: ${CASE}: only the library was built; the consumer runs")
else()
  message(FATAL_ERROR "consumer_builds: unknown CASE '${CASE}'")
endif()
