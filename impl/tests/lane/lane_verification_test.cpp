// lane_verification_test.cpp: the contract's verification list (spec §8), one
// named test per item, using the public surface only: what a submitted item
// returns or throws, the error a reentrant call gets, and the state a caller
// observes when a method returns.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lane_support.hpp"
#include "turnstile/binding_table.hpp"
#include "turnstile/gate.hpp"
#include "turnstile/lane_callback.hpp"
#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;

// ------------------------------------------------------- single execution and order

Task<> add_many(StateLane& lane, long& total, int n) {
  for (int i = 0; i < n; ++i) co_await lane.run([&total] { total += 1; });
}

Task<long> no_lost_update(StateLane& lane, long& total) {
  Scope scope;
  for (int f = 0; f < 8; ++f) scope.spawn(add_many(lane, total, 400));
  co_await scope.join();
  co_return co_await lane.run([&total] { return total; });
}

// spec: [LANE-8.1] [LANE-5.1]
TEST(LaneVerification, Item8_1_NoLostUpdate) {
  ThreadPool pool(4);
  StateLane lane("counter", pool);
  long total = 0;  // plain: owned by the lane
  std::thread poster([&] {
    for (int i = 0; i < 800; ++i) ASSERT_TRUE(lane.try_post([&total] { total += 1; }));
  });
  const long seen = sync_wait(pool, no_lost_update(lane, total));
  poster.join();
  EXPECT_GE(seen, 8 * 400);
  sync_wait(lane.close());  // every accepted item has run
  EXPECT_EQ(total, 8 * 400 + 800);
}

// spec: [LANE-8.2] [LANE-5.2]
TEST(LaneVerification, Item8_2_SubmissionOrder) {
  ThreadPool pool(4);
  StateLane lane("ordered", pool);
  std::vector<std::string> executed;  // owned by the lane
  std::vector<Task<>> pending;
  // One submitter, mixing run() and try_post(): its submissions run in order.
  for (int i = 0; i < 60; ++i) {
    const std::string tag = "s" + std::to_string(i);
    if (i % 3 == 0)
      pending.push_back(lane.run([&executed, tag] { executed.push_back(tag); }));
    else
      ASSERT_TRUE(lane.try_post([&executed, tag] { executed.push_back(tag); }));
  }
  // Across threads: a_i is submitted before b_i is (a latch orders them), so a_i
  // runs first.
  std::vector<turnstile_test::Gate> after_a(40);
  std::thread a([&] {
    for (int i = 0; i < 40; ++i) {
      ASSERT_TRUE(lane.try_post([&executed, i] { executed.push_back("a" + std::to_string(i)); }));
      after_a[static_cast<std::size_t>(i)].open();
    }
  });
  std::thread b([&] {
    for (int i = 0; i < 40; ++i) {
      after_a[static_cast<std::size_t>(i)].wait();
      ASSERT_TRUE(lane.try_post([&executed, i] { executed.push_back("b" + std::to_string(i)); }));
    }
  });
  a.join();
  b.join();
  for (auto& t : pending) sync_wait(std::move(t));
  sync_wait(lane.close());

  auto pos = [&](const std::string& tag) {
    return std::find(executed.begin(), executed.end(), tag) - executed.begin();
  };
  ASSERT_EQ(executed.size(), 60u + 80u);
  for (int i = 0; i < 60; ++i)
    EXPECT_EQ(executed[static_cast<std::size_t>(i)], "s" + std::to_string(i));
  for (int i = 0; i < 40; ++i) {
    EXPECT_LT(pos("a" + std::to_string(i)), pos("b" + std::to_string(i))) << i;
    if (i > 0) {
      EXPECT_LT(pos("a" + std::to_string(i - 1)), pos("a" + std::to_string(i)));
      EXPECT_LT(pos("b" + std::to_string(i - 1)), pos("b" + std::to_string(i)));
    }
  }
}

Task<> closed_lane_attempts(StateLane& lane, std::vector<std::string>& log) {
  co_await lane.close();
  try {
    co_await lane.run([] { return 1; });  // throws at the call: nothing to wait for
    log.push_back("run accepted");
  } catch (const LaneClosedError& e) {
    log.push_back(std::string("run refused: ") + e.what());
  }
  log.push_back(lane.try_post([] {}) ? "post accepted" : "post refused");
}

