// explore_failures_test.cpp: where the program runs (spec/testing.md §1), what
// fails a run (§2) and the strategies' budgets and shards (§3).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

#include "explore_support.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/sync_wait.hpp"

namespace explore_test {
namespace {

// spec: [EXP-1.3]
TEST(ExploreProgram, EachRunGetsANewSchedulerOnTheCallingThreadInBothForms) {
  const auto me = std::this_thread::get_id();
  std::set<ManualScheduler*> seen;
  int runs = 0;
  const auto plain = [&](ManualScheduler& s) {
    EXPECT_EQ(std::this_thread::get_id(), me);
    EXPECT_EQ(s.steps(), 0u);
    EXPECT_EQ(s.now(), Scheduler::Clock::time_point{});
    ++runs;
    std::string log;
    detach(s, stepper('A', 2, &log));
    detach(s, stepper('B', 2, &log));
    s.run_until_quiescent();
  };
  EXPECT_EQ(explore(bounded(SIZE_MAX), plain).schedules, 6u);
  EXPECT_EQ(runs, 6);
  std::string log;
  const auto task = [&](ManualScheduler& s) -> Task<> {
    EXPECT_EQ(std::this_thread::get_id(), me);
    log.clear();
    detach(s, stepper('A', 2, &log));
    co_await yield();
    log.push_back('m');  // the program's own fiber is explored with the others
  };
  std::set<std::string> logs;
  ExploreOptions o = bounded(SIZE_MAX);
  o.on_schedule = [&](const Schedule&) { logs.insert(log); };
  const ExploreResult r = explore(o, task);
  EXPECT_TRUE(r.complete);
  EXPECT_FALSE(r.failure);
  // m before A's start too: the program's yield lets A start, or runs on first.
  EXPECT_EQ(logs, (std::set<std::string>{"AAm", "AmA", "mAA"}));
}

// spec: [EXP-2.1]
TEST(ExploreFailure, AnExceptionEscapingTheProgramOrAFiberFailsTheRun) {
  Steppers p;
  const auto plain = [&p](ManualScheduler& s) {
    p(s);
    if (p.log[0] == 'B') throw std::runtime_error("B went first");
  };
  ExploreResult r = explore(bounded(1), plain);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::exception);
  EXPECT_NE(r.failure->message.find("B went first"), std::string::npos);
  const auto fiber = [](ManualScheduler& s) -> Task<> {
    auto first = std::make_shared<char>(0);
    auto runner = [](char me, std::shared_ptr<char> f) -> Task<> {
      if (*f == 0) *f = me;
      if (*f == 'B') throw std::logic_error("B won the race");
      co_return;
    };
    detach(s, runner('A', first));
    detach(s, runner('B', first));
    co_return;
  };
  r = explore(bounded(1), fiber);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::exception);
  EXPECT_NE(r.failure->message.find("a detached fiber"), std::string::npos) << r.failure->message;
  EXPECT_EQ(r.failure->shrunk.deviations(), 1u);
}

// spec: [EXP-2.2] [EXP-1.3]
TEST(ExploreFailure, QuiescentWithAFiberUnfinishedIsAHangAndTheFrameIsLeaked) {
  static int destroyed = 0;
  struct Witness {
    ~Witness() { ++destroyed; }
  };
  destroyed = 0;
  const auto program = [](ManualScheduler& s) -> Task<> {
    Witness w;
    Event go;
    bool waiting = false;
    auto setter = [](Event* e, bool* w) -> Task<> {
      if (*w) e->set();  // sets only if the waiter is already waiting: a lost wake-up
      co_return;
    };
    detach(s, setter(&go, &waiting));
    co_await yield();
    waiting = true;
    co_await go.wait();
  };
  const ExploreResult r = explore(bounded(2), program);
  ASSERT_TRUE(r.failure) << r.summary();
  EXPECT_EQ(r.failure->kind, FailureKind::hang);
  EXPECT_NE(r.failure->message.find("1 fiber(s) have not finished"), std::string::npos);
  EXPECT_EQ(r.failure->shrunk.deviations(), 0u);  // FIFO: the setter runs first
  EXPECT_LT(destroyed, static_cast<int>(r.runs));  // the hung runs' frames were never destroyed
}

