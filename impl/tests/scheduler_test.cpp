// Schedulers: ThreadPool and ManualScheduler.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace turnstile;

// ---------------------------------------------------------- ThreadPool

// spec: [RT-2.1]
TEST(ThreadPool, PostFromACarrierNeverRunsInline) {
  tt::Gate done;
  std::atomic<bool> inner_ran{false};
  bool inner_ran_when_post_returned = true;
  bool inner_on_carrier = false;
  ThreadPool pool(1);
  pool.post_fn([&] {
    pool.post_fn([&] {
      inner_on_carrier = pool.on_carrier();
      inner_ran.store(true);
      done.open();
    });
    inner_ran_when_post_returned = inner_ran.load();
  });
  done.wait();
  EXPECT_FALSE(inner_ran_when_post_returned) << "post() ran the item inside the call";
  EXPECT_TRUE(inner_on_carrier);
}

// spec: [RT-2.1]
TEST(ThreadPool, PostFromAPlainThreadQueuesTheItem) {
  tt::Gate hold;  // keeps the only carrier busy
  tt::Gate done;
  std::atomic<bool> ran{false};
  std::thread::id ran_on;
  bool in_framework = false;
  ThreadPool pool(1);
  pool.post_fn([&] { hold.wait(); });
  pool.post_fn([&] {
    ran_on = std::this_thread::get_id();
    in_framework = in_framework_context();
    ran.store(true);
    done.open();
  });
  EXPECT_FALSE(ran.load()) << "post() ran the item inside the call";
  EXPECT_FALSE(in_framework_context()) << "the test thread is a plain thread";
  hold.open();
  done.wait();
  EXPECT_TRUE(ran.load());
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(in_framework) << "posted items run inside a framework context";
}

// spec: [RT-2.2]
TEST(ThreadPool, ItemsPostedFromOneThreadStartInPostOrder) {
  constexpr int kItems = 2000;
  tt::Gate hold;
  tt::CountDown all(kItems);
  std::vector<int> order;  // written by the one carrier only
  order.reserve(kItems);
  ThreadPool pool(1);  // one carrier: start order is observable
  pool.post_fn([&] { hold.wait(); });  // queue everything before anything starts
  for (int i = 0; i < kItems; ++i) {
    pool.post_fn([&order, &all, i] {
      order.push_back(i);
      all.count_down();
    });
  }
  hold.open();
  all.wait();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i) << "FIFO broken at position " << i;
}

// spec: [RT-2.2]
TEST(ThreadPool, ItemsPostedByAnItemStartInPostOrder) {
  constexpr int kItems = 500;
  tt::CountDown all(kItems);
  std::vector<int> order;
  ThreadPool pool(1);
  pool.post_fn([&] {
    for (int i = 0; i < kItems; ++i) {
      pool.post_fn([&order, &all, i] {
        order.push_back(i);
        all.count_down();
      });
    }
  });
  all.wait();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i);
}

// spec: [RT-2.2]
TEST(ThreadPool, EveryItemRunsExactlyOnce) {
  constexpr int kItems = 50'000;
  auto runs = std::make_unique<std::atomic<int>[]>(kItems);
  tt::CountDown all(kItems);
  {
    ThreadPool pool(4);
    EXPECT_EQ(pool.carriers(), 4u);
    for (int i = 0; i < kItems; ++i) {
      pool.post_fn([&runs, &all, i] {
        runs[i].fetch_add(1, std::memory_order_relaxed);
        all.count_down();
      });
    }
    all.wait();
  }  // joined: nothing may run any more
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
}

// spec: [RT-2.2]
// An item that occupies its carrier (here: until the item queued behind it has
// run) does not hold back the rest of the queue while another carrier is idle:
// the carrier that took it hands what is left to a parked one [READY-I2]
// (detail/ready_queue.hpp). Each round posts both while the second carrier
// polls, parks or is between the two; a stranded item would hang the test.
TEST(ThreadPool, AnItemThatOccupiesItsCarrierDoesNotHoldBackTheQueue) {
  for (unsigned spin : {0u, ThreadPool::kDefaultSpinRounds}) {
    ThreadPool pool(2, spin);
    for (int round = 0; round < 200; ++round) {
      tt::Gate second_ran;
      tt::Gate first_done;
      pool.post_fn([&] {
        second_ran.wait();
        first_done.open();  // its last touch of this round's gates
      });
      pool.post_fn([&] { second_ran.open(); });
      first_done.wait();
    }
  }
}

