// Scope: spawn, context inheritance, join.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "turnstile_test/on_schedulers.hpp"

namespace {

using namespace turnstile;
using namespace tt;

Task<> set_flag(bool& flag) {
  flag = true;
  co_return;
}

// ---------------------------------------------------------------- [RT-5.1]

struct SpawnView {
  bool child_ran_when_spawn_returned = true;
  std::size_t running_after_spawn = 0;
  bool joined = false;
};

Task<> spawn_one(bool& child_ran, SpawnView& view) {
  Scope scope;
  scope.spawn(set_flag(child_ran));
  view.child_ran_when_spawn_returned = child_ran;
  view.running_after_spawn = scope.running();
  co_await scope.join();
  view.joined = true;
}

// spec: [RT-5.1]
TEST(Scope, SpawnPostsTheChild) {
  ManualScheduler ms;
  bool child_ran = false;
  SpawnView view;
  detach(ms, spawn_one(child_ran, view));
  ms.run_next();  // parent: spawn, then join waits
  EXPECT_FALSE(view.child_ran_when_spawn_returned) << "the child ran inside spawn()";
  EXPECT_EQ(view.running_after_spawn, 1u);
  EXPECT_FALSE(child_ran);
  EXPECT_FALSE(view.joined);
  EXPECT_EQ(ms.ready(), 1u) << "the child's start is posted to the parent's scheduler";
  ms.run_until_idle();
  EXPECT_TRUE(child_ran);
  EXPECT_TRUE(view.joined);
}

// spec: [RT-5.1]
TEST(Scope, SpawnOnAPlainThreadThrows) {
  ASSERT_FALSE(on_fiber());
  bool ran = false;
  Scope scope;
  EXPECT_THROW(scope.spawn(set_flag(ran)), FrameworkContextError);
  EXPECT_EQ(scope.running(), 0u);
  EXPECT_FALSE(ran);
}

Task<> spawn_after_moving(ManualScheduler& to, bool& child_ran) {
  co_await resume_on(to);
  Scope scope;
  scope.spawn(set_flag(child_ran));
  co_await scope.join();
}

// spec: [RT-5.1]
TEST(Scope, ChildStartsOnTheSpawningFibersCurrentScheduler) {
  ManualScheduler first;
  ManualScheduler second;
  bool child_ran = false;
  detach(first, spawn_after_moving(second, child_ran));
  first.run_next();
  second.run_next();  // the parent spawns here
  EXPECT_EQ(first.ready(), 0u);
  EXPECT_EQ(second.ready(), 1u);
  second.run_until_idle();
  EXPECT_TRUE(child_ran);
  EXPECT_EQ(first.ready(), 0u);
}

// ---------------------------------------------------------------- [RT-5.2]

Task<> child_context(const detail::Frame*& seen, detail::FrameRef replace_with) {
  seen = context_head();
  tt::set_context(replace_with);  // the child's own slot: the parent must not see this
  co_return;
}

struct InheritView {
  const detail::Frame* child1 = nullptr;
  const detail::Frame* child2 = nullptr;
  const detail::Frame* parent_after_join = nullptr;
};

Task<> spawn_with_contexts(detail::FrameRef fa, detail::FrameRef fb, detail::FrameRef fc,
                           InheritView& view) {
  Scope scope;
  tt::set_context(fa);
  scope.spawn(child_context(view.child1, fc));
  tt::set_context(fb);  // changed after the first spawn, before the children start
  scope.spawn(child_context(view.child2, fc));
  co_await scope.join();
  view.parent_after_join = context_head();
}

// spec: [RT-5.2]
TEST(Scope, ChildInheritsTheContextAsItStoodAtTheSpawn) {
  ManualScheduler ms;
  detail::FrameRef fa = make_frame();
  detail::FrameRef fb = make_frame();
  detail::FrameRef fc = make_frame();
  InheritView view;
  turnstile_test::run_detached(ms, spawn_with_contexts(fa, fb, fc, view));
  EXPECT_EQ(view.child1, fa.get());
  EXPECT_EQ(view.child2, fb.get());
  EXPECT_EQ(view.parent_after_join, fb.get()) << "a child's context change leaked into the parent";
}

// ---------------------------------------------------------------- [RT-5.3]

Task<> wait_then_mark(Event& ev, std::vector<int>& finished, int id) {
  co_await ev.wait();
  finished.push_back(id);
}

struct JoinView {
  bool joined = false;
  std::vector<int> finished_at_join;
};

Task<> spawn_three_and_join(Event (&evs)[3], std::vector<int>& finished, JoinView& view) {
  Scope scope;
  for (int i = 0; i < 3; ++i) scope.spawn(wait_then_mark(evs[i], finished, i));
  co_await scope.join();
  view.finished_at_join = finished;
  view.joined = true;
}

// spec: [RT-5.3] [RT-4.2]
TEST(Scope, JoinWaitsForEveryChild) {
  ManualScheduler ms;
  Event evs[3];
  std::vector<int> finished;
  JoinView view;
  turnstile_test::run_detached(ms, spawn_three_and_join(evs, finished, view));
  EXPECT_FALSE(view.joined);

  evs[2].set();
  evs[0].set();
  ms.run_until_idle();
  EXPECT_EQ(finished, (std::vector<int>{2, 0}));
  EXPECT_FALSE(view.joined) << "join completed with a child still running";

  evs[1].set();
  ms.run_next();  // the last child finishes...
  EXPECT_EQ(finished, (std::vector<int>{2, 0, 1}));
  EXPECT_FALSE(view.joined) << "the joiner was resumed inside the last child's step";
  EXPECT_EQ(ms.ready(), 1u) << "...and posts the joiner";
  ms.run_until_idle();
  EXPECT_TRUE(view.joined);
  EXPECT_EQ(view.finished_at_join, (std::vector<int>{2, 0, 1}));
}

Task<> fail_with(std::string what) {
  throw Boom(what);
  co_return;
}

Task<> join_and_catch(std::string& caught, bool& finished_ok) {
  Scope scope;
  scope.spawn(fail_with("A"));
  scope.spawn(fail_with("B"));
  try {
    co_await scope.join();
  } catch (const Boom& e) {
    caught = e.what();
  }
  finished_ok = true;
}

// spec: [RT-5.3]
TEST(Scope, JoinRethrowsTheFirstChildFailure) {
  for (const bool b_first : {false, true}) {
    ManualScheduler ms;
    std::string caught;
    bool finished_ok = false;
    detach(ms, join_and_catch(caught, finished_ok));
    ms.run_next();  // parent: spawns A and B, then waits in join
    ASSERT_EQ(ms.ready(), 2u);
    ms.run_next(b_first ? 1 : 0);  // the first child to fail
    ms.run_until_idle();
    EXPECT_TRUE(finished_ok);
    EXPECT_EQ(caught, b_first ? "B" : "A");
  }
}

struct RoundsView {
  int children_ran = 0;
  int rounds = 0;
};

Task<> count_child(RoundsView& view) {
  co_await yield();
  ++view.children_ran;
}

Task<> join_rounds(RoundsView& view) {
  Scope scope;
  co_await scope.join();  // no children: completes at once
  ++view.rounds;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i <= round; ++i) scope.spawn(count_child(view));
    co_await scope.join();
    EXPECT_EQ(scope.running(), 0u);
    ++view.rounds;
  }
}