// spec: [LANE-8.3] [LANE-7.4]
TEST(LaneVerification, Item8_3_ClosedLaneFailsFast) {
  ManualScheduler ms;
  StateLane lane("closed-lane", ms);
  std::vector<std::string> log;
  turnstile_test::run_detached(ms, closed_lane_attempts(lane, log));
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].rfind("run refused: ", 0), 0u) << log[0];
  EXPECT_NE(log[0].find("'closed-lane'"), std::string::npos) << log[0];
  EXPECT_EQ(log[1], "post refused");
  // Synchronously, on a plain thread, too: the call itself throws.
  EXPECT_THROW((void)lane.run([] {}), LaneClosedError);
}

// ------------------------------------------------------------------- reentrancy

// spec: [LANE-8.4] [LANE-5.3] [LANE-5.5]
TEST(LaneVerification, Item8_4_ReentryThrowsNotHangs) {
  ThreadPool pool(2);
  StateLane lane("reentered", pool);
  // Caught at the call site, inside the turn: the turn goes on and completes.
  std::string at_call_site;
  const int outer = sync_wait(lane.run([&] {
    try {
      auto inner = lane.run([] { return 2; });
      (void)inner;
    } catch (const LaneReentrancyError& e) {
      at_call_site = e.what();
    }
    return 1;
  }));
  EXPECT_EQ(outer, 1);
  EXPECT_NE(at_call_site.find("'reentered'"), std::string::npos) << at_call_site;
  // Not caught: it reaches the awaiter of the outer run(), still without a hang.
  EXPECT_THROW(sync_wait(lane.run([&] { (void)lane.run([] {}); })), LaneReentrancyError);
  sync_wait(lane.close());
}

Task<> delayed_retry(StateLane& lane, Event& timer, std::vector<std::string>& log) {
  co_await timer.wait();  // a genuine asynchronous delay first
  log.push_back(StateLane::current() == nullptr ? "delay: off lane" : "delay: ON LANE");
  co_await lane.run([&log] { log.push_back("delay: re-entered"); });
}

Task<> prefix_retry(StateLane& lane, std::vector<std::string>& log) {
  // Synchronous prefix: enters the lane before its first suspension.
  log.push_back(StateLane::current() == nullptr ? "prefix: off lane" : "prefix: ON LANE");
  co_await lane.run([&log] { log.push_back("prefix: re-entered"); });
}

Task<> concurrent_prefix(StateLane& lane, turnstile_test::Gate& queued, bool& reentered) {
  // Starts on another carrier while the original turn may still be running.
  Task<> t = lane.run([&reentered] { reentered = true; });  // no false reentrancy error
  queued.open();
  co_await std::move(t);
}

// spec: [LANE-8.5] [LANE-6.2]
TEST(LaneVerification, Item8_5_LongRunningReentersNormally) {
  {
    ManualScheduler ms;
    StateLane lane("retrying", ms);
    Event timer;
    std::vector<std::string> log;
    ASSERT_TRUE(lane.try_post([&] {
      log.push_back("turn");
      detach(ms, delayed_retry(lane, timer, log));
      detach(ms, prefix_retry(lane, log));
      log.push_back("turn ends");
    }));
    ms.run_until_idle();
    timer.set();
    ms.run_until_idle();
    EXPECT_EQ(log, (std::vector<std::string>{"turn", "turn ends", "prefix: off lane",
                                             "prefix: re-entered", "delay: off lane",
                                             "delay: re-entered"}));
  }
  {
    // Real carriers: the detached prefix runs while the original turn is still
    // running (the turn waits until the prefix has queued its entry).
    ThreadPool pool(2);
    StateLane lane("retrying-pool", pool);
    turnstile_test::Gate queued;
    bool reentered = false;
    sync_wait(lane.run([&] {
      detach(pool, concurrent_prefix(lane, queued, reentered));
      queued.wait();  // the prefix called run() during this turn, from off the lane
    }));
    sync_wait(lane.close());
    EXPECT_TRUE(reentered);
  }
}

// A component whose open() calls an external listener; split per kind 3.
struct Sessions {
  explicit Sessions(Scheduler& s) : lane("sessions", s) {}
  StateLane lane;
  std::string phase = "idle";  // owned by lane
  int attempts = 0;            // owned by lane

  Task<std::pair<std::string, int>> observe() {
    return lane.run([this] { return std::make_pair(phase, attempts); });
  }
};

Task<> callback_window(Sessions& s, Event& window_open, Event& observed, std::string& result,
                       const StateLane*& lane_in_callback) {
  result = co_await split_callback(
      s.lane,
      [&s] {  // turn A: every transition the original code made before the callback
        ++s.attempts;
        s.phase = "opening";
        return s.attempts;
      },
      [&](int&) -> Task<std::string> {  // the callback, outside the lane
        lane_in_callback = StateLane::current();
        window_open.set();
        co_await observed.wait();  // keep the window open until the observer has looked
        co_return std::string("accepted");
      },
      [&s](int& attempt, CallbackOutcome<std::string>& r) {  // turn B
        s.phase = r.ok() ? "open" : "failed";
        return r.value() + "#" + std::to_string(attempt);
      });
}

