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

namespace turnstile::prop::turns {
namespace {

using std::chrono::milliseconds;

struct WatchOp {
  int kind = 0;  // 0: call (arg odd: interleaved); 1: advance arg*10 ms; 2: release turn #arg; 3: check_slow_turns
  std::size_t arg = 0;
};

struct WatchedTurn {
  std::string name;
  Event release;
  bool started = false, ended = false;
  Scheduler::Clock::time_point start, end;
};

// spec: [TURN-4.2]
RC_GTEST_PROP(TurnsWatchdogProperty, EachSlowTurnIsReportedExactlyOnce, ()) {
  const auto ops = *vector_of<WatchOp>(1, 30, rc::gen::build<WatchOp>(
      rc::gen::set(&WatchOp::kind, rc::gen::inRange(0, 4)),
      rc::gen::set(&WatchOp::arg, uniform_in(0, 15)))).as("program");
  constexpr auto kSlow = milliseconds(50);
  ManualScheduler ms;
  std::map<std::string, int> reports;
  bool early = false;  // a report of a turn that had not run longer than slow_turn
  std::vector<std::unique_ptr<WatchedTurn>> turns;
  {
    ActivationOptions o;
    o.slow_turn = kSlow;
    o.interleaved_methods = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7", "i8", "i9", "i10",
                             "i11", "i12", "i13", "i14", "i15", "i16", "i17", "i18", "i19",
                             "i20", "i21", "i22", "i23", "i24", "i25", "i26", "i27", "i28", "i29"};
    o.on_slow_turn = [&](const std::string&, const std::string& method, std::chrono::nanoseconds e) {
      early = early || e <= kSlow;
      ++reports[method];
    };
    Activation<int> a("watched", 0, o, ms);
    std::vector<Task<>> pending;
    auto body = [&ms](WatchedTurn* t) {
      return [&ms, t](TurnContext<int>&) -> Task<> {
        t->started = true;
        t->start = ms.now();
        co_await t->release.wait();
        t->end = ms.now();
        t->ended = true;
      };
    };
    for (const WatchOp& op : ops) {
      if (op.kind == 0) {
        const std::string name = (op.arg % 2 ? "i" : "s") + std::to_string(turns.size());
        turns.push_back(std::make_unique<WatchedTurn>());
        turns.back()->name = name;
        pending.push_back(a.call(name, body(turns.back().get())));
      } else if (op.kind == 1) {
        ms.advance(milliseconds(10 * op.arg));
      } else if (op.kind == 2 && !turns.empty()) {
        turns[op.arg % turns.size()]->release.set();
      } else if (op.kind == 3) {
        a.check_slow_turns();
      }
      ms.run_until_idle();
    }
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
