// property_tests/composed/composed_main.cpp: main() of the composed property suite
// (composed_props.cpp), a source of its own so the suite's object is the same in the
// clean binary and in every mutant binary that patches library sources only
// (property_tests/composed/CMakeLists.txt); only this file is compiled twice.
#include <gtest/gtest.h>

#include <cstdlib>

// A longer run without reconfiguring: TURNSTILE_COMPOSED_RC_PARAMS, when set,
// replaces the RC_PARAMS ctest gives the clean suite (ci/check:
// TURNSTILE_COMPOSED_RC_PARAMS="max_success=3000"). Mutant binaries ignore it:
// their seed must stay the fixed one their ctest passes.
int main(int argc, char** argv) {
#if !defined(TURNSTILE_COMPOSED_NO_RC_HOOK)
  if (const char* more = std::getenv("TURNSTILE_COMPOSED_RC_PARAMS"); more != nullptr && *more != '\0')
    setenv("RC_PARAMS", more, 1);  // before RapidCheck reads its configuration
#endif
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
