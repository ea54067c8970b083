// turns_report_window_test.cpp: the watchdog's report of a turn, held open
// ([TURN-4.2]).
//
// The window: `on_slow_turn` (or the watch's SlowTurnReport) running for a
// turn, blocked on a Gate the test opens. Inside it:
//   - the turn settles: the settle waits for the report to return, so the
//     caller does not resume, the counters still show the turn running, and
//     the activation (the turn's record, the watch) cannot be destroyed;
//   - check_slow_turns() runs on another thread: the turn (and every other
//     turn the same firing found due) is not reported again;
//   - and the other way round: check_slow_turns()'s report held open while the
//     watchdog fires: the watchdog finds nothing to report.
// The settle's wait is seen with windows_test::wait_asleep_or (parked_thread.hpp):
// the settling thread, once it recorded its id, runs nothing that blocks
// before that wait. The asan-ubsan preset runs these tests too: a settle that
// did not wait would let the test free the turn's record (and the activation)
// under the report, which the watchdog then writes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parked_thread.hpp"
#include "turnstile/detail/slow_turn_watch.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"

namespace {

using namespace turnstile;
using namespace std::chrono_literals;
using turnstile_test::Gate;
using windows_test::this_thread_tid;
using windows_test::wait_asleep_or;

// A report the test holds open: the first report blocks until `release`.
struct HeldReports {
  Gate entered, release;
  std::atomic<int> returned{0};
  std::mutex mu;
  std::vector<std::string> methods;  // every report, in order

  void report(const std::string& method) {
    bool first = false;
    {
      std::lock_guard lock(mu);
      methods.push_back(method);
      first = methods.size() == 1;
    }
    if (first) {
      entered.open();
      release.wait();  // the window: the report runs
    }
    returned.fetch_add(1, std::memory_order_release);
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mu);
    return methods;
  }
  ActivationOptions options(std::chrono::nanoseconds slow_turn) {
    ActivationOptions o;
    o.slow_turn = slow_turn;
    o.on_slow_turn = [this](const std::string&, const std::string& method, std::chrono::nanoseconds) {
      report(method);
    };
    return o;
  }
};

class WatchReport final : public detail::SlowTurnReport {
 public:
  void slow_turn(const std::string& method, std::chrono::nanoseconds, std::string_view,
                 const char*) override {
    held.report(method);
  }
  HeldReports held;
};

using Names = std::vector<std::string>;

// spec: [TURN-4.2]
TEST(TurnsReportWindow, SettledReturnsOnlyAfterTheWatchdogsReportOfItsTurnReturned) {
  ManualScheduler ms;
  WatchReport report;
  const std::string method = "held";
  detail::SlowTurnWatch watch(ms, 100ms, {}, report);
  auto turn = std::make_unique<detail::RunningTurn>();  // a call's record: freed once settled
  watch.started(*turn, method, {});
  EXPECT_EQ(ms.advance(101ms), 1u);  // the watchdog's item is posted
  std::thread watchdog([&ms] { ms.run_next(); });  // runs it: blocks in the report
  report.held.entered.wait();

  // Inside the report: the turn is running and already counts as reported.
  watch.check();
  EXPECT_EQ(report.held.seen(), Names{"held"});
  // The turn settles on another thread, which then frees its record.
  std::atomic<pid_t> settler{0};
  std::atomic<bool> settle_returned{false};
  int returned_at_settle = -1;
  std::thread settle([&] {
    settler.store(this_thread_tid(), std::memory_order_release);
    watch.settled(*turn);
    returned_at_settle = report.held.returned.load(std::memory_order_acquire);
    turn.reset();
    settle_returned.store(true, std::memory_order_release);
  });
  const bool returned_early =
      wait_asleep_or(settler, [&] { return settle_returned.load(std::memory_order_acquire); });
  EXPECT_FALSE(returned_early) << "settled() returned while the watchdog reported its turn";
  EXPECT_EQ(report.held.returned.load(), 0);
  report.held.release.open();
  settle.join();
  watchdog.join();
  EXPECT_EQ(returned_at_settle, 1) << "the report returns before the settle does";
  EXPECT_EQ(report.held.seen(), Names{"held"});  // once: not again at the settle
  EXPECT_EQ(ms.advance(1s), 0u);                 // nothing left armed
}

