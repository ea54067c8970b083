# checks/mutants/mutants.cmake: planted bugs as patches applied to a scratch copy
# of the product at configure time (see README.md in this directory).
#
#   turnstile_mutant(NAME <NAME> CONTRACT <contract> BREAKS <ID>... [PATCH <file>]
#                    [LIBRARY] CAUGHT_BY <ctest> <suite> <suite args>... [CAUGHT_BY ...])
#       declares one mutant: the patch (relative to this directory; default
#       <contract>/<name>.patch, <name> being NAME in lower case) is applied, with
#       `patch -p1 --fuzz=0`, to copies of the product files it touches, in
#       ${CMAKE_BINARY_DIR}/mutants/<NAME>/. LIBRARY: the library's own sources
#       instantiate the patched header, so property suites link a copy of the library
#       built with it (implied when the patch touches impl/src). Each CAUGHT_BY names
#       a ctest that passes only if <suite> catches the mutant, and that suite's
#       arguments (model suites: EXPECT <kinds> [RUN <model suite>]; property suites:
#       FILTER <Suite.Property> [MIN_SHRINKS <n>] [SOURCE <file>]).
#   turnstile_mutant_tests(<suite> <builder> LABELS <labels>)
#       called by a suite's CMakeLists: for each declared ctest of <suite>, calls
#       <builder>(<ctest> <NAME> <suite args>...). A mutant whose patch no longer
#       applies gets, instead, a ctest of that name that fails with the reason.
#   turnstile_mutant_headers(<target> <NAME> PRIVATE|PUBLIC [MODEL])
#       puts the mutant's patched headers first on <target>'s include path, and
#       compiles <target> with TURNSTILE_MUTANT_FLAGS (MODEL: a Relacy model,
#       TURNSTILE_MODEL_MUTANT_FLAGS); every mutant target calls it.
#   turnstile_unit_source_mutant(<ctest> <NAME> PREFIX <p> [OBJECTS <lib>] SOURCE <f> FILTER <t>)
#       the builder of the unit suites caught by one test source (impl/tests,
#       impl/tests/windows), defined below.
#   turnstile_unit_mutant_test(<ctest> <exe> <Suite.Test>)
#       registers <ctest> (labels unit, mutant): passes only if <exe>'s gtest test
#       <Suite.Test> ran and failed (expect_failed.cmake); the unit-test suites'
#       builders (impl/tests/windows, impl/tests/testing) share it.
#   turnstile_mutant_patches_headers(<NAME> <out-var> [SOURCE <absolute file>])
#       TRUE when the mutant's patch changes a header under impl/include (with SOURCE:
#       a header that file includes, directly or not), so a test source that
#       includes it is compiled again with the patched copy; FALSE when it changes
#       library sources only (impl/src), or no header SOURCE sees (a patch of the
#       timer core, instantiated in the library, is a LIBRARY mutant whose property
#       source never includes it): the suite's clean objects are then
#       linked against the mutant's library copy as they are (compiled once for the
#       clean suite and every such mutant: a test object is the costliest step of the
#       build, and recompiling it unchanged proves nothing).
#   turnstile_mutant_library_of(<NAME> <out-var>)
#       the library a property binary of <NAME> links: turnstile::turnstile, or for a
#       LIBRARY mutant the copy turnstile_mutant_<name>, whose patched sources (and
#       sources that include a patched header, directly or not) are compiled again;
#       every other source's object is shared by all the copies.
#
# The build tree's mutants/manifest.json (written at the end of the configure step)
# lists every declaration; checks/mutants/mutation-score reads it.

