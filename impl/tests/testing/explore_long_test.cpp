// explore_long_test.cpp: the deep search, sized from the environment, so ci/test
// runs it small and ci/check deep and sharded:
//   TURNSTILE_EXPLORE_LONG_BOUND=<k>   the deviation bound (default 3)
//   TURNSTILE_EXPLORE_SHARD=<K>/<N>    this run's shard of each search (default 0/1)
//   TURNSTILE_EXPLORE_LONG_STEPS=<n>   steps per fiber of the three-fiber count (default 2)
// Every fixed gallery program (explore_gallery.hpp) must pass the complete search
// of its shard, and three fibers of n steps must give the count of an independent
// enumeration (the whole count unsharded; distinct, bounded schedules in a shard).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>
#include <vector>
#include <string>

#include "explore_gallery.hpp"
#include "explore_support.hpp"

namespace explore_test {
namespace {

std::size_t env_number(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::stoul(v) : fallback;
}

Shard env_shard() {
  const char* v = std::getenv("TURNSTILE_EXPLORE_SHARD");
  if (v == nullptr || *v == '\0') return {};
  const std::string s(v);
  const auto slash = s.find('/');
  return {static_cast<unsigned>(std::stoul(s.substr(0, slash))),
          static_cast<unsigned>(std::stoul(s.substr(slash + 1)))};
}

// spec: [EXP-3.1] [EXP-3.5]
TEST(ExploreLong, FixedGalleryProgramsPassTheDeepSearchOfTheirShard) {
  namespace g = explore_gallery;
  const std::pair<const char*, Task<> (*)(ManualScheduler&)> fixed[] = {
      {"check-then-act", g::check_then_act<true>},
      {"lost-update", g::lost_update<true>},
      {"event-behind-turn", g::event_behind_turn<true>},
      {"handoff-without-capture", g::handoff_without_capture<true>},
      {"close-races-try-post", g::close_races_try_post<true>}};
  ExploreOptions o = bounded(env_number("TURNSTILE_EXPLORE_LONG_BOUND", 3));
  o.shard = env_shard();
  for (const auto& [name, program] : fixed) {
    const ExploreResult r = explore(o, program);
    EXPECT_FALSE(r.failure) << name << ": " << r.summary();
    EXPECT_TRUE(r.complete) << name;
    std::cout << "[ explore  ] " << name << " k=" << o.max_deviations << " shard "
              << o.shard.index << "/" << o.shard.count << ": " << r.summary();
  }
}

// An independent count: simulate the ready queue (a fiber that ran goes to the
// back while it has steps left) and count the index sequences with at most k
// non-zero choices where more than one fiber is ready.
std::size_t enumerate(std::vector<int> queue_left, std::size_t k) {
  if (queue_left.empty()) return 1;
  std::size_t n = 0;
  const std::size_t width = queue_left.size();
  for (std::size_t i = 0; i < width; ++i) {
    const bool deviation = width > 1 && i != 0;
    if (deviation && k == 0) continue;
    std::vector<int> next = queue_left;
    int left = next[i] - 1;
    next.erase(next.begin() + static_cast<std::ptrdiff_t>(i));
    if (left > 0) next.push_back(left);
    n += enumerate(next, deviation ? k - 1 : k);
  }
  return n;
}

// spec: [EXP-3.1] [EXP-3.5]
TEST(ExploreLong, ThreeFibersGiveTheCountOfAnIndependentEnumeration) {
  Steppers p;
  p.fibers = 3;
  p.n = static_cast<int>(env_number("TURNSTILE_EXPLORE_LONG_STEPS", 2));
  const std::size_t k = env_number("TURNSTILE_EXPLORE_LONG_BOUND", 3);
  ExploreOptions o = bounded(k);
  o.shard = env_shard();
  o.shard_depth = 8;  // many prefixes: the shards come out even
  std::set<std::string> tokens;
  o.on_schedule = [&](const Schedule& s) {
    EXPECT_LE(s.deviations(), k);
    tokens.insert(s.token());
  };
  const ExploreResult r = explore(o, std::ref(p));
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.failure);
  EXPECT_EQ(tokens.size(), r.schedules);
  const std::size_t expected = enumerate({p.n, p.n, p.n}, k);
  if (o.shard.count == 1) {  // (a shard also runs one schedule per prefix it does not own)
    EXPECT_EQ(distinct(p.seen), r.schedules);
    EXPECT_EQ(r.schedules, expected);
  }
  EXPECT_LE(r.schedules, expected);
  std::cout << "[ explore  ] three fibers of " << p.n << " steps, k=" << k << " shard "
            << o.shard.index << "/" << o.shard.count << " (of " << expected << "): " << r.summary();
}

}  // namespace
}  // namespace explore_test