// spec: [EXP-2.2]
TEST(ExploreFailure, ASyncWaitThatCanNeverCompleteIsAHang) {
  auto never = std::make_shared<Event>();
  const auto program = [never](ManualScheduler& s) {
    auto wait = [](std::shared_ptr<Event> e) -> Task<> { co_await e->wait(); };
    sync_wait(s, wait(never));
  };
  const ExploreResult r = explore(bounded(0), program);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::hang) << r.failure->message;
}

// spec: [EXP-2.3]
TEST(ExploreFailure, ACaughtReentrancyErrorFailsOnlyWhenAsked) {
  const auto program = [](ManualScheduler& s) -> Task<> {
    StateLane lane("L", s);
    Task<> turn = lane.run([&lane] {
      try {
        auto nested = lane.run([] { return 0; });  // refused: the lane's own turn
      } catch (const LaneReentrancyError&) {
      }
    });
    co_await std::move(turn);
    Task<> closing = lane.close();
    co_await std::move(closing);
  };
  ExploreOptions o = bounded(1);
  EXPECT_FALSE(explore(o, program).failure);
  o.fail_on_reentrancy = true;
  const ExploreResult r = explore(o, program);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::reentrancy);
  EXPECT_NE(r.failure->message.find("LaneReentrancyError"), std::string::npos);
}

// spec: [EXP-2.4]
TEST(ExploreFailure, CheckThatAndTheOptionsCheckFailTheRun) {
  Steppers p;
  const auto program = [&p](ManualScheduler& s) {
    p(s);
    check_that(p.log.substr(0, 2) != "AA", "A ran twice in a row");
  };
  ExploreResult r = explore(bounded(2), program);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::check);
  EXPECT_EQ(r.failure->message, "A ran twice in a row");
  ExploreOptions o = bounded(2);
  o.check = [&p] { check_that(p.log.back() != 'A', "A ran last"); };
  r = explore(o, std::ref(p));
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::check);
  EXPECT_EQ(r.failure->message, "A ran last");
  EXPECT_EQ(r.failure->shrunk.deviations(), 1u);
}

// spec: [EXP-2.5]
TEST(ExploreFailure, ALivelockStopsAtTheStepLimit) {
  const auto program = [](ManualScheduler&) -> Task<> {
    for (;;) co_await yield();
  };
  ExploreOptions o = bounded(0);
  o.max_steps = 500;
  const ExploreResult r = explore(o, program);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::step_limit);
}

// spec: [EXP-2.5] [EXP-4.3]
TEST(ExploreFailure, AProgramWhoseTreeChangesBetweenRunsIsNondeterminism) {
  int run = 0;
  const auto program = [&run](ManualScheduler& s) {
    std::string log;
    detach(s, stepper('A', 2, &log));
    if (run++ == 0) detach(s, stepper('B', 2, &log));  // only the first run has two fibers
    s.run_until_quiescent();
  };
  const ExploreResult r = explore(bounded(1), program);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::nondeterminism);
  EXPECT_NE(r.failure->message.find("not deterministic"), std::string::npos);
}

// spec: [EXP-3.4]
TEST(ExploreStrategy, BudgetsStopTheSearchAndSayItIsIncomplete) {
  Steppers p;
  p.n = 5;
  ExploreOptions o = bounded(SIZE_MAX);
  o.max_schedules = 7;
  ExploreResult r = explore(o, std::ref(p));
  EXPECT_EQ(r.schedules, 7u);
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_FALSE(r.complete);
  p.n = 8;  // C(16, 8) = 12870 schedules: far more than a millisecond
  o.max_schedules = 0;
  o.max_time = std::chrono::milliseconds(1);
  r = explore(o, std::ref(p));
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_LT(r.schedules, 12870u);
  o.strategy = Strategy::random;
  o.max_time = std::chrono::milliseconds(0);
  o.max_schedules = 20;
  EXPECT_EQ(explore(o, std::ref(p)).schedules, 20u);
}