// spec: [RT-5.3]
TEST(Scope, JoinWithoutChildrenPassesAndTheScopeCanBeReused) {
  ManualScheduler ms;
  RoundsView view;
  detach(ms, join_rounds(view));
  ms.run_next();
  EXPECT_EQ(view.rounds, 1) << "join with no children must not wait";
  ms.run_until_idle();
  EXPECT_EQ(view.rounds, 4);
  EXPECT_EQ(view.children_ran, 1 + 2 + 3);
}

// ---------------------------------------------------------------- on every scheduler

// Children spread over the carriers finish in any order: join() still waits for
// each, and rethrows the failure of one that failed.
class ScopeOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(ScopeOnSchedulers);

Task<> count_after_yields(std::atomic<int>& done, int yields) {
  for (int i = 0; i < yields; ++i) co_await yield();
  done.fetch_add(1);
}

Task<int> spawn_and_join(int children) {
  std::atomic<int> done{0};
  Scope scope;
  for (int c = 0; c < children; ++c) scope.spawn(count_after_yields(done, c % 3));
  co_await scope.join();
  co_return done.load();
}

// spec: [RT-5.3]
TEST_P(ScopeOnSchedulers, JoinWaitsForEveryChildAndRethrowsAFailure) {
  EXPECT_EQ(run(spawn_and_join(16)), 16);
  std::string caught;
  bool finished_ok = false;
  run(join_and_catch(caught, finished_ok));
  EXPECT_TRUE(finished_ok);
  EXPECT_TRUE(caught == "A" || caught == "B") << caught;
}

}  // namespace
