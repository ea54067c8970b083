// timer_window_test.cpp: TimerHandle while its callback runs ([RT-8.4]).
//
// The window: a call_at callback that has started and not yet returned. Inside
// it, cancel() must return false (the callback has started) and pending() must
// be false; before it, both say "not started"; after it, the same as inside.
// Held on a ManualScheduler (the callback itself asks, from inside its item)
// and on a ThreadPool carrier (the callback blocks on a Gate while the test
// thread asks, then the test opens the Gate). No race loop, no sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"

namespace {

using namespace turnstile;
using namespace std::chrono_literals;
using Tp = Scheduler::Clock::time_point;

// What the callback saw of its own handle, and whether it ran to its end.
struct Inside {
  TimerHandle handle;
  int runs = 0;
  bool pending_inside = true;
  bool cancel_inside = true;
  bool pending_after_cancel = true;
  bool finished = false;
};

// spec: [RT-8.4]
TEST(TimerWindow, CancelReturnsFalseAndPendingIsFalseWhileTheCallbackRuns) {
  ManualScheduler ms;
  Inside in;
  // The callback reads its captures into a local before it calls cancel():
  // nothing of the closure is touched after cancel(), whatever cancel() did.
  in.handle = ms.call_at(Tp{} + 10ms, [p = &in] {
    Inside* st = p;
    ++st->runs;
    st->pending_inside = st->handle.pending();
    st->cancel_inside = st->handle.cancel();
    st->pending_after_cancel = st->handle.pending();
    st->finished = true;
  });
  // Armed: pending.
  EXPECT_TRUE(in.handle.pending());
  EXPECT_EQ(ms.timers(), 1u);
  // Due and posted, not run: still pending (cancel would win here).
  EXPECT_EQ(ms.advance(10ms), 1u);
  EXPECT_TRUE(in.handle.pending());
  EXPECT_EQ(ms.ready(), 1u);
  EXPECT_EQ(in.runs, 0);
  // Inside the callback: started, so not pending and not cancellable.
  ms.run_next();
  EXPECT_EQ(in.runs, 1);
  EXPECT_TRUE(in.finished);
  EXPECT_FALSE(in.pending_inside) << "pending() was true while the callback ran";
  EXPECT_FALSE(in.cancel_inside) << "cancel() returned true while the callback ran";
  EXPECT_FALSE(in.pending_after_cancel);
  // After it: the same answers.
  EXPECT_FALSE(in.handle.pending());
  EXPECT_FALSE(in.handle.cancel());
  EXPECT_EQ(ms.ready(), 0u);
}

// spec: [RT-8.4]
TEST(TimerWindow, CancelFromAnotherThreadWhileTheCallbackBlocksOnACarrier) {
  ThreadPool pool(1);
  struct Held {
    turnstile_test::Gate entered, release, done;
    int runs = 0;
  };
  auto held = std::make_shared<Held>();
  TimerHandle h = pool.call_after(0ns, [held] {
    Held* st = held.get();  // no capture read after the test's cancel()
    ++st->runs;
    st->entered.open();
    st->release.wait();  // the window: started, not returned
    st->done.open();
  });
  held->entered.wait();
  // Every question asked inside the window, from the test thread.
  EXPECT_FALSE(h.pending()) << "pending() was true while the callback ran";
  EXPECT_FALSE(h.cancel()) << "cancel() returned true while the callback ran";
  EXPECT_FALSE(h.pending());
  EXPECT_FALSE(held->done.is_open());
  held->release.open();
  held->done.wait();
  EXPECT_EQ(held->runs, 1);
  EXPECT_FALSE(h.cancel());
}

}  // namespace
