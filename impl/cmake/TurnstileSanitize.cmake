# TurnstileSanitize.cmake: the sanitizer build of turnstile (included by the top
# CMakeLists.txt before any target exists).
#
# Two cache variables, one meaning:
#   TURNSTILE_SANITIZE   what a package builder sets: a list of thread | address |
#                        undefined (comma or semicolon separated; thread excludes
#                        the others). Empty: use TURNSTILE_SANITIZER.
#   TURNSTILE_SANITIZER  the presets' older spelling: none | tsan | asan-ubsan.
# Each is derived from the other (thread <-> tsan, address;undefined <->
# asan-ubsan); setting both to different things is an error. After this file,
# TURNSTILE_SANITIZER is none/tsan/asan-ubsan (asan-ubsan standing for "address
# and/or undefined": the model/ and test directories key on that family) and
# TURNSTILE_SANITIZE_EFFECTIVE is the comma-joined list ("" when none).
#
# The flags apply to every target of this project (add_compile_options), and
# turnstile_sanitize_interface(<target>) puts the -fsanitize flags on a target's
# INTERFACE for its users outside this project (the installed package, and a
# parent project that uses add_subdirectory/FetchContent): a sanitized consumer
# must be built the same way as the library it links.

set(TURNSTILE_SANITIZE "" CACHE STRING
  "Build (and install) turnstile with sanitizers: thread | address | undefined | address,undefined")
set(TURNSTILE_SANITIZER "none" CACHE STRING "Sanitizer build: none | tsan | asan-ubsan")
set_property(CACHE TURNSTILE_SANITIZER PROPERTY STRINGS none tsan asan-ubsan)

string(REPLACE "," ";" _san "${TURNSTILE_SANITIZE}")
list(REMOVE_DUPLICATES _san)
list(SORT _san)
foreach(s IN LISTS _san)
  if(NOT s MATCHES "^(thread|address|undefined)$")
    message(FATAL_ERROR "TURNSTILE_SANITIZE: '${s}' is not one of thread, address, undefined "
                        "(got '${TURNSTILE_SANITIZE}')")
  endif()
endforeach()
if("thread" IN_LIST _san AND NOT _san STREQUAL "thread")
  message(FATAL_ERROR "TURNSTILE_SANITIZE: thread cannot be combined with address or undefined "
                      "(got '${TURNSTILE_SANITIZE}')")
endif()

# The family the rest of the tree keys on.
if(_san STREQUAL "thread")
  set(_family tsan)
elseif(_san)
  set(_family asan-ubsan)
else()
  set(_family none)
endif()

if(NOT TURNSTILE_SANITIZER MATCHES "^(none|tsan|asan-ubsan)$")
  message(FATAL_ERROR "TURNSTILE_SANITIZER must be none, tsan or asan-ubsan (got '${TURNSTILE_SANITIZER}')")
endif()
if(_san AND NOT TURNSTILE_SANITIZER STREQUAL "none" AND NOT TURNSTILE_SANITIZER STREQUAL _family)
  message(FATAL_ERROR "TURNSTILE_SANITIZE=${TURNSTILE_SANITIZE} contradicts "
                      "TURNSTILE_SANITIZER=${TURNSTILE_SANITIZER}; set only one of them")
endif()
if(NOT _san)
  if(TURNSTILE_SANITIZER STREQUAL "tsan")
    set(_san thread)
  elseif(TURNSTILE_SANITIZER STREQUAL "asan-ubsan")
    set(_san address undefined)
  endif()
else()
  set(TURNSTILE_SANITIZER "${_family}")  # normal variable: shadows the cache below here
endif()
list(JOIN _san "," TURNSTILE_SANITIZE_EFFECTIVE)

if(_san STREQUAL "thread")
  add_compile_options(-fsanitize=thread -g -O1)
  add_link_options(-fsanitize=thread)
elseif(_san)
  add_compile_options(-fsanitize=${TURNSTILE_SANITIZE_EFFECTIVE} -g)
  add_link_options(-fsanitize=${TURNSTILE_SANITIZE_EFFECTIVE})
  if("address" IN_LIST _san)
    add_compile_options(-fno-omit-frame-pointer)
  endif()
  if("undefined" IN_LIST _san)
    add_compile_options(-fno-sanitize-recover=undefined)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      # LLVM bug 49689: clang's -fsanitize=function (part of undefined) cannot
      # compile coroutine code (clang 14: "error: Cannot represent a difference
      # across sections" in every file with a coroutine).
      add_compile_options(-fno-sanitize=function)
    endif()
  endif()
endif()

# turnstile_sanitize_interface(<target>): the -fsanitize flags on <target>'s
# INTERFACE, for users outside this project (always for the installed package;
# in the build tree only when turnstile is not the top-level project, since this
# project's own targets already get them from the directory).
function(turnstile_sanitize_interface target)
  if(NOT TURNSTILE_SANITIZE_EFFECTIVE)
    return()
  endif()
  set(_flag -fsanitize=${TURNSTILE_SANITIZE_EFFECTIVE})
  string(REPLACE "," "$<COMMA>" _quoted "${_flag}")
  set(_where $<INSTALL_INTERFACE:${_quoted}>)
  if(NOT PROJECT_IS_TOP_LEVEL)
    set(_where ${_flag})
  endif()
  target_compile_options(${target} INTERFACE ${_where})
  target_link_options(${target} INTERFACE ${_where})
  if(TURNSTILE_SANITIZE_EFFECTIVE MATCHES "undefined")
    # Evaluated with the consumer's compiler: clang needs it for coroutines.
    set(_nofn $<$<CXX_COMPILER_ID:Clang>:-fno-sanitize=function>)
    if(PROJECT_IS_TOP_LEVEL)
      set(_nofn $<INSTALL_INTERFACE:${_nofn}>)
    endif()
    target_compile_options(${target} INTERFACE ${_nofn})
  endif()
endfunction()
