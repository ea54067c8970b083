// turn_watchdog_test.cpp: the slow-turn watchdog ([TURN-4.2]): a deadline
// armed on the scheduler's timer when a turn starts, cancelled when it
// settles, reporting a turn still running once; the settle check and
// check_slow_turns() agree with it on one report per turn. Virtual time on a
// ManualScheduler (advance(), no sleeps); a real ThreadPool timer where the
// report itself releases the stuck turn.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "turns_support.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/threads.hpp"

namespace {

using namespace turnstile;
using namespace turns_test;
using namespace std::chrono_literals;

class Watchdog : public ::testing::Test {
 protected:
  ActivationOptions options(std::chrono::nanoseconds threshold = 100ms) {
    return slow_after(threshold, [this](const std::string& id, const std::string& method,
                                        std::chrono::nanoseconds elapsed) {
      reports.push_back({id, method, elapsed});
      running_at_report.push_back(running_now ? running_now() : 0);
    });
  }

  ManualScheduler ms;
  std::vector<SlowReport> reports;
  std::vector<std::size_t> running_at_report;
  std::function<std::size_t()> running_now;
};

// spec: [TURN-4.2]
TEST_F(Watchdog, AStuckTurnIsReportedOnceWhileItRunsNotAgainAtSettleOrByCheck) {
  Activation<int> a("stuck/1", 0, options(), ms);
  running_now = [&a] { return a.running(); };
  Event hold;
  start_held(ms, a, "checkout", hold);
  EXPECT_EQ(ms.timers(), 1u);  // the watchdog, armed as the turn started
  ms.advance(100ms);           // exactly slow_turn: not longer than it
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());
  ms.advance(1ms);
  EXPECT_EQ(ms.ready(), 1u);   // the watchdog's report is posted, not run in advance()
  EXPECT_TRUE(reports.empty());
  ms.run_until_idle();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].id, "stuck/1");
  EXPECT_EQ(reports[0].method, "checkout");
  EXPECT_EQ(reports[0].elapsed, 101ms);  // measured on the activation's clock (the scheduler's)
  EXPECT_EQ(running_at_report[0], 1u);   // while it runs
  EXPECT_EQ(a.slow_turns(), 1u);
  EXPECT_EQ(ms.timers(), 0u);            // one watchdog per turn: nothing re-armed

  ms.advance(10s);
  a.check_slow_turns();
  ms.run_until_idle();
  EXPECT_EQ(reports.size(), 1u);  // not again by check_slow_turns
  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(reports.size(), 1u);  // not again at settle
  EXPECT_EQ(a.slow_turns(), 1u);
  EXPECT_EQ(a.turns_completed(), 1u);
}

// spec: [TURN-4.2]
TEST_F(Watchdog, AFastTurnIsNeverReportedAndItsWatchdogFiresOnceWithNothingDue) {
  Activation<int> a("fast/1", 0, options(), ms);
  Event hold;
  (void)a.call("quick", [](TurnContext<int>& ctx) -> Task<> {
    ++ctx.state();
    co_return;
  });
  start_held(ms, a, "held", hold);
  EXPECT_EQ(ms.timers(), 1u);  // "quick" settled: its watchdog is gone; "held" runs
  ms.advance(60ms);
  hold.set();
  ms.run_until_idle();
  // [TURN-4.2] cancelled lazily: "held" settled after 60 ms and left it armed.
  EXPECT_EQ(ms.timers(), 1u);
  ms.advance(1h);
  EXPECT_EQ(ms.ready(), 1u);   // it fires once, at its deadline
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());  // with nothing due: a settled turn is never reported
  EXPECT_EQ(ms.timers(), 0u);    // and it is dropped, not re-armed
  ms.advance(1h);
  EXPECT_EQ(ms.ready(), 0u);
  EXPECT_EQ(a.slow_turns(), 0u);
  EXPECT_EQ(a.turns_completed(), 2u);
}

// spec: [TURN-4.2]
TEST_F(Watchdog, QueueTimeDoesNotCountAndEachTurnHasItsOwnDeadline) {
  Activation<int> a("queue/1", 0, options(), ms);
  Event first, second;
  (void)a.call("first", held_by(first));
  (void)a.call("second", held_by(second));  // queued behind "first": no watchdog yet
  ms.run_until_idle();
  EXPECT_EQ(ms.timers(), 1u);
  ms.advance(90ms);
  first.set();
  ms.run_until_idle();                    // "second" starts at 90 ms
  // [TURN-4.2] cancelled lazily: still armed for "first" (100 ms), it fires
  // with nothing due and re-arms for "second", the oldest running turn.
  EXPECT_EQ(ms.timers(), 1u);
  EXPECT_EQ(ms.next_deadline(), Scheduler::Clock::time_point{} + 100ms + 1ns);
  ms.advance(10ms + 1ns);
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());
  EXPECT_EQ(ms.next_deadline(), Scheduler::Clock::time_point{} + 190ms + 1ns);
  ms.advance(90ms - 1ns);                 // 190 ms: "second" has run exactly slow_turn
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());
  ms.advance(1ns);
  ms.run_until_idle();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].method, "second");
  second.set();
  ms.run_until_idle();
}

