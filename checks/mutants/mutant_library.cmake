# checks/mutants/mutant_library.cmake: the copies of the library a LIBRARY mutant's
# property binaries link (included by mutants.cmake).
#
#   turnstile_mutant_library_of(<NAME> <out-var>)
#       turnstile::turnstile, or for a LIBRARY mutant the copy turnstile_mutant_<name>:
#       its patched sources replace the originals, the sources that include a patched
#       header (directly or not) are compiled again with the mutant's headers first,
#       and every other source's object is the product library's own (the
#       object turnstile compiled, turnstile_object_of below).

# _turnstile_includes(<file> <out>): the project headers <file> names in an
# #include ("turnstile/..." from impl/include, a sibling of <file>, or a private
# header of impl/src, which some tests include).
function(_turnstile_includes file out)
  file(STRINGS ${file} lines REGEX "^#include \"")
  get_filename_component(dir ${file} DIRECTORY)
  set(found)
  foreach(l IN LISTS lines)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" h "${l}")
    foreach(c ${PROJECT_SOURCE_DIR}/impl/include/${h} ${dir}/${h} ${PROJECT_SOURCE_DIR}/impl/src/${h})
      if(EXISTS ${c})
        list(APPEND found ${c})
        break()
      endif()
    endforeach()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# _turnstile_sees(<file> <out> <header>...): TRUE when <file> includes one of the
# <header>s (absolute paths), directly or through other project headers.
function(_turnstile_sees file out)
  set(todo ${file})
  set(seen)
  while(todo)
    list(POP_FRONT todo f)
    if(f IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${f})
    _turnstile_includes(${f} inc)
    foreach(i IN LISTS inc)
      if(i IN_LIST ARGN)
        set(${out} TRUE PARENT_SCOPE)
        return()
      endif()
    endforeach()
    list(APPEND todo ${inc})
  endwhile()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

# The library's sources. A copy links the product library's own object for each
# source it neither patches nor recompiles: no source is compiled a second time
# for the copies. (Until stop 51 each was, once more, at the calling suite's
# test flags, -Og -g0 in the default preset: with the testing module's, about
# 42 s of CPU in every clean build. A mutant's outcome does not depend on the
# optimisation level of the objects it shares with the product, mutants.cmake.)
function(_turnstile_library_sources out)
  get_target_property(sources turnstile SOURCES)
  get_target_property(source_dir turnstile SOURCE_DIR)
  list(TRANSFORM sources PREPEND "${source_dir}/" REGEX "^[^/]")
  list(FILTER sources INCLUDE REGEX "\\.cpp$")
  # Which sources see a patched header decides what a copy recompiles, so an edit
  # of the library's files re-runs the configure step.
  file(GLOB_RECURSE headers ${PROJECT_SOURCE_DIR}/impl/include/*.hpp ${PROJECT_SOURCE_DIR}/impl/src/*.hpp)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${sources} ${headers})
  set(${out} ${sources} PARENT_SCOPE)
endfunction()

# turnstile_object_of(<target> <source> <out>): the object STATIC library
# <target> compiled for <source>, a generator expression ($<TARGET_OBJECTS> of a
# STATIC library: CMake 3.15), picked by file name: the name must be plain
# (letters, digits, _ and .cpp) and its stem unique among the names asked of
# <target> (both checked here), so the object is the one ending in
# /<stem>.cpp.o (.obj elsewhere).
function(turnstile_object_of target src out)
  get_filename_component(name ${src} NAME)
  if(NOT name MATCHES "^([A-Za-z0-9_]+)\\.cpp$")
    message(FATAL_ERROR "checks/mutants: ${src}: a mutant picks ${target}'s objects by file "
                        "name, which must be <letters, digits, _>.cpp")
  endif()
  set(stem ${CMAKE_MATCH_1})
  get_property(seen GLOBAL PROPERTY TURNSTILE_OBJECT_OF_${target}_${stem})
  if(seen AND NOT seen STREQUAL src)
    message(FATAL_ERROR "checks/mutants: two sources of ${target} share the stem ${stem} "
                        "(${seen}, ${src}); a mutant picks objects by stem")
  endif()
  set_property(GLOBAL PROPERTY TURNSTILE_OBJECT_OF_${target}_${stem} ${src})
  set(${out} "$<FILTER:$<TARGET_OBJECTS:${target}>,INCLUDE,/${stem}\\.cpp\\.o(bj)?$>" PARENT_SCOPE)
endfunction()

function(turnstile_mutant_library_of name out)
  get_property(library GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_LIBRARY)
  if(NOT library)
    set(${out} turnstile::turnstile PARENT_SCOPE)
    return()
  endif()
  string(TOLOWER ${name} lower)
  set(lib turnstile_mutant_${lower})
  set(${out} ${lib} PARENT_SCOPE)
  if(TARGET ${lib})
    return()
  endif()
  find_package(Threads REQUIRED)
  _turnstile_library_sources(sources)
  get_property(files GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_FILES)
  get_property(headers GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_HEADERS)
  list(TRANSFORM headers PREPEND ${PROJECT_SOURCE_DIR}/)
  set(parts)
  foreach(src IN LISTS sources)
    file(RELATIVE_PATH src_rel ${PROJECT_SOURCE_DIR} ${src})
    set(sees FALSE)
    if(headers)
      _turnstile_sees(${src} sees ${headers})
    endif()
    if(src_rel IN_LIST files)
      list(APPEND parts ${CMAKE_BINARY_DIR}/mutants/${name}/${src_rel})
    elseif(sees)
      list(APPEND parts ${src})
    else()
      turnstile_object_of(turnstile ${src} obj)
      list(APPEND parts ${obj})
    endif()
  endforeach()
  add_library(${lib} STATIC EXCLUDE_FROM_ALL ${parts})
  add_dependencies(${lib} turnstile)  # the objects it shares are turnstile's
  turnstile_mutant_headers(${lib} ${name} PUBLIC)
  target_include_directories(${lib} PUBLIC ${PROJECT_SOURCE_DIR}/impl/include
                                    PRIVATE ${PROJECT_SOURCE_DIR}/impl/src)
  target_compile_features(${lib} PUBLIC cxx_std_20)
  # The product's own definitions (TURNSTILE_NO_INLINE_TLS, TURNSTILE_SPARE_DEPOT_BYTES,
  # impl/CMakeLists.txt): the sources a copy compiles again must agree with the
  # objects it shares.
  target_compile_definitions(${lib} PUBLIC $<TARGET_PROPERTY:turnstile,INTERFACE_COMPILE_DEFINITIONS>)
  target_link_libraries(${lib} PUBLIC Threads::Threads PRIVATE turnstile_warnings)
endfunction()
