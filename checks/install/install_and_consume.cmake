# install_and_consume.cmake (cmake -P): the body of test install.find_package.
#   1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix   (fresh prefix)
#   2. configure WORK_DIR/consumer-build from CONSUMER_SOURCE_DIR with
#      CMAKE_PREFIX_PATH=<prefix>, Ninja, and the caller's compiler and flags
#   3. build it, 4. run it (it exits 0 iff sync_wait returned 42).
#   5. with EXPECT_ORACLE: install component `oracle` alone into a second prefix;
#      it must hold bin/turnstile-oracle and nothing else.
#   6. with LINT_SAMPLE: the installed bin/turnstile-lint (component `lint`) lints
#      the consumer through its compile_commands.json (clean: exit 0), and a copy
#      of LINT_SAMPLE (with the headers beside it, which it may include) against
#      the installed headers (flagged: exit 1, [LINT-3.1]).
#      Skipped, with a message, when clang-query is not installed.
# Any failing step stops the script with a message naming that step.
cmake_minimum_required(VERSION 3.25)

include("${CMAKE_CURRENT_LIST_DIR}/script_support.cmake")
require_vars(install_and_consume BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR CXX_COMPILER)

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${prefix}" "${consumer_build}")

# run_step(NAME cmd...): run a command, echo its output, fail with NAME if it fails.
macro(run_step name)
  script_step(install_and_consume ${name} step_out ${ARGN})
  message("${step_out}")
endmacro()

run_step(install ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

set(configure_args
  -S "${CONSUMER_SOURCE_DIR}" -B "${consumer_build}" -G Ninja
  "-DCMAKE_PREFIX_PATH=${prefix}"
  "-DTURNSTILE_EXPECTED_PREFIX=${prefix}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}"
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(BUILD_TYPE)
  list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
endif()
run_step(configure ${CMAKE_COMMAND} ${configure_args})
run_step(build ${CMAKE_COMMAND} --build "${consumer_build}")
run_step(run "${consumer_build}/turnstile_consumer")
# README's "Model-check your own program", against turnstile::testing as installed.
run_step(run-explore "${consumer_build}/turnstile_consumer_explore")

# The oracle is its own install component: installing it alone gives the binary
# and nothing of the library.
if(EXPECT_ORACLE)
  set(oracle_prefix "${WORK_DIR}/oracle-prefix")
  file(REMOVE_RECURSE "${oracle_prefix}")
  run_step(install-oracle ${CMAKE_COMMAND} --install "${BUILD_DIR}" --component oracle
    --prefix "${oracle_prefix}")
  file(GLOB_RECURSE oracle_files RELATIVE "${oracle_prefix}" "${oracle_prefix}/*")
  if(NOT oracle_files STREQUAL "bin/turnstile-oracle")
    message(FATAL_ERROR "install_and_consume: component 'oracle' installed '${oracle_files}', "
                        "expected bin/turnstile-oracle alone")
  endif()
endif()
# The installed lint, run from the prefix (its modules in libexec/turnstile/lint).
if(LINT_SAMPLE)
  find_program(clang_query NAMES clang-query-14 clang-query)
  if(NOT clang_query)
    message(STATUS "install_and_consume: clang-query not found, the installed lint not run")
  else()
    set(lint "${prefix}/bin/turnstile-lint")
    if(NOT EXISTS "${lint}")
      message(FATAL_ERROR "install_and_consume: ${lint} was not installed")
    endif()
    run_step(lint-consumer "${lint}" -p "${consumer_build}")
    get_filename_component(sample_name "${LINT_SAMPLE}" NAME)
    get_filename_component(sample_dir "${LINT_SAMPLE}" DIRECTORY)
    file(GLOB sample_headers "${sample_dir}/*.hpp")
    file(COPY "${LINT_SAMPLE}" ${sample_headers} DESTINATION "${WORK_DIR}")
    execute_process(COMMAND "${lint}" "${WORK_DIR}/${sample_name}" --
                            -std=c++20 "-I${prefix}/include"
                    RESULT_VARIABLE lint_rc OUTPUT_VARIABLE lint_out ERROR_VARIABLE lint_err)
    if(NOT lint_rc EQUAL 1 OR NOT lint_out MATCHES "${sample_name}:[0-9]+:[0-9]+: \\[LINT-3\\.1\\]")
      message(FATAL_ERROR "install_and_consume: the installed turnstile-lint on ${sample_name}: "
                          "exit ${lint_rc}, expected 1 with a [LINT-3.1] finding\n${lint_out}${lint_err}")
    endif()
    message(STATUS "install_and_consume: the installed turnstile-lint flags ${sample_name}")
  endif()
endif()
message(STATUS "install_and_consume: the installed package works")
