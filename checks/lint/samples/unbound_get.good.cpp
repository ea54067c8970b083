// turnstile-lint sample: [LINT-1.1] flags none of these reads.
// spec: [LINT-1.1]
// ctest: static.lint.unbound_get.good
#include <string>

#include "turnstile/fiber_local.hpp"

inline turnstile::FiberLocal<std::string> request_id("request_id");

std::string with_fallback() { return request_id.or_else("-"); }

std::string checked() {
  if (!request_id.is_bound()) return "-";
  return request_id.get();
}

std::string pointer() {
  const std::string* id = request_id.try_get();
  return id != nullptr ? *id : "-";
}

std::string inside_where() {
  return request_id.where("r-1", [] { return request_id.get(); });
}

std::string caught() {
  try {
    return request_id.get();
  } catch (const turnstile::UnboundFiberLocal&) {
    return "-";
  }
}
