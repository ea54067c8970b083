// property_tests/turns/watchdog_live_props.cpp: the slow-turn watchdog reports a
// turn *while it runs* ([TURN-4.2]), with no user call, whatever the other turns
// of the activation do. The activation keeps one watchdog timer, armed for the
// oldest running turn not yet reported, re-armed when it fires and cancelled
// only when the last running turn settles; this checks that mechanism under
// generated programs on a ManualScheduler: overlapping serial and interleaved
// turns held by events, released in any order while virtual time advances.
//
// The model: after every step (and the run_until_idle that follows it, which
// runs any watchdog report that fell due), every turn still running that has run
// longer than slow_turn has been reported, and it was reported while running.
// check_slow_turns() is never called here, so only the watchdog can have done it.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/turnstile.hpp"
#include "watched_turns.hpp"

namespace turnstile::prop::turns {
namespace {

using std::chrono::milliseconds;

// spec: [TURN-4.2]
RC_GTEST_PROP(TurnsWatchdogProperty, ASlowTurnIsReportedWhileItRuns, ()) {
  // Calls, advances and releases (op kinds 0..2): never check_slow_turns.
  const auto ops = *vector_of<WatchOp>(1, 30, rc::gen::build<WatchOp>(
      rc::gen::set(&WatchOp::kind, rc::gen::cast<int>(uniform_in(0, 2))),
      rc::gen::set(&WatchOp::arg, uniform_in(0, 15)))).as("program");
  constexpr auto kSlow = milliseconds(50);
  ManualScheduler ms;
  WatchedTurns turns;
  std::map<std::string, int> reports;
  std::map<std::string, bool> reported_running;  // the report came while the turn ran
  bool missed = false;  // a running turn past its deadline that was not reported
  {
    auto on_slow = [&](const std::string&, const std::string& method, std::chrono::nanoseconds) {
      ++reports[method];
      for (const auto& t : turns)
        if (t->name == method) reported_running[method] = t->started && !t->ended;
    };
    Activation<int> a("live", 0, watched_options(kSlow, on_slow), ms);
    std::vector<Task<>> pending;
    for (const WatchOp& op : ops) {
      run_op(op, a, ms, turns, pending);
      for (const auto& tp : turns) {
        const WatchedTurn& t = *tp;
        if (!t.started || t.ended || ms.now() - t.start <= kSlow) continue;
        // Due while it runs: the watchdog has reported it, while it ran.
        missed = missed || reports.count(t.name) == 0u || !reported_running[t.name];
      }
    }
    for (auto& t : turns) t->release.set();  // checked below, once no turn runs
    ms.run_until_idle();
    RC_ASSERT(a.running() == 0u);
    // [TURN-4.2] cancelled lazily: an idle activation holds at most one armed
    // deadline, which fires once with nothing due, reports nothing and is dropped.
    RC_ASSERT(ms.timers() <= 1u);
    const auto reported = reports;
    ms.advance(kSlow + milliseconds(1));  // past every deadline armed so far
    ms.run_until_idle();
    RC_ASSERT(ms.timers() == 0u);
    RC_ASSERT(reports == reported);  // a settled turn is never reported
  }
  RC_ASSERT(!missed);
  for (const auto& [method, n] : reports) RC_ASSERT(n == 1);
  RC_CLASSIFY(!reports.empty(), "some turn reported");
}

}  // namespace
}  // namespace turnstile::prop::turns