Task<> racing_observer(Sessions& s, Event& window_open, Event& observed,
                       std::pair<std::string, int>& seen) {
  co_await window_open.wait();
  seen = co_await s.observe();  // a turn inside the callback's window
  observed.set();
}

// spec: [LANE-8.6] [LANE-6.3]
TEST(LaneVerification, Item8_6_CallbacksOutsideSeePriorTransitions) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    ManualScheduler ms;
    Sessions s(ms);
    Event window_open, observed;
    std::string result;
    const StateLane* lane_in_callback = &s.lane;
    std::pair<std::string, int> seen;
    detach(ms, racing_observer(s, window_open, observed, seen));
    detach(ms, callback_window(s, window_open, observed, result, lane_in_callback));
    turnstile_test::Lcg rng(seed);
    turnstile_test::run_random(ms, rng);
    EXPECT_EQ(lane_in_callback, nullptr);  // the callback ran outside the turn
    EXPECT_EQ(seen, std::make_pair(std::string("opening"), 1)) << "seed " << seed;
    EXPECT_EQ(result, "accepted#1");
    EXPECT_EQ(s.phase, "open");
  }
}

// ------------------------------------------------------------- completion boundary

Task<> event_waiter(StateLane& lane, Event& ev, const StateLane*& seen, bool& entered) {
  co_await ev.wait();
  seen = StateLane::current();
  co_await lane.run([&entered] { entered = true; });  // would throw if resumed inside the turn
}

Task<> promise_waiter(StateLane& lane, Promise<int>& p, int& value, bool& entered) {
  value = co_await p.wait();
  co_await lane.run([&entered] { entered = true; });
}

// spec: [LANE-8.7] [LANE-5.6]
TEST(LaneVerification, Item8_7_CompletionInsideTurnNoFalseReentrancy) {
  {
    ManualScheduler ms;
    StateLane lane("signals", ms);
    Event ev;
    Promise<int> p;
    const StateLane* seen = &lane;
    bool entered_after_event = false, entered_after_promise = false;
    int value = 0;
    detach(ms, event_waiter(lane, ev, seen, entered_after_event));
    turnstile_test::run_detached(ms, promise_waiter(lane, p, value, entered_after_promise));  // both wait
    ASSERT_TRUE(lane.try_post([&] {
      ev.set();  // completion signalled inside the turn
      p.set_value(17);
      EXPECT_EQ(seen, &lane);  // nobody resumed inline, inside the turn:
      EXPECT_EQ(value, 0);
      EXPECT_EQ(ms.ready(), 2u);  // both waiters were posted instead
    }));
    ms.run_until_idle();
    EXPECT_EQ(seen, nullptr);
    EXPECT_TRUE(entered_after_event);
    EXPECT_EQ(value, 17);
    EXPECT_TRUE(entered_after_promise);
  }
  {
    ThreadPool pool(4);
    StateLane lane("signals-pool", pool);
    for (int i = 0; i < 100; ++i) {
      Event ev;
      const StateLane* seen = &lane;
      bool entered = false;
      auto both = [&]() -> Task<> {
        Scope scope;
        scope.spawn(event_waiter(lane, ev, seen, entered));
        co_await lane.run([&ev] { ev.set(); });
        co_await scope.join();
      };
      sync_wait(pool, both());
      ASSERT_EQ(seen, nullptr);
      ASSERT_TRUE(entered);
    }
    sync_wait(lane.close());
  }
}

