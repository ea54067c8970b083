// README.md, "Composing the contracts": checkout's self-call is refused at its
// co_await with TurnReentrancyError; "audit" and "recount" run after checkout.
// spec: [TURN-7.1] [FL-3.9]
#include <atomic>
#include <string>
#include <vector>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_readme_compose {
using namespace turnstile;

struct Cart {
  std::vector<std::string> items;
  int total = 0;
};
int lookup(const std::vector<std::string>& items) { return 42 + 10 * static_cast<int>(items.size()); }
std::atomic<int> audits{0};
std::atomic<int> recounts{0};
Task<> audit_body(TurnContext<Cart>&) {
  audits.fetch_add(1);
  co_return;
}
Task<> recount_body(TurnContext<Cart>&) {
  recounts.fetch_add(1);
  co_return;
}

// doc: README.md
Activation<Cart> cart("cart/42", Cart{});
StateLane prices("prices");

Task<> checkout(TurnContext<Cart>& ctx) {               // a serial turn of cart/42
  auto items = ctx.state().items;                        // read inside the turn
  auto quote = prices.run([&act = ctx.activation(), items] {  // a lane turn: sees
    (void)act.call("audit", audit_body);  // request_id; not part of checkout: queues
    return lookup(items);
  });
  ctx.state().total = co_await std::move(quote);        // the turn holds cart/42 meanwhile
  auto self = ctx.activation().call("recount", recount_body);
  co_await std::move(self);  // throws TurnReentrancyError: checkout would wait for itself
}                            // "audit" and "recount" run after checkout settles
// end doc

Task<> after(TurnContext<Cart>&) { co_return; }

int run() {
  bool refused = false;
  try {
    sync_wait(cart.call("checkout", checkout));
  } catch (const TurnReentrancyError&) {
    refused = true;
  }
  // A later serial call runs after every call queued before it: audit, recount.
  sync_wait(cart.call("after", after));
  return refused && audits.load() == 1 && recounts.load() == 1 && cart.snapshot()->total == 42
             ? 0
             : 1;
}

}  // namespace ex_readme_compose

TURNSTILE_EXAMPLE(readme_compose, &ex_readme_compose::run);
