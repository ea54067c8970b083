// sync_wait: the blocking bridge from plain threads.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace turnstile;
using tt::Boom;

Task<int> forty_two() { co_return 42; }
Task<std::string> text() { co_return std::string("text"); }
Task<std::unique_ptr<int>> boxed(int v) { co_return std::make_unique<int>(v); }
Task<> marks_ran(bool& ran) {
  ran = true;
  co_return;
}
Task<int> fails() {
  co_await yield();
  throw Boom("sync_wait failure");
  co_return 0;
}

// ---------------------------------------------------------------- [RT-6.1]

// spec: [RT-6.1]
TEST(SyncWait, ReturnsTheTasksResult) {
  EXPECT_EQ(sync_wait(forty_two()), 42);
  EXPECT_EQ(sync_wait(text()), "text");
  std::unique_ptr<int> b = sync_wait(boxed(5));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*b, 5);
  bool ran = false;
  sync_wait(marks_ran(ran));
  EXPECT_TRUE(ran);
}

// spec: [RT-6.1]
TEST(SyncWait, RethrowsTheTasksException) {
  try {
    (void)sync_wait(fails());
    ADD_FAILURE() << "expected Boom";
  } catch (const Boom& e) {
    EXPECT_STREQ(e.what(), "sync_wait failure");
  }
}

Task<> trailing(int yields, bool& done, std::thread::id& ran_on) {
  for (int i = 0; i < yields; ++i) co_await yield();
  ran_on = std::this_thread::get_id();
  done = true;
}

// A fiber of the loop that is away (on a pool) until the main task's last step,
// so the loop is likely to be out of ready work while this fiber still lives.
Task<> away_and_back(ThreadPool& pool, Scheduler& loop, tt::Gate& back, bool& done,
                     std::thread::id& ran_on) {
  co_await resume_on(pool);
  back.wait();  // blocks the pool's carrier (a test-only stand-in for slow work)
  co_await resume_on(loop);
  ran_on = std::this_thread::get_id();
  done = true;
}

struct Trailing {
  bool done[3] = {false, false, false};
  std::thread::id ran_on[3];
  std::thread::id main_ran_on;
  tt::Gate back;
};

Task<int> start_trailing_fibers(ThreadPool& pool, Trailing& t) {
  t.main_ran_on = std::this_thread::get_id();
  detach(current_scheduler(), trailing(1, t.done[0], t.ran_on[0]));  // started on the loop
  detach(current_scheduler(),
         away_and_back(pool, current_scheduler(), t.back, t.done[1], t.ran_on[1]));
  Scope scope;
  scope.spawn(trailing(3, t.done[2], t.ran_on[2]));
  co_await scope.join();
  t.back.open();
  co_return 1;  // returns while the detached fibers still run
}

// spec: [RT-6.1]
TEST(SyncWait, RunsOnTheCallingThreadUntilEveryFiberOfItsLoopFinished) {
  Trailing t;
  ThreadPool pool(1);
  EXPECT_EQ(sync_wait(start_trailing_fibers(pool, t)), 1);
  EXPECT_EQ(t.main_ran_on, std::this_thread::get_id());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(t.done[i]) << "sync_wait returned before fiber " << i << " of its loop finished";
    EXPECT_EQ(t.ran_on[i], std::this_thread::get_id()) << "fiber " << i;
  }
}

Task<int> hop_to_pool_and_back(ThreadPool& pool, std::vector<std::thread::id>& threads) {
  Scheduler& loop = current_scheduler();
  threads.push_back(tt::carrier_thread_id());  // not foldable across co_await
  co_await resume_on(pool);
  threads.push_back(tt::carrier_thread_id());
  co_await resume_on(loop);
  threads.push_back(tt::carrier_thread_id());
  co_return 9;
}

// spec: [RT-6.1]
TEST(SyncWait, WorkElsewherePostsBackToTheLoop) {
  std::vector<std::thread::id> threads;
  ThreadPool pool(1);
  EXPECT_EQ(sync_wait(hop_to_pool_and_back(pool, threads)), 9);
  ASSERT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads[0], std::this_thread::get_id());
  EXPECT_NE(threads[1], std::this_thread::get_id());
  EXPECT_EQ(threads[2], std::this_thread::get_id());
}

Task<int> where_am_i(ThreadPool& pool, bool& on_carrier) {
  on_carrier = pool.on_carrier();
  co_await yield();
  co_return 11;
}

Task<int> fails_on(ThreadPool& pool) {
  co_await resume_on(pool);
  throw Boom("pool failure");
  co_return 0;
}

