// lane_window_test.cpp: StateLane's close() while a turn runs and accepted
// items wait behind it ([LANE-7.6]), the one line a throwing error handler
// leaves ([LANE-7.5]), and the context of each turn of a drain step and of the
// carrier between steps ([LANE-5.6], [FL-3.1]).
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
#include <vector>

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

// spec: [LANE-5.6] [FL-3.1] [FL-3.8]
TEST(LaneWindow, BareTurnsSeeOnlyTheMarkerAndTheCarriersContextIsBackAfterEachStep) {
  // Turns submitted with no bindings share the lane's one marker frame, lent
  // to the carrier's context for each turn and taken back after it. Held open
  // one drain step at a time on a carrier whose own context binds `carrier`:
  // inside every turn the lane is the position and nothing of the carrier's
  // is bound; after every step the carrier's binding is back and no lane is;
  // a turn with its submitter's bindings between bare ones changes neither.
  ManualScheduler ms;
  StateLane lane("lent", ms);
  const FiberLocal<int> carrier("carrier");
  const FiberLocal<int> submitter("submitter");
  struct Seen {
    const StateLane* lane = nullptr;
    bool carrier_bound = true;
    int submitter = -1;  // -1: unbound
  };
  std::vector<Seen> seen;
  const auto observe = [&] {
    const int* s = submitter.try_get();
    seen.push_back({StateLane::current(), carrier.is_bound(), s != nullptr ? *s : -1});
  };
  ASSERT_TRUE(lane.try_post(observe));
  ASSERT_TRUE(lane.try_post(observe));
  submitter.where(5, [&] { ASSERT_TRUE(lane.try_post(observe)); });
  ASSERT_TRUE(lane.try_post(observe));
  carrier.where(7, [&] {
    ASSERT_EQ(ms.ready(), 1u);
    ms.run_next(0);  // one drain step: the four turns
    EXPECT_EQ(carrier.get(), 7);
    EXPECT_EQ(StateLane::current(), nullptr);
    // Submitted with no bindings (the empty context): a later step, the
    // lane's frame taken back after the first step is lent again.
    FiberContext().run([&] { ASSERT_TRUE(lane.try_post(observe)); });
    ms.run_next(0);
    EXPECT_EQ(carrier.get(), 7);
    EXPECT_EQ(StateLane::current(), nullptr);
  });
  ASSERT_EQ(seen.size(), 5u);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].lane, &lane) << "turn " << i;
    EXPECT_FALSE(seen[i].carrier_bound) << "turn " << i;
    EXPECT_EQ(seen[i].submitter, i == 2 ? 5 : -1) << "turn " << i;
  }
  EXPECT_FALSE(carrier.is_bound());
  EXPECT_EQ(ms.ready(), 0u);
}

}  // namespace
