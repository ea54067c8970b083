// impl/tests/testing/explore_support.hpp: programs the testing module's tests
// explore. Steppers: fibers of n steps that log their name at every step, so a
// run's interleaving is a string ("ABAB").
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/task.hpp"
#include "turnstile/testing/explore.hpp"

namespace explore_test {

using namespace turnstile;
using namespace turnstile::testing;

// n items: log, then yield (repost at the back), n - 1 times, then log and end.
inline Task<> stepper(char name, int n, std::string* log) {
  for (int i = 0; i < n; ++i) {
    log->push_back(name);
    if (i + 1 < n) co_await yield();
  }
}

// Fibers named 'A', 'B', ... of n steps each, started in that order; the
// interleaving of each run goes to `seen` (one entry per run).
struct Steppers {
  int fibers = 2;
  int n = 2;
  std::string log;
  std::vector<std::string> seen;

  void operator()(ManualScheduler& s) {
    log.clear();
    for (int f = 0; f < fibers; ++f) detach(s, stepper(static_cast<char>('A' + f), n, &log));
    s.run_until_quiescent();
    seen.push_back(log);
  }
};

inline std::size_t binomial(std::size_t n, std::size_t k) {
  std::size_t r = 1;
  for (std::size_t i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

inline std::size_t distinct(const std::vector<std::string>& v) {
  return std::set<std::string>(v.begin(), v.end()).size();
}

// The options of an exhaustive search at bound k, with no replay variable.
inline ExploreOptions bounded(std::size_t k) {
  ExploreOptions o;
  o.strategy = Strategy::exhaustive;
  o.max_deviations = k;
  o.max_schedules = 0;
  o.honour_replay_env = false;
  return o;
}

}  // namespace explore_test
