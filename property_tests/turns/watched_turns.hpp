// property_tests/turns/watched_turns.hpp: what the two watchdog properties
// (watchdog_props.cpp, watchdog_live_props.cpp) share: generated programs that
// call turns held by events on one Activation<int> with a slow_turn, release
// them, check them and advance a ManualScheduler's virtual time.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "turnstile/turnstile.hpp"

namespace turnstile::prop::turns {

// One op of a program.
struct WatchOp {
  int kind = 0;  // 0: call (arg odd: interleaved); 1: advance arg*10 ms; 2: release turn #arg; 3: check_slow_turns
  std::size_t arg = 0;
};

// A called turn: it starts, waits for `release`, then settles.
struct WatchedTurn {
  std::string name;
  Event release;
  bool started = false, ended = false;
  Scheduler::Clock::time_point start, end;
};

using WatchedTurns = std::vector<std::unique_ptr<WatchedTurn>>;

// The activation's options: slow_turn `slow`, reports to `on_slow`; the methods
// i0..i29 are interleaved (a program of at most 30 ops calls each turn "i<n>" or
// "s<n>", n its index).
inline ActivationOptions watched_options(std::chrono::nanoseconds slow,
                                         ActivationOptions::SlowTurnHandler on_slow) {
  ActivationOptions o;
  o.slow_turn = slow;
  for (int i = 0; i < 30; ++i) o.interleaved_methods.insert("i" + std::to_string(i));
  o.on_slow_turn = std::move(on_slow);
  return o;
}

// Runs `op` on `a`, then every item it made ready. A call's Task is kept in
// `pending` (nothing awaits it), its turn in `turns`.
inline void run_op(const WatchOp& op, Activation<int>& a, ManualScheduler& ms, WatchedTurns& turns,
                   std::vector<Task<>>& pending) {
  if (op.kind == 0) {
    const std::string name = (op.arg % 2 ? "i" : "s") + std::to_string(turns.size());
    turns.push_back(std::make_unique<WatchedTurn>());
    WatchedTurn* t = turns.back().get();
    t->name = name;
    pending.push_back(a.call(name, [&ms, t](TurnContext<int>&) -> Task<> {
      t->started = true;
      t->start = ms.now();
      co_await t->release.wait();
      t->end = ms.now();
      t->ended = true;
    }));
  } else if (op.kind == 1) {
    ms.advance(std::chrono::milliseconds(10 * op.arg));
  } else if (op.kind == 2 && !turns.empty()) {
    turns[op.arg % turns.size()]->release.set();
  } else if (op.kind == 3) {
    a.check_slow_turns();
  }
  ms.run_until_idle();
}

}  // namespace turnstile::prop::turns
