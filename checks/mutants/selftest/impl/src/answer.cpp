// The "product" of the mutant mechanism's self-test (run.cmake).
int answer() {
  return 42;  // [SELF-1] the answer
}
