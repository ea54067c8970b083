# TurnstileCoawaitProbe.cmake: turnstile_check_coawait_temporaries(), the
# configure-time check for the GCC 12 `co_await` temporary miscompile.
#
# Used twice: by turnstile's own CMakeLists.txt, and by the installed
# turnstileConfig.cmake, so a consumer's compiler is checked at find_package time.
#
# It compiles and runs coawait_temporary_probe.cpp (standard library only) with the
# current C++ compiler and flags. When the probe shows a temporary destroyed twice,
# it prints a CMake warning naming the problem, the safe form and the switch that
# silences it. The result is cached per compiler (TURNSTILE_COAWAIT_PROBE_<hash>),
# so the probe runs once per build tree and compiler.
#
# Silence: -DTURNSTILE_NO_GCC12_WARNING=ON (CMake) silences this warning; the same
# name as a preprocessor macro silences the umbrella header's #pragma message. The
# installed package adds that macro to turnstile::turnstile when the CMake option is
# ON, so one switch silences both.

function(turnstile_check_coawait_temporaries)
  if(TURNSTILE_NO_GCC12_WARNING)
    return()
  endif()
  get_property(_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST _langs)
    return()  # no C++ compiler to probe (a C-only project finding the package)
  endif()
  if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
    message(STATUS "turnstile: co_await temporary probe skipped (cross-compiling)")
    return()
  endif()

  string(SHA1 _key "${CMAKE_CXX_COMPILER};${CMAKE_CXX_COMPILER_VERSION};${CMAKE_CXX_FLAGS}")
  string(SUBSTRING "${_key}" 0 12 _key)
  set(_var "TURNSTILE_COAWAIT_PROBE_${_key}")
  if(NOT DEFINED ${_var})
    set(_dir "${CMAKE_BINARY_DIR}/CMakeFiles/turnstile_coawait_probe")
    try_run(_run_rc _compiled "${_dir}"
      "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/coawait_temporary_probe.cpp"
      CXX_STANDARD 20
      CXX_STANDARD_REQUIRED ON
      COMPILE_OUTPUT_VARIABLE _compile_out)
    if(NOT _compiled)
      set(_result "no-compile")  # no C++20 coroutines: nothing to say here
    elseif(_run_rc EQUAL 0)
      set(_result "ok")
    else()
      set(_result "miscompiles")
    endif()
    set(${_var} "${_result}" CACHE INTERNAL
      "turnstile co_await temporary probe for ${CMAKE_CXX_COMPILER} ${CMAKE_CXX_COMPILER_VERSION}")
  endif()

  if(${_var} STREQUAL "miscompiles")
    message(WARNING
      "turnstile: this C++ compiler (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}) "
      "miscompiles co_await temporaries: a temporary with a non-trivial destructor built "
      "inside a co_await operand is destroyed twice (GCC 12), e.g.\n"
      "  co_await lane.run([s] { return s.size(); });           // std::string s: double free\n"
      "  co_await ch.send(Item{id, FiberContext::capture()});  // snapshot released twice\n"
      "Safe form: bind such a value to a named local first, then await:\n"
      "  auto work = [s] { return s.size(); };\n"
      "  auto n = co_await lane.run(std::move(work));\n"
      "Or build with a compiler this probe accepts (clang++ is not affected). Silence it with "
      "-DTURNSTILE_NO_GCC12_WARNING=ON (it also defines TURNSTILE_NO_GCC12_WARNING for "
      "turnstile::turnstile's users, which silences the umbrella header's note).")
  elseif(${_var} STREQUAL "ok")
    message(STATUS "turnstile: co_await temporary probe: ok (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION})")
  endif()
endfunction()
