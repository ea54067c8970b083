# The ctest of a mutant whose patch no longer applies (mutants.cmake): fails with
# the reason recorded at configure time.
file(READ ${ERROR_FILE} reason)
message(FATAL_ERROR "${reason}")
