// turns_support.hpp: shared helpers of the Activation / turns unit tests.
//
// - Outcome<T> / collect() / what(): from the test-support library
//   (turnstile_test/outcome.hpp): runs a call's Task as a detached fiber and
//   records its value or exception, so a test can make calls, await them in any
//   order and step the scheduler in between.
// - interleaving({...}), slow_after(threshold, handler): ActivationOptions.
// - held_by(e), start_held(ms, a, method, e): a turn held until an Event is set.
// - FakeClock: the injected ActivationOptions::clock.
// - Probe: counts steps and serial turns in progress, keeps their maxima.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/outcome.hpp"

namespace turns_test {

namespace ts = turnstile;

using turnstile_test::collect;
using turnstile_test::Outcome;
using turnstile_test::what;

// Options whose interleaved methods are `methods`, everything else default.
inline ts::ActivationOptions interleaving(std::initializer_list<std::string> methods) {
  ts::ActivationOptions o;
  o.interleaved_methods = methods;
  return o;
}

// Options that report a turn slower than `threshold` to `on_slow`, everything else
// default ([TURN-4.2]).
inline ts::ActivationOptions slow_after(std::chrono::nanoseconds threshold,
                                        ts::ActivationOptions::SlowTurnHandler on_slow) {
  ts::ActivationOptions o;
  o.slow_turn = threshold;
  o.on_slow_turn = std::move(on_slow);
  return o;
}

// A turn body that holds its turn until `e` is set.
inline auto held_by(ts::Event& e) {
  return [&e](ts::TurnContext<int>&) -> ts::Task<> { co_await e.wait(); };
}

// Calls `method` on `a` with a turn held by `e` (the Task dropped: the turn runs
// all the same), and runs `ms` until the turn waits.
inline void start_held(ts::ManualScheduler& ms, ts::Activation<int>& a, const char* method, ts::Event& e) {
  (void)a.call(method, held_by(e));
  ms.run_until_idle();
}

// A clock the test moves by hand.
class FakeClock {
 public:
  using Clock = ts::ActivationOptions::Clock;
  Clock::time_point now() const { return Clock::time_point(std::chrono::nanoseconds(ns_.load())); }
  void advance(std::chrono::nanoseconds d) { ns_.fetch_add(d.count()); }
  std::function<Clock::time_point()> fn() {
    return [this] { return now(); };
  }

 private:
  std::atomic<std::int64_t> ns_{1'000'000'000};
};

// One slow-turn report.
struct SlowReport {
  std::string id;
  std::string method;
  std::chrono::nanoseconds elapsed;
};

// Counts code in progress. step_in()/step_out() bracket a step (code between
// two awaits); turn_in()/turn_out() bracket a whole serial turn.
class Probe {
 public:
  void step_in() { bump(steps_, max_steps_); }
  void step_out() { steps_.fetch_sub(1); }
  void turn_in() { bump(turns_, max_turns_); }
  void turn_out() { turns_.fetch_sub(1); }
  int max_steps() const { return max_steps_.load(); }
  int max_turns() const { return max_turns_.load(); }

 private:
  static void bump(std::atomic<int>& now, std::atomic<int>& max) {
    const int v = now.fetch_add(1) + 1;
    int seen = max.load();
    while (v > seen && !max.compare_exchange_weak(seen, v)) {
    }
  }
  std::atomic<int> steps_{0}, max_steps_{0}, turns_{0}, max_turns_{0};
};

}  // namespace turns_test
