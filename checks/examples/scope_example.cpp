// The example of impl/include/turnstile/scope.hpp, run: scoped() with a spawned
// child and when_all's results; the child is joined before scoped() returns.
// spec: [RT-5.5] [RT-5.6]
#include <atomic>
#include <string>
#include <vector>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_scope {
using namespace turnstile;

struct Request {
  std::string id;
};
struct Page {
  std::string text;
};
std::atomic<int> audits{0};
Task<> audit(const Request& r) {
  if (!r.id.empty()) audits.fetch_add(1);
  co_return;
}
Task<std::vector<std::string>> query_users(const Request&) {
  co_return std::vector<std::string>{"ann", "bob"};
}
Task<int> query_orders(const Request&) { co_return 3; }
Page render(const std::vector<std::string>& users, int orders) {
  return Page{std::to_string(users.size()) + " users, " + std::to_string(orders) + " orders"};
}

// doc: impl/include/turnstile/scope.hpp
Task<Page> handle(Request r) {
  co_return co_await scoped([&](Scope& s) -> Task<Page> {  // always joined
    s.spawn(audit(r));                                      // a child: posted,
    auto both = when_all(query_users(r), query_orders(r));  //   it runs beside
    auto [users, orders] = co_await std::move(both);        //   the body
    co_return render(users, orders);
  });
}
// end doc

int run() {
  const Page page = sync_wait(handle(Request{"request-0123456789-0123456789"}));
  return page.text == "2 users, 3 orders" && audits.load() == 1 ? 0 : 1;
}

}  // namespace ex_scope

TURNSTILE_EXAMPLE(scope, &ex_scope::run);