# A mutant build only has to fail its check, so it is compiled for speed. In an
# optimised build (RelWithDebInfo, Release): property and unit mutants at -Og
# without debug information (a turns property mutant object: 10.3 s at -O1 -> 7.0 s
# at -Og, measured with one g++ command each; -O0 gains nothing more there); the
# Relacy model mutants at -O0 (TURNSTILE_MODEL_MUTANT_FLAGS: a ready_queue mutant
# object 6.0 s at -O1 -> 3.5 s at -O0, both with the shared precompiled header; its
# search runs about 3x slower, but every model mutant is caught within about 1 s at
# -O1, the slowest, READY_QUEUE_NO_HANDOFF, in 3.3 s at -O0). Mutant objects are
# over a third of ci/test's build. A mutant's outcome does not depend on the level:
# the property mutants use a fixed seed, and the debug and sanitizer builds (-O0,
# keeping their own flags) catch every one of them too. -Og turns GCC's
# -flifetime-dse on like -O2 does: the models keep -fno-lifetime-dse (model/).
# Set either variable to "" to build those mutants like the clean suites.
if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
  set(_turnstile_mutant_flags_default "-Og;-g0")
  set(_turnstile_model_mutant_flags_default "-O0;-g0")
else()
  set(_turnstile_mutant_flags_default "")
  set(_turnstile_model_mutant_flags_default "")
endif()
set(TURNSTILE_MUTANT_FLAGS "${_turnstile_mutant_flags_default}" CACHE STRING
    "Extra compile options of every property and unit mutant target (default -Og;-g0 in optimised builds)")
set(TURNSTILE_MODEL_MUTANT_FLAGS "${_turnstile_model_mutant_flags_default}" CACHE STRING
    "Extra compile options of every Relacy model mutant target (default -O0;-g0 in optimised builds)")

find_program(TURNSTILE_PATCH_EXECUTABLE patch)
if(NOT TURNSTILE_PATCH_EXECUTABLE)
  message(FATAL_ERROR "checks/mutants: the mutants are patches applied with GNU patch, which "
                      "is not installed (Debian: apt-get install patch; ci/setup does)")
endif()

# _turnstile_mutant_apply(<NAME> <patch>): applies <patch> to copies of the files it
# touches; sets the mutant's FILES and, when it does not apply, ERROR.
function(_turnstile_mutant_apply name patch)
  file(RELATIVE_PATH patch_rel ${PROJECT_SOURCE_DIR} ${patch})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${patch})
  set(error "")
  set(files)
  if(NOT EXISTS ${patch})
    set(error "${patch_rel} does not exist")
  else()
    file(STRINGS ${patch} targets REGEX "^\\+\\+\\+ ")
    foreach(t IN LISTS targets)
      string(REGEX REPLACE "^\\+\\+\\+ b/([^\t]+).*" "\\1" f "${t}")
      list(APPEND files ${f})
    endforeach()
    if(NOT files)
      set(error "${patch_rel} touches no file (expected `+++ b/<path>` lines of a `git diff`)")
    endif()
  endif()
  set(tmp ${CMAKE_BINARY_DIR}/mutants/.apply/${name})
  if(NOT error)
    file(REMOVE_RECURSE ${tmp})
    foreach(f IN LISTS files)
      if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${f})
        set(error "${patch_rel} touches ${f}, which no longer exists")
        break()
      endif()
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${f})
      get_filename_component(d ${tmp}/${f} DIRECTORY)
      file(MAKE_DIRECTORY ${d})
      file(COPY_FILE ${PROJECT_SOURCE_DIR}/${f} ${tmp}/${f})
    endforeach()
  endif()
  if(NOT error)
    execute_process(
      COMMAND ${TURNSTILE_PATCH_EXECUTABLE} -p1 --batch --forward --fuzz=0
              --no-backup-if-mismatch --reject-file=- -i ${patch}
      WORKING_DIRECTORY ${tmp} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
      string(STRIP "${out}" out)
      list(JOIN files ", " touched)
      string(CONCAT error "${patch_rel} no longer applies to ${touched} (patch -p1 --fuzz=0: "
                   "${out}). Plant the same bug again on the current code and regenerate "
                   "the patch (checks/mutants/README.md, \"When a patch stops applying\")")
    endif()
  endif()
  if(error)
    message(WARNING "mutant ${name}: ${error}; its ctests will fail")
    file(WRITE ${CMAKE_BINARY_DIR}/mutants/${name}.error "mutant ${name}: ${error}\n")
  else()
    foreach(f IN LISTS files)
      get_filename_component(d ${CMAKE_BINARY_DIR}/mutants/${name}/${f} DIRECTORY)
      file(MAKE_DIRECTORY ${d})
      file(COPY_FILE ${tmp}/${f} ${CMAKE_BINARY_DIR}/mutants/${name}/${f} ONLY_IF_DIFFERENT)
    endforeach()
    file(REMOVE ${CMAKE_BINARY_DIR}/mutants/${name}.error)
  endif()
  file(REMOVE_RECURSE ${tmp})
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_FILES "${files}")
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_ERROR "${error}")
endfunction()