// spec: [RT-6.1]
TEST(SyncWait, OnASchedulerRunsThereAndBlocksUntilDone) {
  bool on_carrier = false;
  ThreadPool pool(2);
  EXPECT_EQ(sync_wait(pool, where_am_i(pool, on_carrier)), 11);
  EXPECT_TRUE(on_carrier);
  EXPECT_THROW((void)sync_wait(pool, fails_on(pool)), Boom);
}

// ---------------------------------------------------------------- [RT-6.2]

struct Refusals {
  bool plain_refused = false;
  bool on_scheduler_refused = false;
  bool inner_ran = false;
};

Task<> call_sync_wait_inside(ManualScheduler& other, Refusals& r) {
  try {
    sync_wait(marks_ran(r.inner_ran));
  } catch (const FrameworkContextError&) {
    r.plain_refused = true;
  }
  try {
    sync_wait(other, marks_ran(r.inner_ran));
  } catch (const FrameworkContextError&) {
    r.on_scheduler_refused = true;
  }
  co_return;
}

// spec: [RT-6.2]
TEST(SyncWait, FromInsideAFiberThrows) {
  ManualScheduler ms;
  ManualScheduler other;
  Refusals r;
  turnstile_test::run_detached(ms, call_sync_wait_inside(other, r));
  EXPECT_TRUE(r.plain_refused);
  EXPECT_TRUE(r.on_scheduler_refused);
  EXPECT_FALSE(r.inner_ran) << "the refused task must not run";
  EXPECT_EQ(other.ready(), 0u) << "the refused sync_wait started a fiber";
}

// spec: [RT-6.2]
TEST(SyncWait, FromInsideSyncWaitThrows) {
  ManualScheduler other;
  Refusals r;
  sync_wait(call_sync_wait_inside(other, r));
  EXPECT_TRUE(r.plain_refused);
  EXPECT_TRUE(r.on_scheduler_refused);
  EXPECT_FALSE(r.inner_ran);
}

// spec: [RT-6.2]
TEST(SyncWait, FromInsideAPostedItemThrows) {
  Refusals manual;
  Refusals pooled;
  ManualScheduler ms;
  ManualScheduler other;
  ms.post_fn([&] {
    try {
      sync_wait(marks_ran(manual.inner_ran));
    } catch (const FrameworkContextError&) {
      manual.plain_refused = true;
    }
  });
  ms.run_until_idle();
  EXPECT_TRUE(manual.plain_refused);

  tt::Gate done;
  ThreadPool pool(1);
  pool.post_fn([&] {
    try {
      sync_wait(pool, marks_ran(pooled.inner_ran));  // would deadlock its only carrier
    } catch (const FrameworkContextError&) {
      pooled.on_scheduler_refused = true;
    }
    done.open();
  });
  done.wait();
  EXPECT_TRUE(pooled.on_scheduler_refused);
  EXPECT_FALSE(manual.inner_ran);
  EXPECT_FALSE(pooled.inner_ran);
}

// ---------------------------------------------------------------- [RT-6.3]

Task<> set_after_yields(Event& ev, int yields) {
  for (int i = 0; i < yields; ++i) co_await yield();
  ev.set();
}

Task<int> wait_for_helper(Event& ev) {
  detach(current_scheduler(), set_after_yields(ev, 3));
  co_await ev.wait();
  co_return 3;
}

// spec: [RT-6.3]
TEST(SyncWait, OnAManualSchedulerDrivesItOnTheCallingThread) {
  ManualScheduler ms;
  Event ev;
  EXPECT_EQ(sync_wait(ms, wait_for_helper(ev)), 3);
  EXPECT_GE(ms.steps(), 5u);
  EXPECT_EQ(ms.ready(), 0u);
}

Task<int> wait_forever(Event& never, int yields_first, int& steps_taken) {
  for (int i = 0; i < yields_first; ++i) {
    ++steps_taken;
    co_await yield();
  }
  co_await never.wait();
  co_return 0;
}

// spec: [RT-6.3]
TEST(SyncWait, OnAnIdleManualSchedulerThrowsInsteadOfHanging) {
  // The abandoned fiber can never finish (its result slot was on sync_wait's
  // stack), so its frames are deliberately leaked.
  tt::LeakCheckDisabled abandoned_fiber_frames;
  ManualScheduler ms;
  Event never;
  int steps_taken = 0;
  try {
    (void)sync_wait(ms, wait_forever(never, 4, steps_taken));
    ADD_FAILURE() << "sync_wait returned a result it cannot have";
  } catch (const FrameworkContextError& e) {
    EXPECT_NE(std::string(e.what()).find("RT-6.3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(steps_taken, 4) << "the ready work must run before giving up";
  EXPECT_EQ(ms.ready(), 0u);
}

}  // namespace
