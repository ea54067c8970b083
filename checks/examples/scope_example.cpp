// The example of impl/include/turnstile/scope.hpp, run: two children joined.
// spec: [RT-5.1] [RT-5.3]
#include <atomic>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_scope {
using namespace turnstile;

std::atomic<int> queries{0};
Task<> query_users() {
  queries.fetch_add(1);
  co_return;
}
Task<> query_orders() {
  queries.fetch_add(1);
  co_return;
}

// doc: impl/include/turnstile/scope.hpp
Task<> handle() {
  Scope scope;                       // inside a fiber
  scope.spawn(query_users());        // children start posted, on this
  scope.spawn(query_orders());       //   fiber's scheduler
  co_await scope.join();             // all done; first failure rethrown
}
// end doc

int run() {
  sync_wait(handle());
  return queries.load() == 2 ? 0 : 1;
}

}  // namespace ex_scope

TURNSTILE_EXAMPLE(scope, &ex_scope::run);
