# check_package.cmake: checks on what the installed package exports, shared by
# consumer/CMakeLists.txt (test install.find_package) and test
# install.check_package.fires (which feeds it a bad list to prove it fails).

# turnstile_check_no_duplicates(WHAT <list>): fails naming the first entry that
# appears twice (e.g. an include directory exported twice).
function(turnstile_check_no_duplicates what)
  set(seen "")
  foreach(item IN LISTS ARGN)
    list(FIND seen "${item}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${what}: '${item}' appears twice (${ARGN})")
    endif()
    list(APPEND seen "${item}")
  endforeach()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  # cmake -P check_package.cmake: the bad input of test install.check_package.fires.
  turnstile_check_no_duplicates("INTERFACE_INCLUDE_DIRECTORIES" /p/include /p/lib /p/include)
endif()