function(turnstile_mutant)
  # Split the arguments at each CAUGHT_BY.
  set(head)
  set(groups)
  set(cur)
  set(in_head TRUE)
  foreach(a IN LISTS ARGN)
    if(a STREQUAL "CAUGHT_BY")
      if(NOT in_head)
        list(JOIN cur "|" enc)
        list(APPEND groups "${enc}")
      endif()
      set(in_head FALSE)
      set(cur)
    elseif(in_head)
      list(APPEND head "${a}")
    else()
      list(APPEND cur "${a}")
    endif()
  endforeach()
  if(NOT in_head)
    list(JOIN cur "|" enc)
    list(APPEND groups "${enc}")
  endif()
  cmake_parse_arguments(M "LIBRARY" "NAME;CONTRACT;PATCH" "BREAKS" ${head})
  if(NOT M_NAME MATCHES "^[A-Z][A-Z0-9_]+$" OR NOT M_CONTRACT OR NOT M_BREAKS
     OR M_UNPARSED_ARGUMENTS OR NOT groups)
    message(FATAL_ERROR "turnstile_mutant(${ARGN}): needs NAME <UPPER_CASE> CONTRACT BREAKS "
                        "and at least one CAUGHT_BY <ctest> <suite> ...")
  endif()
  if(NOT M_PATCH)
    string(TOLOWER ${M_NAME} lower)
    set(M_PATCH ${M_CONTRACT}/${lower}.patch)
  endif()
  get_property(known GLOBAL PROPERTY TURNSTILE_MUTANTS)
  if(M_NAME IN_LIST known)
    message(FATAL_ERROR "turnstile_mutant: ${M_NAME} is declared twice")
  endif()
  set_property(GLOBAL APPEND PROPERTY TURNSTILE_MUTANTS ${M_NAME})
  set(patch ${M_PATCH})
  if(NOT IS_ABSOLUTE ${patch})
    set(patch ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${M_PATCH})
  endif()
  _turnstile_mutant_apply(${M_NAME} ${patch})
  get_property(files GLOBAL PROPERTY TURNSTILE_MUTANT_${M_NAME}_FILES)
  set(library ${M_LIBRARY})
  set(headers)
  foreach(f IN LISTS files)
    if(f MATCHES "^impl/src/")
      set(library TRUE)
    elseif(f MATCHES "^impl/include/")
      list(APPEND headers ${f})
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_${M_NAME}_CONTRACT ${M_CONTRACT})
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_${M_NAME}_BREAKS "${M_BREAKS}")
  file(RELATIVE_PATH patch_rel ${PROJECT_SOURCE_DIR} ${patch})
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_${M_NAME}_PATCH ${patch_rel})
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_${M_NAME}_LIBRARY ${library})
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_${M_NAME}_HEADERS "${headers}")
  foreach(g IN LISTS groups)
    string(REPLACE "|" ";" g "${g}")
    list(LENGTH g n)
    if(n LESS 2)
      message(FATAL_ERROR "turnstile_mutant(${M_NAME}): CAUGHT_BY needs <ctest> <suite>")
    endif()
    list(GET g 0 test)
    list(GET g 1 suite)
    if(NOT test MATCHES "\\.mutant\\.")
      message(FATAL_ERROR "turnstile_mutant(${M_NAME}): ctest ${test} must contain `.mutant.`")
    endif()
    set_property(GLOBAL APPEND PROPERTY TURNSTILE_MUTANT_${M_NAME}_TESTS "${test}")
    set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_TEST_${test}_SUITE ${suite})
    list(REMOVE_AT g 1)
    list(PREPEND g ${M_NAME})
    list(JOIN g "|" enc)
    set_property(GLOBAL APPEND PROPERTY TURNSTILE_MUTANT_SUITE_${suite} "${enc}")
  endforeach()
