// explore_report_test.cpp: what a failure reports (spec/testing.md §4): the
// token and its replay, the schedule shrunk to its fewest deviations with the
// same kind of failure, the trace of the shrunk run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>

#include "explore_support.hpp"

namespace explore_test {
namespace {

// spec: [EXP-4.3]
TEST(ExploreToken, ATokenNamesItsDeviationsAndParsesBack) {
  Schedule s;
  s.choices = {0, 2, 0, 1, 0, 0};
  EXPECT_EQ(s.token(), "ex1-1.2-3.1");
  EXPECT_EQ(s.deviations(), 2u);
  const auto back = Schedule::from_token("ex1-1.2-3.1");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->choices, (std::vector<std::uint32_t>{0, 2, 0, 1}));
  EXPECT_TRUE(*back == s);  // trailing FIFO choices are implied
  EXPECT_EQ(Schedule::from_token("ex1")->choices.size(), 0u);
  for (const char* bad : {"", "ex2", "ex1-", "ex1-3", "ex1-3.0", "ex1-3.1-2.1", "ex1-a.1", "ex1-1.1x"})
    EXPECT_FALSE(Schedule::from_token(bad)) << bad;
}

// spec: [EXP-4.3] [EXP-1.1]
TEST(ExploreToken, ReplayingEveryTokenOfATreeRunsExactlyItsSchedule) {
  Steppers p;
  p.n = 3;
  std::map<std::string, std::string> by_token;  // token -> interleaving
  ExploreOptions o = bounded(SIZE_MAX);
  o.on_schedule = [&](const Schedule& s) { by_token[s.token()] = p.log; };
  explore(o, std::ref(p));
  ASSERT_EQ(by_token.size(), 20u);
  for (const auto& [token, interleaving] : by_token) {
    const auto s = Schedule::from_token(token);
    ASSERT_TRUE(s) << token;
    const ExploreResult r = replay(bounded(0), std::ref(p), *s);
    EXPECT_TRUE(r.replayed);
    EXPECT_EQ(r.schedules, 1u);
    EXPECT_EQ(p.log, interleaving) << token;
  }
}

// spec: [EXP-4.3]
TEST(ExploreToken, TheReplayVariableReplacesTheSearch) {
  Steppers p;
  p.n = 3;
  ExploreOptions o = bounded(SIZE_MAX);
  o.honour_replay_env = true;
  ::setenv("TURNSTILE_EXPLORE_REPLAY", "ex1-0.1-2.1", 1);
  const ExploreResult r = explore(o, std::ref(p));
  EXPECT_TRUE(r.replayed);
  EXPECT_EQ(r.schedules, 1u);
  EXPECT_EQ(p.log, "BAABAB");  // B first (point 0), A twice (point 2)
  ::setenv("TURNSTILE_EXPLORE_REPLAY", "not-a-token", 1);
  EXPECT_THROW(explore(o, std::ref(p)), std::invalid_argument);
  ::unsetenv("TURNSTILE_EXPLORE_REPLAY");
  EXPECT_EQ(explore(o, std::ref(p)).schedules, 20u);
}

// A program with two ways to fail: a check that needs two deviations (a
// repeat of A and a repeat of B among steps 1 to 4, before either fiber has
// finished, so each repeat is a deviation), and an exception that needs one,
// at the first choice point (B first), which the depth-first search reaches last.
struct TwoKinds {
  Steppers p{2, 4, {}, {}};
  void operator()(ManualScheduler& s) {
    p(s);
    if (p.log[0] == 'B') throw std::runtime_error("B started");
    const std::string tail = p.log.substr(1, 4);
    check_that(tail.find("AA") == std::string::npos || tail.find("BB") == std::string::npos,
               "both fibers ran twice in a row");
  }
};

// spec: [EXP-4.2] [EXP-4.1]
TEST(ExploreShrink, TheShrunkScheduleKeepsTheKindOfFailure) {
  TwoKinds program;
  ExploreOptions o = bounded(3);
  const ExploreResult r = explore(o, std::ref(program));
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->kind, FailureKind::check);
  EXPECT_EQ(r.failure->shrunk_kind, FailureKind::check) << r.summary();
  EXPECT_EQ(r.failure->shrunk_message, "both fibers ran twice in a row");
  EXPECT_EQ(r.failure->shrunk.deviations(), 2u);
  EXPECT_TRUE(r.failure->minimal);
  // The shrunk token replays the same failure.
  const ExploreResult again = replay(bounded(0), std::ref(program), r.failure->shrunk);
  ASSERT_TRUE(again.failure);
  EXPECT_EQ(again.failure->kind, FailureKind::check);
}

// spec: [EXP-4.2]
TEST(ExploreShrink, AFailureFoundDeepIsShrunkToItsFewestDeviations) {
  // Fails whenever A's last step comes after B's last: the depth-first search
  // finds one with deviations at its deepest choice points.
  Steppers p;
  p.n = 4;
  const auto program = [&p](ManualScheduler& s) {
    p(s);
    check_that(p.log.back() != 'A', "A finished last");
  };
  ExploreOptions o = bounded(SIZE_MAX);
  o.strategy = Strategy::random;
  o.seed = 11;
  o.max_schedules = 1000;
  const ExploreResult r = explore(o, program);
  ASSERT_TRUE(r.failure);
  EXPECT_EQ(r.failure->shrunk.deviations(), 1u) << r.summary();
  EXPECT_LE(r.failure->shrunk.deviations(), r.failure->found.deviations());
  EXPECT_TRUE(r.failure->minimal);
  EXPECT_EQ(r.failure->shrunk_kind, FailureKind::check);
}

// spec: [EXP-4.4] [EXP-4.1]
TEST(ExploreReport, TheFailureCarriesTheShrunkRunsTraceAndASummary) {
  Steppers p;
  const auto program = [&p](ManualScheduler& s) {
    p(s);
    check_that(p.log != "BABA", "B first");
  };
  const ExploreResult r = explore(bounded(1), program);
  ASSERT_TRUE(r.failure);
  const std::string& t = r.failure->trace;
  EXPECT_EQ(t.rfind(R"({"seq":1,"ev":"trace")", 0), 0u) << t.substr(0, 200);
  EXPECT_NE(t.find(R"("ev":"fiber.spawn")"), std::string::npos);
  EXPECT_NE(t.find(R"("ev":"end","status":"quiescent")"), std::string::npos);
  std::istringstream lines(t);
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) EXPECT_EQ(line.front(), '{');
  EXPECT_GE(n, 4u);
  const std::string sum = r.summary();
  EXPECT_NE(sum.find("FAILED (check): B first"), std::string::npos) << sum;
  EXPECT_NE(sum.find("TURNSTILE_EXPLORE_REPLAY=" + r.failure->token()), std::string::npos);
  EXPECT_NE(sum.find("choice point 0: item 1 of 2 ready"), std::string::npos) << sum;
  ExploreOptions quiet = bounded(1);
  quiet.trace = false;
  EXPECT_TRUE(explore(quiet, program).failure->trace.empty());
}

}  // namespace
}  // namespace explore_test