// spec: [LANE-8.8] [LANE-5.8]
TEST(LaneVerification, Item8_8_RegisterBeforeReturn) {
  ManualScheduler ms;
  StateLane lane("registry", ms);
  std::vector<std::string> log;
  // run() returns a Task that is not awaited yet: the registration is already
  // queued, ahead of anything submitted after the return.
  Task<bool> reserved = lane.run([&log] {
    log.push_back("reserve");
    return true;
  });
  EXPECT_GT(ms.ready(), 0u);
  ASSERT_TRUE(lane.try_post([&log] { log.push_back("later submission"); }));
  ms.run_until_idle();
  EXPECT_EQ(log, (std::vector<std::string>{"reserve", "later submission"}));
  bool ok = false;
  detach(ms, [](Task<bool> t, bool& out) -> Task<> { out = co_await std::move(t); }(
                 std::move(reserved), ok));
  ms.run_until_idle();
  EXPECT_TRUE(ok);

  // The same through a component method: bind() has registered by the time it
  // returns, so a lookup issued after it sees the binding.
  BindingTable table("register-table", ms);
  Task<bool> bound = table.bind("actor", "session");
  Task<std::optional<std::string>> lookup = table.session_of("actor");
  std::optional<std::string> seen;
  detach(ms, [](Task<std::optional<std::string>> t, std::optional<std::string>& out) -> Task<> {
    out = co_await std::move(t);
  }(std::move(lookup), seen));
  ms.run_until_idle();
  EXPECT_EQ(seen, "session");
  (void)bound;
}

Task<> gate_then_lane(Gate& gate, StateLane& lane, int& in_gate_turns, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    Gate::Holder held = co_await gate.acquire();
    co_await lane.run([&in_gate_turns] { ++in_gate_turns; });  // waits for the lane, gate held
  }
}

Task<> lane_traffic(StateLane& lane, int& other_turns, int rounds) {
  for (int i = 0; i < rounds; ++i) co_await lane.run([&other_turns] { ++other_turns; });
}

Task<> gate_holders_and_traffic(Gate& gate, StateLane& lane, int& a, int& b) {
  Scope scope;
  for (int f = 0; f < 3; ++f) scope.spawn(gate_then_lane(gate, lane, a, 100));
  for (int f = 0; f < 3; ++f) scope.spawn(lane_traffic(lane, b, 100));
  co_await scope.join();
  co_await lane.close();
}

// spec: [LANE-8.9] [LANE-4.6]
TEST(LaneVerification, Item8_9_GateHolderWaitsForLane) {
  {
    ThreadPool pool(2);
    StateLane lane("gated", pool);
    Gate gate("wire");
    int a = 0, b = 0;  // owned by the lane
    sync_wait(pool, gate_holders_and_traffic(gate, lane, a, b));
    EXPECT_EQ(a, 300);
    EXPECT_EQ(b, 300);
    EXPECT_FALSE(gate.is_held());
  }
  {
    // Deterministically: the holder's turn is queued behind others' turns and
    // a second fiber waits for the gate; everything returns.
    ManualScheduler ms;
    StateLane lane("gated-manual", ms);
    Gate gate("wire-manual");
    int a = 0, b = 0;
    detach(ms, lane_traffic(lane, b, 3));
    detach(ms, gate_then_lane(gate, lane, a, 2));
    detach(ms, gate_then_lane(gate, lane, a, 2));
    turnstile_test::Lcg rng(3);
    turnstile_test::run_random(ms, rng);
    EXPECT_EQ(a, 4);
    EXPECT_EQ(b, 3);
    EXPECT_FALSE(gate.is_held());
  }
}

// ------------------------------------------------------------ cross-collection invariants

Task<> churn(BindingTable& t, int w, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    const std::string actor = "actor-" + std::to_string((w + i) % 6);
    const std::string session = "session-" + std::to_string((w * 7 + i) % 5);
    switch (i % 3) {
      case 0:
        (void)co_await t.bind(actor, session);
        break;
      case 1:
        (void)co_await t.rebind(actor, session);
        break;
      default:
        (void)co_await t.unbind(actor);
        break;
    }
  }
}

Task<> check(BindingTable& t, int rounds, std::atomic<int>& broken, std::atomic<int>& checks) {
  for (int i = 0; i < rounds; ++i) {
    if (!co_await t.consistent()) broken.fetch_add(1);
    checks.fetch_add(1);
  }
}

Task<> churn_and_check(BindingTable& t, std::atomic<int>& broken, std::atomic<int>& checks) {
  Scope scope;
  for (int w = 0; w < 4; ++w) scope.spawn(churn(t, w, 300));
  for (int r = 0; r < 2; ++r) scope.spawn(check(t, 300, broken, checks));
  co_await scope.join();
  if (!co_await t.consistent()) broken.fetch_add(1);
  co_await t.close();
}

// spec: [LANE-8.10] [LANE-4.2] [LANE-4.4]
TEST(LaneVerification, Item8_10_CrossCollectionInvariant) {
  ThreadPool pool(4);
  BindingTable table("bindings", pool);
  std::atomic<int> broken{0}, checks{0};
  sync_wait(pool, churn_and_check(table, broken, checks));
  EXPECT_EQ(checks.load(), 600);
  EXPECT_EQ(broken.load(), 0);
}

}  // namespace
