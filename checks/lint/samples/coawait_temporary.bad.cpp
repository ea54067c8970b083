// turnstile-lint sample: [LINT-3.1] flags the temporaries below, each built in
// a co_await operand with a non-trivial destructor (GCC 12 destroys them twice).
// spec: [LINT-3.1]
// ctest: static.lint.coawait_temporary.bad
#include <memory>
#include <string>

#include "coawait_temporary.hpp"  // Item, Cart

Task<> bad(turnstile::StateLane& lane, turnstile::Channel<Item>& ch, turnstile::Activation<Cart>& cart) {
  auto p = std::make_shared<int>(1);
  co_await lane.run([p] { return *p; });            // expect: [LINT-3.1]
  co_await ch.send(Item{1, FiberContext::capture()});  // expect: [LINT-3.1]
  co_await cart.call("add", [s = std::string("x")](auto& ctx) -> Task<int> {  // expect: [LINT-3.1]
    ctx.state().items += static_cast<int>(s.size());
    co_return ctx.state().items;
  });
}
