// runtime_window_test.cpp: windows of the runtime ([RT-5.3], [RT-6.1]) and two
// settled wordings: ManualScheduler::timers() before an advance ([RT-8.3]) and
// which failure when_all rethrows ([RT-5.6]).
//
// Each window is held with a ManualScheduler stepped by run_next (the promise
// checked after every step), or, for sync_wait's own loop, with the last fiber
// parked on that loop's timer with nothing ready to run.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"

namespace {

using namespace turnstile;
using namespace std::chrono_literals;

struct JoinSteps {
  std::size_t running_after_spawn = 0;
  bool child_started = false;
  bool child_finished = false;
  bool joined = false;
};

Task<> starting_child(Event* go, JoinSteps* st) {
  st->child_started = true;
  co_await go->wait();
  st->child_finished = true;
}

Task<> join_at_once(Event* go, JoinSteps* st) {
  Scope scope("windows/join");
  scope.spawn(starting_child(go, st));
  st->running_after_spawn = scope.running();
  co_await scope.join();  // the child has not started yet: its start is only posted
  st->joined = true;
}

// spec: [RT-5.3] [RT-5.1]
TEST(RuntimeWindow, JoinWaitsForAChildThatHasNotStartedYet) {
  ManualScheduler ms;
  Event go;
  JoinSteps st;
  detach(ms, join_at_once(&go, &st));
  ms.run_next();  // the parent: spawns (posted) and suspends in join()
  EXPECT_EQ(st.running_after_spawn, 1u) << "a posted child counts from the spawn";
  EXPECT_FALSE(st.child_started);
  EXPECT_FALSE(st.joined) << "join() completed while its child was still starting";
  ASSERT_EQ(ms.ready(), 1u);  // the child's start
  ms.run_next();  // the child starts and parks on `go`
  EXPECT_TRUE(st.child_started);
  EXPECT_FALSE(st.joined) << "join() completed while its child ran";
  EXPECT_EQ(ms.ready(), 0u);
  go.set();
  ms.run_next();  // the child finishes; the join's waiter is posted, not resumed inline
  EXPECT_TRUE(st.child_finished);
  EXPECT_FALSE(st.joined);
  ms.run_until_idle();
  EXPECT_TRUE(st.joined);
}

struct LoopSteps {
  bool main_done = false;
  bool trailing_woke = false;
  bool trailing_done = false;
};

Task<> trailing_sleeper(LoopSteps* st) {
  co_await sleep_for(20ms);  // parked on the loop's own timer: nothing is ready
  EXPECT_TRUE(st->main_done);
  st->trailing_woke = true;
  co_await yield();
  st->trailing_done = true;
}

Task<int> main_leaves_a_sleeper(LoopSteps* st) {
  // A Scope child would be joined here: a detached fiber on this loop is the
  // one left running after the task returns.
  detach(current_scheduler(), trailing_sleeper(st));
  co_await yield();  // the sleeper has started and parked
  st->main_done = true;
  co_return 3;
}

// spec: [RT-6.1] [RT-8.2]
TEST(RuntimeWindow, SyncWaitReturnsOnlyAfterTheLastFiberOfItsLoopWhileItSleeps) {
  LoopSteps st;
  EXPECT_EQ(sync_wait(main_leaves_a_sleeper(&st)), 3);
  EXPECT_TRUE(st.main_done);
  EXPECT_TRUE(st.trailing_woke) << "sync_wait returned while its loop's last fiber slept";
  EXPECT_TRUE(st.trailing_done);
}

// spec: [RT-8.3]
TEST(RuntimeWindow, APassedDeadlineCountsInTimersUntilTheNextAdvance) {
  ManualScheduler ms;
  ms.advance(10ms);
  bool woke = false;
  auto sleeper = [&]() -> Task<> {
    co_await sleep_until(Scheduler::Clock::time_point{} + 5ms);  // already passed
    woke = true;
  };
  detach(ms, sleeper());
  ms.run_until_idle();  // the fiber arms its sleep and suspends
  int calls = 0;
  TimerHandle h = ms.call_at(Scheduler::Clock::time_point{}, [&] { ++calls; });  // passed too
  EXPECT_EQ(ms.timers(), 2u) << "a passed deadline is armed until an advance posts it";
  EXPECT_EQ(ms.next_deadline(), Scheduler::Clock::time_point{});
  ms.run_until_idle();  // nothing runs: no advance yet
  EXPECT_FALSE(woke);
  EXPECT_EQ(ms.timers(), 2u);
  EXPECT_EQ(ms.advance(0ns), 2u);
  EXPECT_EQ(ms.timers(), 0u) << "posted, not yet run: no longer counted";
  EXPECT_EQ(ms.ready(), 2u);
  EXPECT_TRUE(h.pending());
  ms.run_until_idle();
  EXPECT_TRUE(woke);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ms.timers(), 0u);
}

struct RunFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Task<int> fails_after(Event* go, std::string what) {
  co_await go->wait();
  throw RunFailure(what);
}

Task<int> fails_now(std::string what) {
  throw RunFailure(what);
  co_return 0;
}

// spec: [RT-5.6] [RT-5.3]
TEST(RuntimeWindow, WhenAllRethrowsTheFailureFirstInTimeNotInArgumentOrder) {
  ManualScheduler ms;
  Event later;
  std::string caught;
  auto body = [&]() -> Task<> {
    try {
      auto all = when_all(fails_after(&later, "first argument, fails last"),
                          fails_now("second argument, fails first"));
      co_await std::move(all);
    } catch (const RunFailure& e) {
      caught = e.what();
    }
  };
  detach(ms, body());
  ms.run_until_idle();  // the second child failed; the first waits on `later`
  EXPECT_TRUE(caught.empty()) << "rethrown before every child finished";
  later.set();
  ms.run_until_idle();
  EXPECT_EQ(caught, "second argument, fails first");
}

}  // namespace
