// turnstile-lint sample: [LINT-3.1] flags none of these: the values are named
// locals (moved in), or hold nothing with a non-trivial destructor.
// spec: [LINT-3.1]
// ctest: static.lint.coawait_temporary.good
#include <memory>
#include <string>
#include <utility>

#include "coawait_temporary.hpp"  // Item, Cart

Task<> good(turnstile::StateLane& lane, turnstile::Channel<Item>& ch, turnstile::Activation<Cart>& cart) {
  auto p = std::make_shared<int>(1);
  auto work = [p] { return *p; };
  co_await lane.run(std::move(work));
  Item item{1, FiberContext::capture()};
  co_await ch.send(std::move(item));
  std::string s("x");
  auto add = [s](auto& ctx) -> Task<int> {
    ctx.state().items += static_cast<int>(s.size());
    co_return ctx.state().items;
  };
  co_await cart.call("add", std::move(add));
  int n = 2;
  co_await lane.run([&n] { return n; });  // captures a reference: trivially destructible
}