endfunction()

function(turnstile_mutant_tests suite builder)
  cmake_parse_arguments(T "" "" "LABELS" ${ARGN})
  get_property(entries GLOBAL PROPERTY TURNSTILE_MUTANT_SUITE_${suite})
  foreach(e IN LISTS entries)
    string(REPLACE "|" ";" e "${e}")
    list(POP_FRONT e name test)
    set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_TEST_${test}_REGISTERED TRUE)
    get_property(error GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_ERROR)
    if(error)
      add_test(NAME ${test} COMMAND ${CMAKE_COMMAND}
        -DERROR_FILE=${CMAKE_BINARY_DIR}/mutants/${name}.error
        -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/patch_failed.cmake)
      set_tests_properties(${test} PROPERTIES LABELS "${T_LABELS}")
    else()
      cmake_language(CALL ${builder} ${test} ${name} ${e})
    endif()
  endforeach()
endfunction()

function(turnstile_mutant_headers target name scope)
  cmake_parse_arguments(H "MODEL" "" "" ${ARGN})
  set(flags ${TURNSTILE_MUTANT_FLAGS})
  if(H_MODEL)
    set(flags ${TURNSTILE_MODEL_MUTANT_FLAGS})
  endif()
  if(flags)
    target_compile_options(${target} PRIVATE ${flags})
  endif()
  get_property(headers GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_HEADERS)
  if(headers)
    target_include_directories(${target} BEFORE ${scope} ${CMAKE_BINARY_DIR}/mutants/${name}/impl/include)
  endif()
endfunction()

function(turnstile_mutant_patches_headers name out)
  cmake_parse_arguments(P "" "SOURCE" "" ${ARGN})
  get_property(headers GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_HEADERS)
  if(headers AND P_SOURCE)
    # Only a source that sees a patched header, directly or not, can differ.
    list(TRANSFORM headers PREPEND ${PROJECT_SOURCE_DIR}/)
    _turnstile_sees(${P_SOURCE} sees ${headers})
    set(${out} ${sees} PARENT_SCOPE)
  elseif(headers)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The builder of the unit suites whose mutants are caught by one test source
# (impl/tests: unit.runtime; impl/tests/windows: unit.windows):
#   turnstile_unit_source_mutant(<ctest> <NAME> PREFIX <exe prefix>
#                                [OBJECTS <object library>] SOURCE <file> FILTER <Suite.Test>)
# <file>, in the calling directory, built against the mutant's patched headers
# first; for a patch of library sources only, and when the suite gives its
# OBJECTS, the clean objects as they are (compiled once for the clean suite and
# every such mutant). Linked against the mutant's library; the ctest passes only
# if <Suite.Test> ran and failed (turnstile_unit_mutant_test).
function(turnstile_unit_source_mutant test name)
  cmake_parse_arguments(A "" "PREFIX;OBJECTS;SOURCE;FILTER" "" ${ARGN})
  string(REGEX REPLACE "^unit\\.mutant\\." "" short ${test})
  string(REPLACE "." "_" short ${short})
  set(exe ${A_PREFIX}_${short})
  turnstile_mutant_library_of(${name} lib)
  turnstile_mutant_patches_headers(${name} headers SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/${A_SOURCE})
  if(headers OR NOT A_OBJECTS)
    add_executable(${exe} ${CMAKE_CURRENT_SOURCE_DIR}/${A_SOURCE})
    target_include_directories(${exe} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    if(A_OBJECTS)  # the include path the clean objects were compiled with
      target_include_directories(${exe} PRIVATE $<TARGET_PROPERTY:${A_OBJECTS},INCLUDE_DIRECTORIES>)
    endif()
    turnstile_mutant_headers(${exe} ${name} PRIVATE)
  else()
    add_executable(${exe} $<TARGET_OBJECTS:${A_OBJECTS}>)
  endif()
  target_link_libraries(${exe} PRIVATE ${lib} turnstile_test_support GTest::gtest_main
    turnstile_warnings)
  turnstile_unit_mutant_test(${test} ${exe} ${A_FILTER})
endfunction()

function(turnstile_unit_mutant_test test exe filter)
  add_test(NAME ${test}
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${exe}> -DFILTER=${filter}
      -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/expect_failed.cmake)
  set_tests_properties(${test} PROPERTIES LABELS "unit;mutant" TIMEOUT 120)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/mutant_library.cmake)

