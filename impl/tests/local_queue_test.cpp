// ThreadPool's local queues (detail/ready_queue.hpp, [LOCAL-I1]..[LOCAL-I5]):
// a run's later posts wait on its carrier, in order, behind its hand-off; the
// rescuer moves those its carrier does not get to to the shared queue, and the
// run's later posts follow them; the shared queue is not starved; a post that
// does not fit spills the local queue to the shared one in order; a stopping
// pool's idle carriers steal the oldest half.
// Every window is held open with a Gate; nothing here sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <numeric>
#include <vector>

#include "test_support.hpp"
#include "turnstile/detail/local_queue.hpp"

namespace {

using namespace turnstile;
using Queue = detail::BasicReadyQueue<StdSync, Runnable*>;

// spec: [RT-2.2]
// [LOCAL-I1]: one carrier, a run that posts more items than its local queue
// holds (the slot, then the local queue, then the spill to the shared queue,
// then the run's posts after the spill): they start in post order.
TEST(ThreadPoolLocalQueue, ARunsPostsBeyondItsLocalQueueStartInPostOrder) {
  constexpr int kPosts = 2 * static_cast<int>(Queue::kLocalCapacity) + 37;
  tt::StartOrder order;
  tt::CountDown all(kPosts);
  {
    ThreadPool pool(1);
    pool.post_fn([&] {
      for (int i = 0; i < kPosts; ++i)
        pool.post_fn([&order, &all, i] {
          order.add(i);
          all.count_down();
        });
    });
    all.wait();
  }
  std::vector<int> want(kPosts);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(order.ids, want);
}

// spec: [RT-2.2]
// [LOCAL-I2] [LOCAL-I4] [LOCAL-I5]: the window of a run that holds its carrier
// after five posts (one hand-off, four local items): the rescuer, woken by
// the posts (or awake), moves them to the shared queue and the other carrier,
// parked (spin 0) or polling, starts them all in post order. A stranded local
// item hangs the test.
TEST(ThreadPoolLocalQueue, AHeldRunsLocalPostsAreRescuedInPostOrder) {
  constexpr int kPosts = 5;
  for (unsigned spin : {0u, ThreadPool::kDefaultSpinRounds}) {
    ThreadPool pool(2, spin);
    for (int round = 0; round < 50; ++round) {
      tt::StartOrder order;
      tt::CountDown ran(kPosts);
      tt::Gate a_done;
      pool.post_fn([&] {
        for (int i = 0; i < kPosts; ++i)
          pool.post_fn([&order, &ran, i] {
            order.add(i);
            ran.count_down();
          });
        ran.wait();  // holds this carrier: the other one runs all five
        a_done.open();
      });
      a_done.wait();
      EXPECT_EQ(order.ids, (std::vector<int>{0, 1, 2, 3, 4})) << "spin " << spin << ", round "
                                                               << round;
    }
  }
}

// spec: [RT-2.2]
// [LOCAL-I3]: one carrier; while item A runs, another thread queues X in the
// shared queue; A then posts 40 items (its slot and local queue). X starts
// within kDefaultSharedEvery pops of A, not after the 40.
TEST(ThreadPoolLocalQueue, ACarrierFedByItsOwnPostsStillRunsTheSharedQueue) {
  constexpr int kPosts = 40;
  constexpr int kA = -1;
  constexpr int kX = -2;
  tt::StartOrder order;
  tt::Gate x_queued;
  tt::CountDown all(kPosts + 2);
  {
    ThreadPool pool(1);
    pool.post_fn([&] {
      order.add(kA);
      x_queued.wait();
      for (int i = 0; i < kPosts; ++i)
        pool.post_fn([&order, &all, i] {
          order.add(i);
          all.count_down();
        });
      all.count_down();
    });
    pool.post_fn([&] {
      order.add(kX);
      all.count_down();
    });
    x_queued.open();
    all.wait();
  }
  const int a = order.position_of(kA);
  const int x = order.position_of(kX);
  EXPECT_GT(x, a);
  EXPECT_LE(x - a, static_cast<int>(Queue::kDefaultSharedEvery));
  EXPECT_LT(x, kPosts);  // not behind every local item
}

// spec: [RT-2.2] [RT-2.3]
// Every item runs exactly once when several carriers post batches from their
// runs while the rescuer moves some, and when the pool is destroyed with local
// queues full: the drain (its idle carriers stealing) runs them.
TEST(ThreadPoolLocalQueue, BatchesPostedFromRunsRunOnceAcrossStealsAndTheDrain) {
  constexpr int kRoots = 200;
  constexpr int kFan = 7;
  auto runs = std::make_unique<std::atomic<int>[]>(kRoots * kFan);
  {
    ThreadPool pool(3);
    for (int r = 0; r < kRoots; ++r)
      pool.post_fn([&pool, &runs, r] {
        for (int k = 0; k < kFan; ++k)
          pool.post_fn([&runs, r, k] { runs[r * kFan + k].fetch_add(1, std::memory_order_relaxed); });
      });
  }
  for (int i = 0; i < kRoots * kFan; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
}

// spec: [RT-2.2]
// [LOCAL-I1] [LOCAL-I2] BasicLocalQueue on its own (one thread): a full queue
// refuses a push and a push_run without changing; the ring wraps around in
// order; a steal takes the oldest ceil(n/2), at most `max`, oldest first;
// drain_to moves everything in order and leaves it empty.
TEST(LocalQueue, BoundsWraparoundStealsAndDrainKeepOrder) {
  using Q = detail::BasicLocalQueue<StdSync, int*, 8>;
  int items[40] = {};
  Q q;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(q.push(&items[i]));
  EXPECT_FALSE(q.push(&items[8]));            // full
  EXPECT_FALSE(q.push_run(nullptr, &items[8], false));  // full, one needed
  EXPECT_EQ(q.size(), 8U);
  int* out = nullptr;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(q.pop(out));
    EXPECT_EQ(out, &items[i]);
  }
  // 3 left (5, 6, 7); push_run needs two of the five free places, wrapping around.
  ASSERT_TRUE(q.push_run(&items[8], &items[9], true));
  ASSERT_TRUE(q.push(&items[10]));
  ASSERT_TRUE(q.push(&items[11]));
  EXPECT_FALSE(q.push_run(&items[12], &items[13], false));  // one place left: both or neither
  ASSERT_TRUE(q.push(&items[12]));
  EXPECT_EQ(q.size(), 8U);
  int* batch[8] = {};
  // ceil(8/2) = 4, capped at 3: the three oldest.
  ASSERT_EQ(q.steal_half(batch, 3), 3U);
  EXPECT_EQ(batch[0], &items[5]);
  EXPECT_EQ(batch[1], &items[6]);
  EXPECT_EQ(batch[2], &items[7]);
  // 5 left: ceil(5/2) = 3.
  ASSERT_EQ(q.steal_half(batch, 8), 3U);
  EXPECT_EQ(batch[0], &items[8]);
  EXPECT_EQ(batch[2], &items[10]);
  std::vector<int*> drained;
  q.drain_to(drained);
  EXPECT_EQ(drained, (std::vector<int*>{&items[11], &items[12]}));
  EXPECT_EQ(q.size(), 0U);
  EXPECT_FALSE(q.pop(out));
  EXPECT_EQ(q.steal_half(batch, 8), 0U);
  // One item: a steal takes it.
  ASSERT_TRUE(q.push(&items[20]));
  ASSERT_EQ(q.steal_half(batch, 8), 1U);
  EXPECT_EQ(batch[0], &items[20]);
}

// spec: [RT-2.2]
// [LOCAL-I2] [LOCAL-I5] The rescuer's take on its own (one thread): nothing
// moves while every item pushed before the mark (the rescuer's previous look)
// was taken since; once one is left, every item moves, oldest first, and the
// run that was posting is sealed: its later push is refused, unchanged, until
// a new run's first push reopens the queue.
TEST(LocalQueue, ARescueMovesOnlyAWaitingQueueAndSealsItsRun) {
  using Q = detail::BasicLocalQueue<StdSync, int*, 8>;
  int items[8] = {};
  Q q;
  std::vector<int*> rescued;
  ASSERT_TRUE(q.push_run(nullptr, &items[0], true));
  const std::size_t first_look = q.pushed();
  ASSERT_TRUE(q.push_run(&items[1], &items[2], false));
  int* out = nullptr;
  ASSERT_TRUE(q.pop(out));  // the owner took what was there at the first look
  EXPECT_EQ(q.rescue_to(rescued, first_look), 0U);
  EXPECT_EQ(q.size(), 2U);
  const std::size_t second_look = q.pushed();
  EXPECT_EQ(q.rescue_to(rescued, second_look), 2U);  // 1 and 2 waited a whole look
  EXPECT_EQ(rescued, (std::vector<int*>{&items[1], &items[2]}));
  EXPECT_EQ(q.size(), 0U);
  EXPECT_FALSE(q.push_run(nullptr, &items[3], false));  // [LOCAL-I5] sealed
  EXPECT_EQ(q.size(), 0U);
  ASSERT_TRUE(q.push(&items[3]));  // between runs: no seal applies
  ASSERT_TRUE(q.push_run(&items[4], &items[5], true));  // a new run's first push reopens
  ASSERT_TRUE(q.push_run(nullptr, &items[6], false));
  EXPECT_EQ(q.size(), 4U);
  EXPECT_EQ(q.rescue_to(rescued, q.taken()), 0U);  // nothing pushed before that mark is left
}

}  // namespace
