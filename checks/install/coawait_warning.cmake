# coawait_warning.cmake (cmake -P): the bodies of tests install.coawait_probe.*.
# Installs the `library` component of BUILD_DIR into WORK_DIR/prefix, configures
# probe_consumer/ against it with COMPILER, and compiles the umbrella header with
# COMPILER and what the exported target passes to its users. Then checks:
#   EXPECT=warn   the configure printed the GCC 12 co_await warning (naming the
#                 problem, the named-local safe form and TURNSTILE_NO_GCC12_WARNING)
#                 and the header printed its #pragma message note
#   EXPECT=quiet  neither appeared
# SILENCE=ON configures with -DTURNSTILE_NO_GCC12_WARNING=ON (the one switch must
# silence both). EXPECT=auto: warn iff COMPILER is GCC 12, quiet otherwise.
# A COMPILER that does not exist skips the test (exit code 77 via a marker line).
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/script_support.cmake")
require_vars(coawait_warning BUILD_DIR WORK_DIR SOURCE_DIR COMPILER EXPECT)
if(NOT EXISTS "${COMPILER}")
  message("TURNSTILE_TEST_SKIPPED: compiler ${COMPILER} not found")
  return()
endif()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/consumer")
file(REMOVE_RECURSE "${prefix}" "${build}")

execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --component library --prefix "${prefix}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "coawait_warning: install of component 'library' failed:\n${out}")
endif()

if(EXPECT STREQUAL "auto")
  execute_process(COMMAND "${COMPILER}" -dumpversion OUTPUT_VARIABLE ver OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND "${COMPILER}" --version OUTPUT_VARIABLE banner)
  if(ver MATCHES "^12(\\.|$)" AND NOT banner MATCHES "clang")
    set(EXPECT warn)
  else()
    set(EXPECT quiet)
  endif()
  message(STATUS "coawait_warning: ${COMPILER} (${ver}): expecting '${EXPECT}'")
endif()

set(args -S "${SOURCE_DIR}/probe_consumer" -B "${build}"
  "-DCMAKE_CXX_COMPILER=${COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}"
  "-DWRITE_INTERFACE=${build}/interface.txt"
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND args -G Ninja "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(SILENCE)
  list(APPEND args -DTURNSTILE_NO_GCC12_WARNING=ON)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE configure_out ERROR_VARIABLE configure_out)
message("${configure_out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "coawait_warning: configuring the consumer failed")
endif()

# The umbrella header, compiled as the exported target tells its users to.
file(STRINGS "${build}/interface.txt" lines)
set(flags "")
foreach(l IN LISTS lines)
  if(l MATCHES "^defs=(.*)$")
    foreach(d IN LISTS CMAKE_MATCH_1)
      list(APPEND flags "-D${d}")
    endforeach()
  endif()
endforeach()
file(WRITE "${build}/umbrella.cpp" "#include <turnstile/turnstile.hpp>\nint main() {}\n")
execute_process(COMMAND "${COMPILER}" -std=c++20 -fsyntax-only ${flags} -I "${prefix}/include"
    "${build}/umbrella.cpp"
  RESULT_VARIABLE rc OUTPUT_VARIABLE header_out ERROR_VARIABLE header_out)
message("${header_out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "coawait_warning: compiling the umbrella header failed")
endif()

set(warned OFF)
if(configure_out MATCHES "miscompiles co_await temporaries")
  set(warned ON)
  foreach(part "named local" "TURNSTILE_NO_GCC12_WARNING=ON" "destroyed twice")
    string(FIND "${configure_out}" "${part}" at)
    if(at LESS 0)
      message(FATAL_ERROR "coawait_warning: the warning does not say '${part}'")
    endif()
  endforeach()
endif()
set(noted OFF)
if(header_out MATCHES "turnstile: GCC 12 destroys a temporary")
  set(noted ON)
endif()

if(EXPECT STREQUAL "warn")
  if(NOT warned)
    message(FATAL_ERROR "coawait_warning: find_package(turnstile) with ${COMPILER} printed no co_await warning")
  endif()
  if(NOT noted)
    message(FATAL_ERROR "coawait_warning: the umbrella header printed no GCC 12 note with ${COMPILER}")
  endif()
elseif(EXPECT STREQUAL "quiet")
  if(warned)
    message(FATAL_ERROR "coawait_warning: find_package(turnstile) with ${COMPILER} warned (expected quiet)")
  endif()
  if(noted)
    message(FATAL_ERROR "coawait_warning: the umbrella header printed the GCC 12 note with ${COMPILER} (expected quiet)")
  endif()
else()
  message(FATAL_ERROR "coawait_warning: EXPECT must be warn, quiet or auto (got '${EXPECT}')")
endif()
message(STATUS "coawait_warning: ${COMPILER}: ${EXPECT} as expected")
