// The first example of impl/include/turnstile/activation.hpp, run: a serial turn
// that awaits inside the turn, with the body bound to a named local (GCC 12).
// spec: [TURN-1.1] [TURN-2.2]
#include <string>
#include <vector>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_activation {
using namespace turnstile;

struct Cart {
  std::vector<std::string> items;
  Task<> save() { co_return; }  // stands in for a write to storage
};

Task<std::size_t> add(std::string item) {
  // doc: impl/include/turnstile/activation.hpp
  Activation<Cart> cart("cart/user-42", Cart{});
  auto add_item = [item](TurnContext<Cart>& ctx) -> Task<> {
    ctx.state().items.push_back(item);        // no lock: this is a turn
    co_await ctx.state().save();              // the turn is still open
  };                                          // the turn ends when this settles
  co_await cart.call("add_item", std::move(add_item));  // named local: GCC 12
  // end doc
  co_return cart.snapshot()->items.size();
}

int run() {
  // Longer than any small-string buffer: a doubled destruction would free twice.
  const std::string item = "item-0123456789-0123456789-0123456789";
  return sync_wait(add(item)) == 1 ? 0 : 1;
}

}  // namespace ex_activation

TURNSTILE_EXAMPLE(activation, &ex_activation::run);
