// explore_gallery_test.cpp: the explorer's power on a gallery of realistic user
// bugs (explore_gallery.hpp). Each bug is found by the exhaustive search at the
// smallest bound that can find it (the complete search one below finds
// nothing), shrunk to exactly that many deviations, replayed from its token,
// and found by PCT (depth 3, seed 1) and random (seed 1) within a stated
// number of schedules. The figures (schedules, time) are printed and recorded
// as test properties.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "explore_gallery.hpp"
#include "explore_support.hpp"

namespace explore_test {
namespace {

struct Bug {
  const char* name;
  Task<> (*program)(ManualScheduler&);
  Task<> (*fixed)(ManualScheduler&);  // the same program with the bug fixed
  std::size_t bound;      // the fewest deviations that show it
  FailureKind kind;
  std::size_t pct_within;     // PCT d=3 seed 1 finds it within this many schedules
  std::size_t random_within;  // random seed 1 likewise
};

void expect_found_at_its_bound(const Bug& bug) {
  SCOPED_TRACE(bug.name);
  if (bug.bound > 0) {
    const ExploreResult below = explore(bounded(bug.bound - 1), bug.program);
    EXPECT_FALSE(below.failure) << below.summary();
    EXPECT_TRUE(below.complete);
  }
  const ExploreResult r = explore(bounded(bug.bound), bug.program);
  ASSERT_TRUE(r.failure) << r.summary();
  EXPECT_EQ(r.failure->kind, bug.kind) << r.summary();
  EXPECT_EQ(r.failure->shrunk.deviations(), bug.bound) << r.summary();
  EXPECT_TRUE(r.failure->minimal);
  EXPECT_FALSE(r.failure->trace.empty());
  // Replayed from its token: the same failure.
  const auto s = Schedule::from_token(r.failure->token());
  ASSERT_TRUE(s);
  const ExploreResult again = replay(bounded(0), bug.program, *s);
  ASSERT_TRUE(again.failure) << r.failure->token();
  EXPECT_EQ(again.failure->kind, bug.kind);
  EXPECT_EQ(again.failure->found.token(), r.failure->token());
  std::cout << "[ gallery  ] " << bug.name << ": exhaustive k=" << bug.bound << " "
            << r.summary();
  // No false alarm: the fixed program passes the complete search one bound higher.
  const ExploreResult fixed = explore(bounded(bug.bound + 1), bug.fixed);
  EXPECT_FALSE(fixed.failure) << fixed.summary();
  EXPECT_TRUE(fixed.complete);
  EXPECT_GT(fixed.schedules, r.schedules);
}

void expect_sampled(const Bug& bug, Strategy st, std::size_t within) {
  SCOPED_TRACE(std::string(bug.name) + " " + to_string(st));
  ExploreOptions o = bounded(0);
  o.strategy = st;
  o.pct_depth = 3;
  o.seed = 1;
  o.max_schedules = within;
  o.shrink = false;
  o.trace = false;
  const ExploreResult r = explore(o, bug.program);
  ASSERT_TRUE(r.failure) << "not found within " << within << " schedules";
  EXPECT_EQ(r.failure->kind, bug.kind) << r.summary();
  std::cout << "[ gallery  ] " << bug.name << ": " << to_string(st) << " found after "
            << r.schedules << " schedule(s), "
            << std::chrono::duration<double, std::milli>(r.elapsed).count() << " ms\n";
}

// The bounds. Each program is written so that FIFO order passes (the later
// party arrives after a few yields), as it would in a quick manual test; the
// bound is the number of reorderings the bug needs, which the complete search
// one below proves. Wait-on-event needs one (the waiter's call arrives first);
// the others need two: one to let the later party in before the first one's
// window opens, one to run it inside that window. PCT and random figures
// (seed 1) are printed; the stated budgets leave room over them.
namespace g = explore_gallery;
const Bug kCheckThenAct{"check-then-act", g::check_then_act<false>, g::check_then_act<true>, 2,
                        FailureKind::check, 50, 50};
const Bug kLostUpdate{"lost-update", g::lost_update<false>, g::lost_update<true>, 2,
                      FailureKind::check, 50, 50};
const Bug kEventBehindTurn{"event-behind-turn", g::event_behind_turn<false>,
                           g::event_behind_turn<true>, 1,
                           FailureKind::hang, 50, 50};
const Bug kHandoff{"handoff-without-capture", g::handoff_without_capture<false>,
                   g::handoff_without_capture<true>, 2,
                   FailureKind::check, 50, 50};
const Bug kCloseRace{"close-races-try-post", g::close_races_try_post<false>,
                     g::close_races_try_post<true>, 2,
                     FailureKind::check, 50, 50};

// spec: [EXP-3.1] [EXP-4.2] [EXP-4.3] [EXP-2.4]
TEST(ExploreGallery, CheckThenActAcrossAnAwaitInAnInterleavedTurn) {
  expect_found_at_its_bound(kCheckThenAct);
}

// spec: [EXP-3.1] [EXP-4.2] [EXP-4.3] [EXP-2.4]
TEST(ExploreGallery, LostUpdateBetweenTwoLanesItems) { expect_found_at_its_bound(kLostUpdate); }

// spec: [EXP-3.1] [EXP-4.2] [EXP-4.3] [EXP-2.2]
TEST(ExploreGallery, WaitOnAnEventOnlyAQueuedTurnWouldSetHangs) {
  expect_found_at_its_bound(kEventBehindTurn);
}

// spec: [EXP-3.1] [EXP-4.2] [EXP-4.3] [EXP-2.4]
TEST(ExploreGallery, FiberLocalReadAfterAHandoffThatDidNotCapture) {
  expect_found_at_its_bound(kHandoff);
}

// spec: [EXP-3.1] [EXP-4.2] [EXP-4.3] [EXP-2.4]
TEST(ExploreGallery, CloseRacingATryPostWhoseResultIsIgnored) {
  expect_found_at_its_bound(kCloseRace);
}

// spec: [EXP-3.2] [EXP-3.3]
TEST(ExploreGallery, PctAndRandomFindEveryBugWithinTheirStatedBudgets) {
  for (const Bug* b : {&kCheckThenAct, &kLostUpdate, &kEventBehindTurn, &kHandoff, &kCloseRace}) {
    expect_sampled(*b, Strategy::pct, b->pct_within);
    expect_sampled(*b, Strategy::random, b->random_within);
  }
}

}  // namespace
}  // namespace explore_test
