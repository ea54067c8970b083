// lane_support.hpp: helpers for the state lane's unit suite.
//
// - LatePostScheduler: a scheduler whose post() hands the item to a fresh
//   thread and returns only once that thread has run it, as if the posting
//   thread had been preempted right after queueing. It makes "the completer is
//   still inside its call when the waiter has already run" deterministic.
// The latches, schedules and exception helpers come from the test-support library
// (impl/tests/support/turnstile_test/).
#pragma once

#include <thread>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"
#include "turnstile_test/outcome.hpp"
#include "turnstile_test/manual_runs.hpp"
#include "turnstile_test/threads.hpp"

namespace lt {

namespace ts = turnstile;

class LatePostScheduler final : public ts::Scheduler {
 public:
  void post(ts::Runnable& item) override {
    std::thread t([&item] {
      ts::detail::FrameworkContextScope in_item;
      item.run();
    });
    t.join();
  }
};

}  // namespace lt
