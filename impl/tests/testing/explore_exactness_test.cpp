// explore_exactness_test.cpp: the exhaustive search explores exactly the
// schedules it says (spec/testing.md §1, §3), on programs whose counts are known
// in closed form: two fibers of n steps each.
//
// The counts. A fiber's step ends with a yield, which reposts it at the back,
// so after either fiber runs the *other* one is the oldest ready item: FIFO
// alternates A B A B ..., and a deviation [EXP-1.1] is running the fiber that
// just ran again (or B first). A run is an interleaving of n A's and n B's;
// steps after one fiber has finished are not choice points. Counting the
// interleavings by their runs of equal letters inside the choice region:
//   - every interleaving (unbounded): C(2n, n);
//   - 0 deviations: ABAB...AB, exactly 1;
//   - exactly 1: B first then alternation (1), or A first with one letter
//     repeated at any of the 2n - 2 steps where both fibers still have a step
//     (2n - 2): 2n - 1, so at most 1 deviation: N1(n) = 2n;
//   - exactly 2: B first and one repeat (2n - 2), or A first and two repeats:
//     both on A's runs (C(n - 1, 2): two extra A's among A's n - 2 runs, A ends
//     the region), both on B's (C(n - 1, 2)), one each ((n - 1)(n - 2)); in all
//     2(n - 1)(n - 2) + 2(n - 1) = 2(n - 1)^2, so N2(n) = 2n^2 - 2n + 2.
// Each test also checks the search visited every schedule once: as many
// distinct interleavings and distinct tokens as schedules.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "explore_support.hpp"

