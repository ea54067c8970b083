// explore_gtest_test.cpp: the GoogleTest glue (turnstile/testing/explore_gtest.hpp).
#include "turnstile/testing/explore_gtest.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "explore_support.hpp"

namespace explore_test {
namespace {

ExploreOptions two_steppers_options() {
  ExploreOptions o = bounded(SIZE_MAX);
  o.honour_replay_env = true;
  return o;
}

// spec: [EXP-5.1]
TURNSTILE_EXPLORE_TEST(ExploreGtest, APassingExplorationIsAPassingTest, two_steppers_options(),
                       [](ManualScheduler& s) {
                         std::string log;
                         detach(s, stepper('A', 2, &log));
                         detach(s, stepper('B', 2, &log));
                         s.run_until_quiescent();
                         check_that(log.size() == 4, "every step ran");
                       });

// Fails when B goes first: one deviation.
void b_must_not_go_first(ManualScheduler& s) {
  std::string log;
  detach(s, stepper('A', 2, &log));
  detach(s, stepper('B', 2, &log));
  s.run_until_quiescent();
  check_that(log[0] == 'A', "B went first");
}

void failing_exploration() { expect_explore_passes(two_steppers_options(), b_must_not_go_first); }

// spec: [EXP-5.1] [EXP-4.4]
TEST(ExploreGtest, AFailingExplorationFailsTheTestWithTokenScheduleAndTrace) {
  ::setenv("TURNSTILE_EXPLORE_TRACE_DIR", ::testing::TempDir().c_str(), 1);
  EXPECT_NONFATAL_FAILURE(failing_exploration(), "TURNSTILE_EXPLORE_REPLAY=ex1-0.1");
  EXPECT_NONFATAL_FAILURE(failing_exploration(), "choice point 0: item 1 of 2 ready");
  EXPECT_NONFATAL_FAILURE(failing_exploration(), ".trace.jsonl");
  ::unsetenv("TURNSTILE_EXPLORE_TRACE_DIR");
  const std::string path = ::testing::TempDir() + "ExploreGtest." +
                           "AFailingExplorationFailsTheTestWithTokenScheduleAndTrace.trace.jsonl";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find(R"("ev":"trace")"), std::string::npos) << path;
}

// spec: [EXP-5.1] [EXP-4.3]
TEST(ExploreGtest, TheReplayVariableRunsOneScheduleInTheTest) {
  ::setenv("TURNSTILE_EXPLORE_REPLAY", "ex1", 1);
  const ExploreResult r = expect_explore_passes(two_steppers_options(), b_must_not_go_first);
  ::unsetenv("TURNSTILE_EXPLORE_REPLAY");
  EXPECT_TRUE(r.replayed);
  EXPECT_EQ(r.schedules, 1u);
  EXPECT_FALSE(r.failure);  // FIFO (ex1) passes
}

}  // namespace
}  // namespace explore_test