# The manifest, written once every suite has registered its ctests.
function(_turnstile_json_string value out)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\t" "\\t" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

function(_turnstile_json_array out)
  set(items)
  foreach(v IN LISTS ARGN)
    _turnstile_json_string("${v}" q)
    list(APPEND items "${q}")
  endforeach()
  list(JOIN items ", " body)
  set(${out} "[${body}]" PARENT_SCOPE)
endfunction()

function(_turnstile_mutant_write_manifest)
  get_property(names GLOBAL PROPERTY TURNSTILE_MUTANTS)
  # Built with string(APPEND): a value may hold a `;`, which a CMake list would split.
  set(body "")
  set(sep "")
  foreach(name IN LISTS names)
    foreach(p CONTRACT BREAKS PATCH FILES LIBRARY ERROR TESTS)
      get_property(${p} GLOBAL PROPERTY TURNSTILE_MUTANT_${name}_${p})
    endforeach()
    set(tests "")
    set(tsep "")
    foreach(t IN LISTS TESTS)
      get_property(suite GLOBAL PROPERTY TURNSTILE_MUTANT_TEST_${t}_SUITE)
      get_property(registered GLOBAL PROPERTY TURNSTILE_MUTANT_TEST_${t}_REGISTERED)
      _turnstile_json_string("${t}" qt)
      _turnstile_json_string("${suite}" qs)
      if(registered)
        set(registered true)
      else()
        set(registered false)
      endif()
      string(APPEND tests "${tsep}{\"name\": ${qt}, \"suite\": ${qs}, \"registered\": ${registered}}")
      set(tsep ", ")
    endforeach()
    _turnstile_json_string("${name}" qn)
    _turnstile_json_string("${CONTRACT}" qc)
    _turnstile_json_string("${PATCH}" qp)
    _turnstile_json_string("${ERROR}" qe)
    _turnstile_json_array(qb ${BREAKS})
    _turnstile_json_array(qf ${FILES})
    if(LIBRARY)
      set(LIBRARY true)
    else()
      set(LIBRARY false)
    endif()
    string(APPEND body "${sep}    {\"name\": ${qn}, \"contract\": ${qc}, \"breaks\": ${qb}, "
                       "\"patch\": ${qp},\n     \"files\": ${qf}, \"library\": ${LIBRARY}, "
                       "\"error\": ${qe},\n     \"tests\": [${tests}]}")
    set(sep ",\n")
  endforeach()
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/mutants/manifest.json
       CONTENT "{\n  \"version\": 1,\n  \"mutants\": [\n${body}\n  ]\n}\n" @ONLY)
endfunction()

get_property(_turnstile_manifest_deferred GLOBAL PROPERTY TURNSTILE_MUTANT_MANIFEST_DEFERRED)
if(NOT _turnstile_manifest_deferred)
  set_property(GLOBAL PROPERTY TURNSTILE_MUTANT_MANIFEST_DEFERRED TRUE)
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _turnstile_mutant_write_manifest)
endif()