namespace explore_test {
namespace {

struct Counted {
  ExploreResult result;
  std::vector<std::string> interleavings;
  std::set<std::string> tokens;
};

Counted count(int n, std::size_t k) {
  Steppers p;
  p.n = n;
  Counted c;
  ExploreOptions o = bounded(k);
  o.on_schedule = [&c](const Schedule& s) { c.tokens.insert(s.token()); };
  c.result = explore(o, std::ref(p));
  c.interleavings = p.seen;
  return c;
}

void expect_count(int n, std::size_t k, std::size_t expected) {
  const Counted c = count(n, k);
  EXPECT_FALSE(c.result.failure) << c.result.summary();
  EXPECT_TRUE(c.result.complete);
  EXPECT_EQ(c.result.schedules, expected) << "n=" << n << " k=" << k;
  EXPECT_EQ(c.interleavings.size(), expected);
  EXPECT_EQ(distinct(c.interleavings), expected) << "a schedule was run twice";
  EXPECT_EQ(c.tokens.size(), expected) << "two runs had the same token";
}

// spec: [EXP-3.1] [EXP-1.1]
TEST(ExploreExactness, UnboundedTwoFibersOfNStepsGiveEveryInterleavingOnce) {
  for (int n = 1; n <= 6; ++n) expect_count(n, SIZE_MAX, binomial(2 * n, n));
}

// spec: [EXP-3.1] [EXP-1.1]
TEST(ExploreExactness, BoundZeroIsTheFifoScheduleAlone) {
  for (int n = 1; n <= 6; ++n) {
    const Counted c = count(n, 0);
    EXPECT_EQ(c.result.schedules, 1u);
    std::string fifo;
    for (int i = 0; i < n; ++i) fifo += "AB";
    ASSERT_EQ(c.interleavings.size(), 1u);
    EXPECT_EQ(c.interleavings[0], fifo);
    EXPECT_EQ(*c.tokens.begin(), "ex1");
  }
}

// spec: [EXP-3.1] [EXP-1.1]
TEST(ExploreExactness, BoundOneGivesTwoNSchedules) {
  for (int n = 1; n <= 6; ++n) expect_count(n, 1, 2 * static_cast<std::size_t>(n));
}

// spec: [EXP-3.1] [EXP-1.1]
TEST(ExploreExactness, BoundTwoGivesTwoNSquaredMinusTwoNPlusTwoSchedules) {
  for (int n = 1; n <= 6; ++n) {
    const auto m = static_cast<std::size_t>(n);
    expect_count(n, 2, std::min(2 * m * m - 2 * m + 2, binomial(2 * m, m)));
  }
}

// spec: [EXP-3.1] [EXP-1.1]
TEST(ExploreExactness, EachScheduleHasAtMostKDeviationsAndTheBoundsNest) {
  const Counted all = count(5, SIZE_MAX);
  std::size_t by_bound[3] = {0, 0, 0};
  Steppers p;
  p.n = 5;
  ExploreOptions o = bounded(SIZE_MAX);
  o.on_schedule = [&](const Schedule& s) {
    for (std::size_t k = 0; k < 3; ++k) by_bound[k] += s.deviations() <= k ? 1 : 0;
  };
  explore(o, std::ref(p));
  EXPECT_EQ(by_bound[0], 1u);
  EXPECT_EQ(by_bound[1], 10u);  // N1(5) = 2n
  EXPECT_EQ(by_bound[2], 42u);  // N2(5) = 2n^2 - 2n + 2
  EXPECT_EQ(all.result.schedules, 252u);  // C(10, 5)
  // The bounded searches visit exactly the schedules of the unbounded one within the bound.
  const Counted two = count(5, 2);
  for (const std::string& t : two.tokens) EXPECT_TRUE(all.tokens.count(t)) << t;
}

// spec: [EXP-3.1]
TEST(ExploreExactness, ThreeFibersUnboundedGiveTheMultinomialCount) {
  Steppers p;
  p.fibers = 3;
  p.n = 2;
  ExploreResult r = explore(bounded(SIZE_MAX), std::ref(p));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.schedules, 90u);  // 6! / (2! 2! 2!)
  EXPECT_EQ(distinct(p.seen), 90u);
}

// spec: [EXP-1.1] [EXP-1.2]
TEST(ExploreExactness, TimersDueTogetherAreAChoicePointAndLaterOnesAreNot) {
  std::string log;
  const auto program = [&log](ManualScheduler& s) {
    log.clear();
    using namespace std::chrono_literals;
    s.call_after(5ms, [&log] { log += 'x'; });
    s.call_after(5ms, [&log] { log += 'y'; });
    s.call_after(9ms, [&log] { log += 'z'; });
    s.run_until_quiescent();  // time moves only when nothing is ready
    EXPECT_EQ(s.now().time_since_epoch(), std::chrono::nanoseconds(9ms));
  };
  std::set<std::string> seen;
  ExploreOptions o = bounded(SIZE_MAX);
  o.on_schedule = [&](const Schedule& s) {
    seen.insert(log);
    EXPECT_LE(s.choices.size(), 1u);
  };
  const ExploreResult r = explore(o, program);
  EXPECT_EQ(r.schedules, 2u);
  EXPECT_EQ(seen, (std::set<std::string>{"xyz", "yxz"}));
}

// spec: [EXP-1.2]
TEST(ExploreExactness, RunNextCalledDirectlyIsTheProgramsOwnChoice) {
  Steppers p;
  p.n = 3;
  // The program picks its first two steps itself; only the rest is explored.
  const auto program = [&p](ManualScheduler& s) {
    p.log.clear();
    detach(s, stepper('A', 3, &p.log));
    detach(s, stepper('B', 3, &p.log));
    s.run_next(1);  // B first
    s.run_next(0);  // then A
    s.run_until_quiescent();
    p.seen.push_back(p.log);
  };
  const ExploreResult r = explore(bounded(SIZE_MAX), program);
  for (const std::string& s : p.seen) EXPECT_EQ(s.substr(0, 2), "BA");
  EXPECT_EQ(r.schedules, binomial(4, 2));  // the 2 + 2 steps left
}

}  // namespace
}  // namespace explore_test
