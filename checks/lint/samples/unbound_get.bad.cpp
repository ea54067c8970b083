// turnstile-lint sample: [LINT-1.1] flags each get() below (a line ending in an
// `expect:` comment must be flagged with that rule; no other line may be).
// spec: [LINT-1.1]
// ctest: static.lint.unbound_get.bad
#include <string>

#include "turnstile/fiber_local.hpp"

inline turnstile::FiberLocal<std::string> request_id("request_id");

std::string log_line(const std::string& msg) {
  return request_id.get() + ": " + msg;  // expect: [LINT-1.1]
}

turnstile::Task<int> length() {
  co_return static_cast<int>(request_id.get().size());  // expect: [LINT-1.1]
}