// spec: [EXP-3.5]
TEST(ExploreStrategy, ShardsPartitionTheTreeAndTogetherCoverIt) {
  for (unsigned depth : {1u, 3u, 9u}) {
    std::set<std::string> all;
    std::size_t total = 0;
    for (unsigned k = 0; k < 3; ++k) {
      Steppers p;
      p.n = 5;
      ExploreOptions o = bounded(SIZE_MAX);
      o.shard = {k, 3};
      o.shard_depth = depth;
      std::set<std::string> mine;
      o.on_schedule = [&mine](const Schedule& s) { mine.insert(s.token()); };
      const ExploreResult r = explore(o, std::ref(p));
      EXPECT_TRUE(r.complete);
      EXPECT_EQ(mine.size(), r.schedules);
      // At depth 1 there are only two prefixes (A or B first): shard 2 owns none.
      if (depth > 1) {
        EXPECT_GT(r.schedules, 0u) << "shard " << k << " depth " << depth;
      }
      for (const std::string& t : mine) EXPECT_TRUE(all.insert(t).second) << "two shards ran " << t;
      total += r.schedules;
    }
    EXPECT_EQ(total, 252u);
    EXPECT_EQ(all.size(), 252u);
  }
  ExploreOptions bad = bounded(1);
  bad.shard = {3, 3};
  Steppers p;
  EXPECT_THROW(explore(bad, std::ref(p)), std::invalid_argument);
}

// spec: [EXP-3.2]
TEST(ExploreStrategy, PctAtDepthDSwitchesChainsAtMostDMinusOneTimesPerFiber) {
  for (unsigned d : {1u, 2u, 3u}) {
    Steppers p;
    p.n = 4;
    ExploreOptions o = bounded(0);
    o.strategy = Strategy::pct;
    o.pct_depth = d;
    o.seed = 7;
    o.max_schedules = 200;
    const ExploreResult r = explore(o, std::ref(p));
    EXPECT_EQ(r.schedules, 200u);
    std::size_t most = 0;
    for (const std::string& s : p.seen) {
      std::size_t switches = 0;
      for (std::size_t i = 1; i < s.size(); ++i) switches += s[i] != s[i - 1] ? 1 : 0;
      most = std::max(most, switches);
    }
    // Two chains: the higher one runs until a change point lowers it.
    EXPECT_EQ(most, d) << "d=" << d;
  }
}

// spec: [EXP-3.2] [EXP-3.3]
TEST(ExploreStrategy, SeededStrategiesRepeatTheirSchedulesAndSeedsDiffer) {
  for (Strategy st : {Strategy::pct, Strategy::random}) {
    const auto run = [st](std::uint64_t seed) {
      Steppers p;
      p.n = 4;
      ExploreOptions o = bounded(0);
      o.strategy = st;
      o.seed = seed;
      o.max_schedules = 40;
      explore(o, std::ref(p));
      return p.seen;
    };
    EXPECT_EQ(run(1), run(1)) << to_string(st);
    EXPECT_NE(run(1), run(2)) << to_string(st);
  }
}

// spec: [EXP-3.3]
TEST(ExploreStrategy, RandomReachesEveryScheduleOfASmallTree) {
  Steppers p;
  p.n = 3;
  ExploreOptions o = bounded(0);
  o.strategy = Strategy::random;
  o.seed = 3;
  o.max_schedules = 400;
  explore(o, std::ref(p));
  EXPECT_EQ(distinct(p.seen), 20u);  // C(6, 3)
}

}  // namespace
}  // namespace explore_test