// spec: [RT-2.2] [RT-2.3]
// The polling cap [READY-I4] (detail/ready_queue.hpp): with one polling slot
// among three carriers (two park at once whenever the queue is empty), or none
// limited, the hand-off above still happens and every item runs once; the
// model (model.ready_queue one-poller) checks the cap itself at every poll.
TEST(ThreadPool, AtMostOnePollerStillHandsOffAndRunsEveryItemOnce) {
  for (unsigned pollers : {1u, ThreadPool::kAutoPollers, ThreadPool::kUnlimitedPollers}) {
    constexpr int kItems = 3000;
    auto runs = std::make_unique<std::atomic<int>[]>(kItems);
    {
      ThreadPool pool(3, ThreadPool::kDefaultSpinRounds, pollers);
      for (int round = 0; round < 100; ++round) {
        tt::Gate second_ran;
        tt::Gate first_done;
        pool.post_fn([&] {
          second_ran.wait();
          first_done.open();
        });
        pool.post_fn([&] { second_ran.open(); });
        first_done.wait();
      }
      for (int i = 0; i < kItems; ++i)
        pool.post_fn([&runs, i] { runs[i].fetch_add(1, std::memory_order_relaxed); });
    }  // the drain [RT-2.3]
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i << ", pollers " << pollers;
  }
}

// spec: [RT-2.2] [RT-2.3]
// spin_rounds 0 (park as soon as the queue is empty) keeps every promise of the
// default: post order with one carrier, each item once with several, the drain.
TEST(ThreadPool, ParkingAtOnceKeepsOrderExactlyOnceAndTheDrain) {
  constexpr int kItems = 5000;
  std::vector<int> order;
  tt::CountDown all(kItems);
  {
    ThreadPool one(1, 0);
    EXPECT_EQ(one.carriers(), 1u);
    for (int i = 0; i < kItems; ++i) {
      one.post_fn([&order, &all, i] {
        order.push_back(i);
        all.count_down();
      });
    }
    all.wait();
  }
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i) << "FIFO broken at position " << i;
  auto runs = std::make_unique<std::atomic<int>[]>(kItems);
  {
    ThreadPool three(3, 0);
    for (int i = 0; i < kItems; ++i)
      three.post_fn([&runs, i] { runs[i].fetch_add(1, std::memory_order_relaxed); });
  }  // destroyed at once: the drain runs what is queued [RT-2.3]
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
}

// Each item posts the next one, `left` more times.
void post_chain(ThreadPool& pool, std::atomic<int>& ran, int left) {
  pool.post_fn([&pool, &ran, left] {
    ran.fetch_add(1, std::memory_order_relaxed);
    if (left > 0) post_chain(pool, ran, left - 1);
  });
}

// spec: [RT-2.3]
TEST(ThreadPool, DestructionDrainsQueuedItemsAndWhatTheyPost) {
  constexpr int kChains = 50;
  constexpr int kLength = 200;
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int c = 0; c < kChains; ++c) post_chain(pool, ran, kLength - 1);
  }  // destroyed at once: the chains are still being posted
  EXPECT_EQ(ran.load(), kChains * kLength);
}

// spec: [RT-2.3]
TEST(ThreadPool, DestructionRunsItemsQueuedBehindABusyCarrier) {
  constexpr int kItems = 1000;
  std::atomic<int> ran{0};
  tt::Gate hold;
  std::thread opener;
  {
    ThreadPool pool(1);
    pool.post_fn([&] { hold.wait(); });
    for (int i = 0; i < kItems; ++i) pool.post_fn([&] { ran.fetch_add(1); });
    // Opened concurrently with the destruction below; either way nothing queued
    // may be dropped.
    opener = std::thread([&] { hold.open(); });
  }
  opener.join();
  EXPECT_EQ(ran.load(), kItems);
}

// ---------------------------------------------------------- ManualScheduler

// spec: [RT-2.1] [RT-2.4]
TEST(ManualScheduler, RunsNothingByItself) {
  ManualScheduler ms;
  int ran = 0;
  for (int i = 0; i < 3; ++i) ms.post_fn([&] { ++ran; });
  EXPECT_EQ(ran, 0) << "post() ran an item";
  EXPECT_EQ(ms.ready(), 3u);
  EXPECT_EQ(ms.steps(), 0u);
  ms.run_until_idle();
  EXPECT_EQ(ran, 3);
}

