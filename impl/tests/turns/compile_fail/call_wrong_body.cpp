// Must NOT compile: a turn body that takes the TurnContext but is not a
// coroutine (returns int, not Task<int>) is neither of the two forms of
// [TURN-1.3]; call() rejects it with its TurnBody constraint, the first error.
// Built by the ctest turns.compile_fail.call_wrong_body.
// spec: [TURN-1.3]
#include "turnstile/activation.hpp"

turnstile::Task<int> read(turnstile::Activation<int>& a) {
  auto t = a.call("read", [](turnstile::TurnContext<int>& ctx) { return ctx.state(); });
  co_return co_await std::move(t);
}
