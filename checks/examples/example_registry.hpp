// checks/examples/example_registry.hpp: how an example registers itself with the
// examples runner (main.cpp). Every example is a function `int ()` returning 0
// when the documented behaviour happened; main.cpp runs one by name, and ctest
// runs each as its own test (examples.<name>).
#pragma once

#include <map>
#include <string>

namespace turnstile_examples {

using ExampleFn = int (*)();

inline std::map<std::string, ExampleFn>& registry() {
  static std::map<std::string, ExampleFn> all;
  return all;
}

struct Registration {
  Registration(const char* name, ExampleFn fn) { registry()[name] = fn; }
};

}  // namespace turnstile_examples

// TURNSTILE_EXAMPLE(name, fn): registers fn as example `name` (names are unique:
// every example file is part of one unity translation unit).
#define TURNSTILE_EXAMPLE(name, fn) \
  static const ::turnstile_examples::Registration turnstile_example_##name{#name, fn}