// spec: [RT-2.4]
TEST(ManualScheduler, RunNextRunsTheChosenItem) {
  ManualScheduler ms;
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) ms.post_fn([&order, i] { order.push_back(i); });
  ms.run_next(2);
  EXPECT_EQ(order, (std::vector<int>{2}));
  EXPECT_EQ(ms.ready(), 3u);
  ms.run_next(0);  // the oldest
  ms.run_next(1);  // of {1, 3}: 3
  ms.run_next();   // default index 0
  EXPECT_EQ(order, (std::vector<int>{2, 0, 3, 1}));
  EXPECT_EQ(ms.ready(), 0u);
  EXPECT_EQ(ms.steps(), 4u);
}

// spec: [RT-2.4]
TEST(ManualScheduler, RunNextOutOfRangeThrows) {
  ManualScheduler ms;
  EXPECT_THROW(ms.run_next(0), std::out_of_range);
  int ran = 0;
  ms.post_fn([&] { ++ran; });
  ms.post_fn([&] { ++ran; });
  EXPECT_THROW(ms.run_next(2), std::out_of_range);
  EXPECT_EQ(ms.ready(), 2u) << "a refused run_next must not consume an item";
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(ms.steps(), 0u);
  ms.run_until_idle();
  EXPECT_EQ(ran, 2);
}

// spec: [RT-2.4]
TEST(ManualScheduler, DrivingItFromInsideAnItemIsRefused) {
  ManualScheduler ms;
  bool run_next_refused = false;
  bool run_until_idle_refused = false;
  bool other_ran = false;
  ms.post_fn([&] {
    run_next_refused = turnstile_test::throws<FrameworkContextError>([&] { ms.run_next(0); });
    run_until_idle_refused = turnstile_test::throws<FrameworkContextError>([&] { ms.run_until_idle(); });
  });
  ms.post_fn([&] { other_ran = true; });
  ms.run_next(0);
  EXPECT_TRUE(run_next_refused);
  EXPECT_TRUE(run_until_idle_refused);
  EXPECT_FALSE(other_ran) << "the refused call must not have run the other item";
  EXPECT_EQ(ms.ready(), 1u);
  ms.run_until_idle();
  EXPECT_TRUE(other_ran);
}

// spec: [RT-2.4]
TEST(ManualScheduler, RunUntilIdleRunsWhatItemsPost) {
  ManualScheduler ms;
  std::vector<int> order;
  ms.post_fn([&] {
    order.push_back(0);
    ms.post_fn([&] { order.push_back(2); });
  });
  ms.post_fn([&] { order.push_back(1); });
  EXPECT_EQ(ms.run_until_idle(), 3u);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ms.ready(), 0u);
  EXPECT_EQ(ms.run_until_idle(), 0u);
}

// Three fibers, each appending to a shared log around yields.
Task<> logger(char name, int steps, std::string& log) {
  for (int i = 0; i < steps; ++i) {
    log += name;
    log += static_cast<char>('0' + i);
    co_await yield();
  }
}

std::string run_scenario(const std::vector<std::size_t>* replay_choices,
                         std::vector<std::size_t>* record, std::uint64_t seed) {
  ManualScheduler ms;
  std::string log;
  detach(ms, logger('a', 3, log));
  detach(ms, logger('b', 3, log));
  detach(ms, logger('c', 3, log));
  if (replay_choices != nullptr) {
    tt::replay(ms, *replay_choices);
  } else {
    tt::Lcg rng(seed);
    *record = tt::run_random(ms, rng);
  }
  EXPECT_EQ(ms.ready(), 0u);
  return log;
}

// spec: [RT-2.4]
TEST(ManualScheduler, SameChoicesReplayTheSameExecution) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::vector<std::size_t> choices;
    const std::string first = run_scenario(nullptr, &choices, seed);
    EXPECT_EQ(first.size(), 18u);
    const std::string again = run_scenario(&choices, nullptr, 0);
    EXPECT_EQ(first, again) << "seed " << seed;
  }
  // The choices decide the interleaving: oldest-first vs newest-first differ.
  std::vector<std::size_t> oldest(12, 0);
  const std::string fifo = run_scenario(&oldest, nullptr, 0);
  EXPECT_EQ(fifo, "a0b0c0a1b1c1a2b2c2");
  {
    // With three fibers always ready until the end, "newest" is index ready()-1.
    ManualScheduler ms;
    std::string log;
    detach(ms, logger('a', 3, log));
    detach(ms, logger('b', 3, log));
    detach(ms, logger('c', 3, log));
    while (ms.ready() > 0) ms.run_next(ms.ready() - 1);
    EXPECT_EQ(log, "c0c1c2b0b1b2a0a1a2");
  }
}

}  // namespace
