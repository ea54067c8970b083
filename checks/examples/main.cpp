// checks/examples/main.cpp: runs one documented example by name.
//   turnstile_examples <name>   exit 0 when the example did what its doc says
//   turnstile_examples          lists the examples
#include <cstdio>
#include <exception>

#include "example_registry.hpp"

int main(int argc, char** argv) {
  auto& all = turnstile_examples::registry();
  if (argc < 2) {
    for (const auto& [name, fn] : all) std::printf("%s\n", name.c_str());
    return 0;
  }
  auto it = all.find(argv[1]);
  if (it == all.end()) {
    std::fprintf(stderr, "turnstile_examples: no example named '%s'\n", argv[1]);
    return 2;
  }
  try {
    const int rc = it->second();
    if (rc != 0) std::fprintf(stderr, "example '%s' failed its check (%d)\n", argv[1], rc);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example '%s' threw: %s\n", argv[1], e.what());
    return 1;
  }
}
