// turnstile_test/manual_runs.hpp: runs of a ManualScheduler to idle, by chosen schedules
// (a seeded Lcg, a replayed list, a bit mask). (The property suites' schedules as
// RapidCheck-generated data are property_tests/generated_schedules.hpp.)
//
// - Lcg: a small deterministic generator for schedule choices (no std::random
//   distributions: their output differs between standard libraries).
// - run_random(ms, rng): runs `ms` until idle, each next item picked by `rng`;
//   returns the choices, so replay(ms, choices) can run the same schedule again.
// - run_detached(ms, task): detaches `task` as a fiber on `ms` and runs `ms` until
//   idle (oldest first); returns the number of steps.
// - run_schedule(ms, mask, bits): the first `bits` steps by the bits of `mask`
//   (set: the newest ready item, clear: the oldest), then oldest first until idle;
//   looping over every mask explores every schedule of the first steps.
// - run_each_step(ms, check): runs `ms` oldest first until nothing is ready, calling
//   check() after every step: a window held open (spec/windows.md) and its promise
//   checked at each step inside it. Returns the number of steps.
//
// All of them drive the scheduler on the calling thread: call them from the plain
// test thread, never from inside an item ([RT-2.4]: a ManualScheduler run is
// determined by the sequence of run_next indices).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/task.hpp"

namespace turnstile_test {

class Lcg {
 public:
  explicit Lcg(std::uint64_t seed) : s_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  std::size_t below(std::size_t n) {
    s_ = s_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((s_ >> 33) % n);
  }

 private:
  std::uint64_t s_;
};

inline std::vector<std::size_t> run_random(turnstile::ManualScheduler& ms, Lcg& rng) {
  std::vector<std::size_t> choices;
  while (const std::size_t n = ms.ready()) {
    const std::size_t i = rng.below(n);
    choices.push_back(i);
    ms.run_next(i);
  }
  return choices;
}

inline void replay(turnstile::ManualScheduler& ms, const std::vector<std::size_t>& choices) {
  for (std::size_t i : choices) ms.run_next(i);
}

inline std::size_t run_detached(turnstile::ManualScheduler& ms, turnstile::Task<> task) {
  turnstile::detach(ms, std::move(task));
  return ms.run_until_idle();
}

// Returns the number of steps run.
inline std::size_t run_schedule(turnstile::ManualScheduler& ms, unsigned mask, unsigned bits) {
  std::size_t steps = 0;
  for (unsigned i = 0; i < bits && ms.ready() > 0; ++i, ++steps) {
    ms.run_next(((mask >> i) & 1u) != 0 ? ms.ready() - 1 : 0);
  }
  return steps + ms.run_until_idle();
}

template <typename Check>
std::size_t run_each_step(turnstile::ManualScheduler& ms, Check&& check) {
  std::size_t steps = 0;
  while (ms.ready() > 0) {
    ms.run_next();
    ++steps;
    check();
  }
  return steps;
}

}  // namespace turnstile_test
