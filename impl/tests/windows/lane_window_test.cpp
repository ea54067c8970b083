// lane_window_test.cpp: StateLane's close() while a turn runs and accepted
// items wait behind it ([LANE-7.6]), and the one line a throwing error handler
// leaves ([LANE-7.5]).
//
// The close window is held on a ManualScheduler: the first turn calls close()
// and detaches a fiber that awaits it; the lane's drain runs a bounded number
// of turns per step (it reposts itself behind other ready work), so with
// enough items accepted before the close the waiting fiber runs, and suspends,
// between two steps of the drain. Every later turn checks that close() has not
// completed, and the fiber's own step checks that items were still unrun when
// it began to wait.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"
#include "turnstile_test/manual_runs.hpp"

namespace {

using namespace turnstile;

struct CloseWindow {
  int ran = 0;                 // turns run so far
  bool closer_waiting = false;  // the closer fiber reached its co_await
  int ran_when_waiting = -1;   // turns run when it did
  bool closed = false;         // its co_await of close() completed
  int ran_when_closed = -1;
  int violations = 0;          // turns that ran after close() had completed
  bool refused_run = false;
  bool refused_post = false;
};

Task<> await_close(Task<> closing, CloseWindow* w, StateLane* lane) {
  try {  // outside the lane's turn: refused because closed, not as reentrant
    Task<> refused = lane->run([] {});
    (void)refused;
  } catch (const LaneClosedError&) {
    w->refused_run = true;
  }
  w->closer_waiting = true;
  w->ran_when_waiting = w->ran;
  co_await std::move(closing);
  w->closed = true;
  w->ran_when_closed = w->ran;
}

// spec: [LANE-7.6] [LANE-7.4]
TEST(LaneWindow, CloseFromARunningTurnCompletesOnlyAfterEveryAcceptedItem) {
  constexpr int kItems = 300;  // several drain steps' worth
  ManualScheduler ms;
  StateLane lane("windows/close", ms);
  CloseWindow w;
  ASSERT_TRUE(lane.try_post([&] {
    ++w.ran;
    // The window opens: this turn runs, kItems - 1 accepted items wait.
    Task<> closing = lane.close();
    EXPECT_TRUE(lane.is_closed());
    w.refused_post = !lane.try_post([&] { ++w.violations; });
    detach(ms, await_close(std::move(closing), &w, &lane));
  }));
  for (int i = 1; i < kItems; ++i) {
    ASSERT_TRUE(lane.try_post([&] {
      ++w.ran;
      if (w.closed) ++w.violations;  // [LANE-7.6] close() completes after this item
    }));
  }
  // Step through: after every item, close() has completed only if every item ran.
  turnstile_test::run_each_step(ms, [&] {
    if (w.closed) {
      EXPECT_EQ(w.ran, kItems) << "close() completed with accepted items unrun";
    }
  });
  EXPECT_TRUE(w.refused_post);
  EXPECT_TRUE(w.refused_run);
  EXPECT_EQ(w.ran, kItems);
  EXPECT_TRUE(w.closed);
  EXPECT_EQ(w.ran_when_closed, kItems);
  EXPECT_EQ(w.violations, 0);
  // The window was held: the closer waited while items were still unrun.
  ASSERT_TRUE(w.closer_waiting);
  EXPECT_LT(w.ran_when_waiting, kItems) << "the drain never let the closer run in between";
}

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// spec: [LANE-7.5]
TEST(LaneWindow, AThrowingErrorHandlerLeavesOneLineWithBothErrors) {
  ManualScheduler ms;
  StateLane lane("errs/lane", ms);
  int handled = 0;
  lane.set_error_handler([&](const StateLane&, std::exception_ptr) {
    ++handled;
    throw Failure("handler broke");
  });
  int after = 0;
  ASSERT_TRUE(lane.try_post([] { throw Failure("work broke"); }));
  ASSERT_TRUE(lane.try_post([&] { ++after; }));
  testing::internal::CaptureStderr();
  ms.run_until_idle();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(after, 1) << "the lane goes on with the next item";
  EXPECT_EQ(err,
            "turnstile: StateLane 'errs/lane': posted work threw: work broke; its error handler "
            "threw: handler broke\n");
  // A non-standard exception from the handler: still one line.
  lane.set_error_handler([](const StateLane&, std::exception_ptr) { throw 7; });
  ASSERT_TRUE(lane.try_post([] { throw Failure("again"); }));
  testing::internal::CaptureStderr();
  ms.run_until_idle();
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "turnstile: StateLane 'errs/lane': posted work threw: again; its error handler threw: "
            "a non-standard exception\n");
  // No handler: the default line alone.
  lane.set_error_handler(nullptr);
  ASSERT_TRUE(lane.try_post([] { throw Failure("plain"); }));
  testing::internal::CaptureStderr();
  ms.run_until_idle();
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "turnstile: StateLane 'errs/lane': posted work threw: plain\n");
  Task<> closing = lane.close();
  sync_wait(ms, std::move(closing));
}

}  // namespace
