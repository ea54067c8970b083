// turnstile-lint sample: bindings borrowed into detach or across a Channel
// without FiberContext::capture(): [LINT-2.1], [LINT-2.2], [LINT-2.3].
// spec: [LINT-2.1] [LINT-2.2] [LINT-2.3]
// ctest: static.lint.handoff.bad
#include <string>

#include "turnstile/channel.hpp"
#include "turnstile/fiber_local.hpp"

using turnstile::Task;

inline turnstile::FiberLocal<std::string> request_id("request_id");

Task<> audit() {
  std::string id = request_id.get();  // expect: [LINT-1.1] [LINT-2.1]
  co_return;
}

void start(turnstile::Scheduler& s) {
  if (!request_id.is_bound()) return;
  const std::string& id = request_id.get();
  detach(s, [&id]() -> Task<> {
    std::string copy = request_id.get();  // expect: [LINT-2.1]
    (void)id;                             // expect: [LINT-2.3]
    co_return;
  }());
  detach(s, audit());
}

Task<> worker(turnstile::Channel<int>& ch) {
  while (auto job = co_await ch.receive()) {
    if (request_id.is_bound()) (void)request_id.get();  // expect: [LINT-2.2]
  }
}

Task<> producer(turnstile::Channel<const std::string*>& ch) {
  co_await ch.send(request_id.try_get());  // expect: [LINT-2.3]
}
