// property_tests/turns/watchdog_props.cpp: the slow-turn watchdog ([TURN-4.2])
// under generated programs on a ManualScheduler: turns on both lanes, held by
// events, released, checked and watched while virtual time advances, against
// the model "a turn that ran longer than slow_turn is reported exactly once,
// a turn that did not is never reported".
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
RC_GTEST_PROP(TurnsWatchdogProperty, EachSlowTurnIsReportedExactlyOnce, ()) {
  const auto ops = *vector_of<WatchOp>(1, 30, rc::gen::build<WatchOp>(
      rc::gen::set(&WatchOp::kind, rc::gen::inRange(0, 4)),
      rc::gen::set(&WatchOp::arg, uniform_in(0, 15)))).as("program");
  constexpr auto kSlow = milliseconds(50);
  ManualScheduler ms;
  std::map<std::string, int> reports;
  bool early = false;  // a report of a turn that had not run longer than slow_turn
  WatchedTurns turns;
  {
    auto on_slow = [&](const std::string&, const std::string& method, std::chrono::nanoseconds e) {
      early = early || e <= kSlow;
      ++reports[method];
    };
    Activation<int> a("watched", 0, watched_options(kSlow, on_slow), ms);
    std::vector<Task<>> pending;
    for (const WatchOp& op : ops) run_op(op, a, ms, turns, pending);
    for (auto& t : turns) t->release.set();
    ms.run_until_idle();
    RC_ASSERT(a.running() == 0u);
    RC_ASSERT(a.queued() == 0u);
    std::uint64_t total = 0;
    for (auto& [m, n] : reports) total += static_cast<std::uint64_t>(n);
    RC_ASSERT(a.slow_turns() == total);
  }
  RC_ASSERT(!early);
  for (const auto& tp : turns) {
    const WatchedTurn& t = *tp;
    RC_ASSERT(t.started && t.ended);
    const int n = reports.count(t.name) ? reports.at(t.name) : 0;
    RC_ASSERT(n == (t.end - t.start > kSlow ? 1 : 0));
  }
  RC_CLASSIFY(!reports.empty(), "some turn reported");
}

}  // namespace
}  // namespace turnstile::prop::turns
