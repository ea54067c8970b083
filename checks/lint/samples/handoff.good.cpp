// turnstile-lint sample: the same handoffs done right, with
// FiberContext::capture() carried and run: no [LINT-2.x] finding.
// spec: [LINT-2.1] [LINT-2.2] [LINT-2.3]
// ctest: static.lint.handoff.good
#include <string>
#include <utility>

#include "turnstile/channel.hpp"
#include "turnstile/fiber_local.hpp"

using turnstile::FiberContext;
using turnstile::Task;

inline turnstile::FiberLocal<std::string> request_id("request_id");

struct Job {
  int n;
  FiberContext ctx;
};

void start(turnstile::Scheduler& s) {
  FiberContext ctx = FiberContext::capture();
  std::string id = request_id.or_else("-");  // a copy, not a borrow
  detach(s, [ctx, id]() -> Task<> {
    ctx.run([] { (void)request_id.get(); });  // turnstile-lint: ignore[LINT-1.1]
    (void)id;
    co_return;
  }());
}

Task<> worker(turnstile::Channel<Job>& ch) {
  while (auto job = co_await ch.receive()) {
    job->ctx.run([] { return request_id.or_else("-"); });
  }
}

Task<> producer(turnstile::Channel<Job>& ch) {
  Job job{1, FiberContext::capture()};
  co_await ch.send(std::move(job));
}

// A read that handles the missing binding is not a borrowed one.
void start_checked(turnstile::Scheduler& s) {
  detach(s, []() -> Task<> {
    try {
      (void)request_id.get();
    } catch (const turnstile::UnboundFiberLocal&) {
    }
    co_return;
  }());
}
