// ThreadPool's hand-off slot (detail/ready_queue.hpp, [SLOT-I1]..[SLOT-I4]):
// the first item a running item posts runs next on its carrier; it never
// starves the shared queue, and a run that holds its carrier does not strand it.
// Every window is held open with a Gate; nothing here sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace turnstile;

// spec: [RT-2.2]
// With one carrier the hand-off is observable: item 0 runs while item 1 waits
// in the shared queue; item 0's post (2) runs next, ahead of item 1. Without
// the slot (hand_off false), item 1 runs first, as before.
TEST(ThreadPoolHandOff, ARunsFirstPostRunsNextAheadOfOlderItems) {
  for (bool hand_off : {true, false}) {
    tt::StartOrder order;
    tt::Gate queued;
    tt::CountDown all(3);
    {
      ThreadPool pool(1, ThreadPool::kDefaultSpinRounds, ThreadPool::kUnlimitedPollers, hand_off);
      EXPECT_EQ(pool.hand_off(), hand_off);
      pool.post_fn([&] {
        order.add(0);
        queued.wait();  // item 1 is in the shared queue now
        pool.post_fn([&] {
          order.add(2);
          all.count_down();
        });
        all.count_down();
      });
      pool.post_fn([&] {
        order.add(1);
        all.count_down();
      });
      queued.open();
      all.wait();
    }
    const std::vector<int> want = hand_off ? std::vector<int>{0, 2, 1} : std::vector<int>{0, 1, 2};
    EXPECT_EQ(order.ids, want) << "hand_off " << hand_off;
  }
}

// spec: [RT-2.2]
// [SLOT-I3]: a chain of hand-offs (each item posts the next, as two fibers
// resuming each other do) while an item waits in the shared queue: that item
// runs after at most kDefaultSlotStreak of them, not after the whole chain.
TEST(ThreadPoolHandOff, AChainOfHandOffsDoesNotStarveTheSharedQueue) {
  constexpr int kChain = 50;
  constexpr int kWaiting = -1;
  tt::StartOrder order;
  tt::Gate queued;
  tt::CountDown all(kChain + 2);
  {
    ThreadPool pool(1);
    std::function<void(int)> link = [&](int i) {
      order.add(i);
      if (i < kChain) pool.post_fn([&link, i] { link(i + 1); });
      all.count_down();
    };
    pool.post_fn([&] {
      queued.wait();  // the waiting item is queued before the chain starts
      link(0);
    });
    pool.post_fn([&] {
      order.add(kWaiting);
      all.count_down();
    });
    queued.open();
    all.wait();
  }
  // 0 came from the shared queue; then at most the streak of hand-offs.
  const int at = order.position_of(kWaiting);
  EXPECT_GE(at, 1);
  EXPECT_LE(at, 1 + static_cast<int>(detail::BasicReadyQueue<StdSync, Runnable*>::kDefaultSlotStreak));
}

// spec: [RT-2.2]
// [SLOT-I2] the window of a run that holds its carrier after its hand-off: the
// item posts B and then waits, on its carrier, until B has run. B is taken by
// the idle carrier (a steal after a vain poll) or moved to the shared queue by
// the rescuer, which wakes a parked carrier; with spin_rounds 0 nobody polls,
// so the rescuer alone can do it. A stranded hand-off hangs the test.
TEST(ThreadPoolHandOff, AHandOffHeldBehindItsRunIsRunByAnIdleCarrier) {
  for (unsigned spin : {0u, ThreadPool::kDefaultSpinRounds}) {
    ThreadPool pool(2, spin);
    ASSERT_TRUE(pool.hand_off());
    for (int round = 0; round < 50; ++round) {
      tt::Gate b_ran;
      tt::Gate a_done;
      std::atomic<int> b_runs{0};
      pool.post_fn([&] {
        pool.post_fn([&] {
          b_runs.fetch_add(1, std::memory_order_relaxed);
          b_ran.open();
        });
        b_ran.wait();  // holds this carrier with B in its slot
        a_done.open();
      });
      a_done.wait();
      EXPECT_EQ(b_runs.load(), 1) << "spin " << spin << ", round " << round;
    }
  }
}

// spec: [RT-2.2] [RT-2.3]
// Destroying a pool whose items hand off as they drain runs every hand-off
// exactly once, with the rescuer alive until the carriers have returned.
TEST(ThreadPoolHandOff, TheDrainRunsEveryHandOffOnce) {
  constexpr int kItems = 2000;
  auto runs = std::make_unique<std::atomic<int>[]>(2 * kItems);
  {
    ThreadPool pool(3);
    for (int i = 0; i < kItems; ++i) {
      pool.post_fn([&pool, &runs, i] {
        runs[i].fetch_add(1, std::memory_order_relaxed);
        pool.post_fn([&runs, i] { runs[kItems + i].fetch_add(1, std::memory_order_relaxed); });
      });
    }
  }  // the drain [RT-2.3]
  for (int i = 0; i < 2 * kItems; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
}

}  // namespace