// spec: [TURN-4.2]
TEST_F(Watchdog, AReportByCheckSlowTurnsSilencesTheWatchdog) {
  FakeClock clock;
  ActivationOptions o = options();
  o.clock = clock.fn();  // an injected clock: it decides what "elapsed" is
  Activation<int> a("checked/1", 0, o, ms);
  Event hold;
  start_held(ms, a, "scan", hold);
  clock.advance(150ms);
  a.check_slow_turns();
  ASSERT_EQ(reports.size(), 1u);
  ms.advance(1s);  // the watchdog fires and finds the turn reported
  ms.run_until_idle();
  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(reports.size(), 1u);
  EXPECT_EQ(a.slow_turns(), 1u);
}

// spec: [TURN-4.2]
TEST_F(Watchdog, AnInjectedClockThatLagsMakesTheWatchdogLookAgain) {
  FakeClock clock;
  ActivationOptions o = options();
  o.clock = clock.fn();
  Activation<int> a("lag/1", 0, o, ms);
  Event hold;
  start_held(ms, a, "m", hold);
  ms.advance(1s);        // the scheduler's deadline passed; the activation's clock did not move
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());
  EXPECT_EQ(ms.timers(), 1u);  // re-armed for what is left on the activation's clock
  clock.advance(40ms);
  ms.advance(100ms + 1ns);
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());  // 40 ms on the activation's clock
  clock.advance(80ms);
  ms.advance_to(*ms.next_deadline());
  ms.run_until_idle();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].elapsed, 120ms);
  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(reports.size(), 1u);
  EXPECT_EQ(ms.timers(), 0u);
}

// spec: [TURN-4.2] [TURN-6.1]
TEST(WatchdogPool, AStuckTurnIsReportedByTheTimerWithoutAnyUserCall) {
  // The turn waits for an event only the slow-turn report sets: the sync_wait
  // returns only if the watchdog reported it while it ran.
  ThreadPool pool(2);
  Event released;
  std::atomic<int> reports{0};
  const auto report = [&](const std::string&, const std::string& method, std::chrono::nanoseconds elapsed) {
    EXPECT_EQ(method, "stuck");
    EXPECT_GT(elapsed, 2ms);
    reports.fetch_add(1);
    released.set();
  };
  Activation<int> a("pool/stuck", 0, slow_after(2ms, report), pool);
  sync_wait(a.call("stuck", [&released](TurnContext<int>&) -> Task<> { co_await released.wait(); }));
  EXPECT_EQ(reports.load(), 1);
  EXPECT_EQ(a.slow_turns(), 1u);
  EXPECT_EQ(a.running(), 0u);
}

// spec: [TURN-4.2]
TEST(WatchdogPool, WatchdogCheckAndSettleRaceToOneReportPerTurn) {
  // Tiny threshold: the watchdog, check_slow_turns() on another thread and the
  // settle all race for the same turns; none is reported twice.
  ThreadPool pool(3);
  std::mutex mu;
  std::map<std::string, int> per_turn;
  const auto report = [&](const std::string&, const std::string& method, std::chrono::nanoseconds) {
    std::lock_guard lock(mu);
    ++per_turn[method];
  };
  Activation<int> a("raced/watchdog", 0, slow_after(1us, report), pool);
  constexpr int kTurns = 200;
  std::vector<Task<>> calls;
  for (int i = 0; i < kTurns; ++i) {
    calls.push_back(a.call("turn" + std::to_string(i), [](TurnContext<int>& ctx) -> Task<> {
      co_await yield();
      co_await yield();
      ++ctx.state();
    }));
  }
  {
    const turnstile_test::Repeat checker([&] { a.check_slow_turns(); });  // races the settles
    for (auto& t : calls) sync_wait(std::move(t));
  }
  std::lock_guard lock(mu);
  std::uint64_t total = 0;
  for (auto& [method, n] : per_turn) {
    EXPECT_EQ(n, 1) << method;
    total += static_cast<std::uint64_t>(n);
  }
  EXPECT_EQ(a.slow_turns(), total);
}

}  // namespace
