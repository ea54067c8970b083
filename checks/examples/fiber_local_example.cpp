// The example of impl/include/turnstile/fiber_local.hpp, run: a binding seen by
// everything awaited inside where().
// spec: [FL-3.1]
#include <string>
#include <vector>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_fiber_local {
using namespace turnstile;

struct Request {
  std::string id;
};
Task<> validate(const Request& r);
void log(const std::string& what);

// doc: impl/include/turnstile/fiber_local.hpp
inline turnstile::FiberLocal<std::string> request_id("request_id");

Task<> handle(Request r) {
  co_await request_id.where(r.id, [&]() -> Task<> {   // bound for the whole
    co_await validate(r);                             //   awaited extent, on
    log("done");  // sees request_id.get() == r.id    //   every carrier
  });
}
// end doc

std::vector<std::string> logged;

Task<> validate(const Request& r) {
  const std::string* id = request_id.try_get();
  if (id == nullptr || *id != r.id) throw std::logic_error("validate: request_id not bound to r.id");
  co_return;
}
void log(const std::string& what) { logged.push_back(request_id.or_else("unbound") + " " + what); }

int run() {
  const std::string id = "request-0123456789-0123456789";
  sync_wait(handle(Request{id}));
  return logged == std::vector<std::string>{id + " done"} && !request_id.is_bound() ? 0 : 1;
}

}  // namespace ex_fiber_local

TURNSTILE_EXAMPLE(fiber_local, &ex_fiber_local::run);
