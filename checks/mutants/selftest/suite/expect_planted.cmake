# Passes if FILE (a mutant's scratch copy) matches the regex EXPECT.
file(READ ${FILE} text)
if(NOT text MATCHES "${EXPECT}")
  message(FATAL_ERROR "${FILE} does not hold the planted bug (${EXPECT}):\n${text}")
endif()