// The activation on a pool of two carriers: the watchdog's report blocks one,
// the turn settles on the other. `destroy_on_resume`: the caller destroys the
// activation as soon as it resumes (the asan-ubsan preset sees a report that
// outlives it).
void settle_while_the_watchdog_reports(bool destroy_on_resume) {
  ThreadPool pool(2);
  HeldReports reports;
  auto act = std::make_unique<Activation<int>>("windows/reported", 0, reports.options(1ms), pool);
  Activation<int>* a = act.get();
  Event hold;
  std::atomic<pid_t> settler{0};
  bool resumed = false;
  ManualScheduler caller;  // the caller's fiber: its resumption is posted here
  auto body = [&hold, &settler](TurnContext<int>& ctx) -> Task<> {
    co_await hold.wait();
    ctx.state() = 1;
    settler.store(this_thread_tid(), std::memory_order_release);  // then it settles, here
  };
  auto call_then = [](Activation<int>* a, decltype(body) b, std::unique_ptr<Activation<int>>* owner,
                      bool destroy, bool* resumed) -> Task<> {
    Task<> c = a->call("held", std::move(b));
    co_await std::move(c);
    *resumed = true;
    if (destroy) owner->reset();  // allowed: its only turn has settled
  };
  detach(caller, call_then(a, body, &act, destroy_on_resume, &resumed));
  caller.run_until_idle();        // the call is made; the caller waits for it
  reports.entered.wait();         // 1 ms on: the watchdog reports the held turn

  // Inside the report, the turn still suspended.
  EXPECT_EQ(a->running(), 1u);
  EXPECT_EQ(a->slow_turns(), 1u);
  a->check_slow_turns();  // reported already: not again
  EXPECT_EQ(reports.seen(), Names{"held"});
  EXPECT_EQ(caller.run_until_idle(), 0u);
  // Inside the report, the turn's body returned: its settle waits on the other carrier.
  hold.set();
  const bool settled_early = wait_asleep_or(settler, [&] { return a->running() == 0; });
  EXPECT_FALSE(settled_early) << "the turn settled while the watchdog reported it";
  EXPECT_EQ(a->running(), 1u);
  EXPECT_EQ(a->turns_completed(), 0u);
  EXPECT_EQ(caller.ready(), 0u) << "the caller was resumed while the report ran";
  EXPECT_EQ(caller.run_until_idle(), 0u);
  EXPECT_FALSE(resumed);
  EXPECT_EQ(reports.returned.load(), 0);

  reports.release.open();  // the report returns: the settle goes on, the caller is posted
  while (!resumed) {  // (already resumed, inside the window, by a settle that did not wait)
    if (caller.run_until_idle() == 0) std::this_thread::yield();
  }
  EXPECT_EQ(reports.seen(), Names{"held"});
  if (destroy_on_resume) {
    EXPECT_EQ(act, nullptr);
  } else {
    EXPECT_EQ(a->running(), 0u);
    EXPECT_EQ(a->turns_completed(), 1u);
    EXPECT_EQ(a->slow_turns(), 1u);
  }
}

// spec: [TURN-4.2] [TURN-1.1]
TEST(TurnsReportWindow, ATurnSettlingWhileTheWatchdogReportsItWaitsAndItsCallerWithIt) {
  settle_while_the_watchdog_reports(false);
}

// spec: [TURN-4.2] [TURN-1.1]
TEST(TurnsReportWindow, TheActivationCanBeDestroyedOnlyOnceTheWatchdogsReportReturned) {
  settle_while_the_watchdog_reports(true);
}

// spec: [TURN-4.2] [TURN-3.2]
TEST(TurnsReportWindow, CheckSlowTurnsWhileTheWatchdogReportsFindsEveryDueTurnReported) {
  ManualScheduler ms;
  HeldReports reports;
  ActivationOptions o = reports.options(100ms);
  o.interleaved_methods = {"second"};  // two turns running at once
  Activation<int> a("windows/two", 0, o, ms);
  Event first_held, second_held;
  auto held = [](Event* e) { return [e](TurnContext<int>&) -> Task<> { co_await e->wait(); }; };
  (void)a.call("first", held(&first_held));
  (void)a.call("second", held(&second_held));
  ms.run_until_idle();
  EXPECT_EQ(a.running(), 2u);
  EXPECT_EQ(ms.advance(101ms), 1u);  // one watchdog for both, due for both
  std::thread watchdog([&ms] { ms.run_next(); });  // reports "first", blocks there
  reports.entered.wait();

  // Inside the report of "first": "second" is due and not reported yet, but
  // the same firing took it: check_slow_turns() reports neither.
  a.check_slow_turns();
  EXPECT_EQ(reports.seen(), Names{"first"});
  reports.release.open();
  watchdog.join();
  EXPECT_EQ(reports.seen(), (Names{"first", "second"}));
  a.check_slow_turns();
  first_held.set();
  second_held.set();
  ms.run_until_idle();
  EXPECT_EQ(reports.seen(), (Names{"first", "second"}));  // not again at the settles
  EXPECT_EQ(a.slow_turns(), 2u);
  EXPECT_EQ(ms.timers(), 0u);
}

// spec: [TURN-4.2]
TEST(TurnsReportWindow, TheWatchdogWhileCheckSlowTurnsReportsFindsNothingToReport) {
  ManualScheduler ms;
  HeldReports reports;
  Activation<int> a("windows/checked", 0, reports.options(100ms), ms);
  Event hold;
  (void)a.call("held", [&hold](TurnContext<int>&) -> Task<> { co_await hold.wait(); });
  ms.run_until_idle();
  EXPECT_EQ(ms.advance(101ms), 1u);  // the watchdog's item is posted, not run
  std::thread checker([&a] { a.check_slow_turns(); });  // reports it, blocks there
  reports.entered.wait();

  // Inside check_slow_turns()'s report: the watchdog's item runs and finds
  // the turn reported; it is not armed again (no turn is left unreported).
  ms.run_next();
  EXPECT_EQ(reports.seen(), Names{"held"});
  EXPECT_EQ(ms.timers(), 0u);
  EXPECT_EQ(ms.advance(1s), 0u);
  reports.release.open();
  checker.join();
  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(reports.seen(), Names{"held"});
  EXPECT_EQ(a.slow_turns(), 1u);
  EXPECT_EQ(a.running(), 0u);
}

}  // namespace
