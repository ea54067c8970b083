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

namespace turnstile::prop::turns {
namespace {

using std::chrono::milliseconds;

struct LiveOp {
  int kind = 0;  // 0: call (arg odd: interleaved); 1: advance arg*10 ms; 2: release turn #arg
  std::size_t arg = 0;
};

struct LiveTurn {
  std::string name;
  Event release;
  bool started = false, ended = false;
  Scheduler::Clock::time_point start;
};

// spec: [TURN-4.2]
RC_GTEST_PROP(TurnsWatchdogProperty, ASlowTurnIsReportedWhileItRuns, ()) {
  const auto ops = *vector_of<LiveOp>(1, 30, rc::gen::build<LiveOp>(
      rc::gen::set(&LiveOp::kind, rc::gen::cast<int>(uniform_in(0, 2))),
      rc::gen::set(&LiveOp::arg, uniform_in(0, 15)))).as("program");
  constexpr auto kSlow = milliseconds(50);
  ManualScheduler ms;
  std::vector<std::unique_ptr<LiveTurn>> turns;
  std::map<std::string, int> reports;
  std::map<std::string, bool> reported_running;  // the report came while the turn ran
  bool missed = false;  // a running turn past its deadline that was not reported
  {
    ActivationOptions o;
    o.slow_turn = kSlow;
    for (int i = 0; i < 30; ++i) o.interleaved_methods.insert("i" + std::to_string(i));
    o.on_slow_turn = [&](const std::string&, const std::string& method, std::chrono::nanoseconds) {
      ++reports[method];
      for (const auto& t : turns)
        if (t->name == method) reported_running[method] = t->started && !t->ended;
    };
    Activation<int> a("live", 0, o, ms);
    std::vector<Task<>> pending;
    auto body = [&ms](LiveTurn* t) {
      return [&ms, t](TurnContext<int>&) -> Task<> {
        t->started = true;
        t->start = ms.now();
        co_await t->release.wait();
        t->ended = true;
      };
    };
    for (const LiveOp& op : ops) {
      if (op.kind == 0) {
        turns.push_back(std::make_unique<LiveTurn>());
        turns.back()->name = (op.arg % 2 ? "i" : "s") + std::to_string(turns.size() - 1);
        pending.push_back(a.call(turns.back()->name, body(turns.back().get())));
      } else if (op.kind == 1) {
        ms.advance(milliseconds(10 * op.arg));
      } else if (!turns.empty()) {
        turns[op.arg % turns.size()]->release.set();
      }
      ms.run_until_idle();
      for (const auto& tp : turns) {
        const LiveTurn& t = *tp;
        if (!t.started || t.ended || ms.now() - t.start <= kSlow) continue;
        // Due while it runs: the watchdog has reported it, while it ran.
        missed = missed || reports.count(t.name) == 0u || !reported_running[t.name];
      }
    }
    for (auto& t : turns) t->release.set();  // checked below, once no turn runs
    ms.run_until_idle();
    RC_ASSERT(a.running() == 0u);
    RC_ASSERT(ms.timers() == 0u);  // [RT-8.4] no turn runs: the watchdog is cancelled
  }
  RC_ASSERT(!missed);
  for (const auto& [method, n] : reports) RC_ASSERT(n == 1);
  RC_CLASSIFY(!reports.empty(), "some turn reported");
}

}  // namespace
}  // namespace turnstile::prop::turns
