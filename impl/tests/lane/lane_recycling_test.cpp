// lane_recycling_test.cpp: the lane core's throughput mechanisms
// (detail/lane_core.hpp): try_post items built in recycled storage ([LANE-I6])
// and drain steps that take the queue whole ([LANE-I7]).
//
// Recycled storage: the drain keeps a completed item's
// storage on the lane's spare list, a later submission takes it back into its
// thread's slot, and the next try_post on that thread builds its item there.
// Recycling must change nothing a user can see except the allocations: each
// item runs once, in FIFO order, failures and refusals lose nothing.
//
// Storage addresses are observed through the callable: a Probe records `this`
// when it is moved into its item (the last move) and when it runs.
#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <vector>

#include "lane_support.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/threads.hpp"

namespace {

using namespace turnstile;

struct Probe {
  std::vector<int>* ran;
  int id;
  const void** built_at;  // where the last move put this callable (its item's storage)
  Probe(std::vector<int>* r, int i, const void** b) : ran(r), id(i), built_at(b) {}
  Probe(Probe&& o) noexcept : ran(o.ran), id(o.id), built_at(o.built_at) { *built_at = this; }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  Probe& operator=(Probe&&) = delete;
  ~Probe() = default;
  void operator()() const { ran->push_back(id); }
};

// spec: [LANE-5.2]
TEST(LaneRecycling, ACompletedItemsStorageIsReusedByTheNextTryPostInFifoOrder) {
  ManualScheduler ms;
  StateLane lane("recycled", ms);
  std::vector<int> ran;
  std::array<const void*, 6> at{};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(lane.try_post(Probe(&ran, i, &at[i])));
  ms.run_until_idle();  // one drain: items 0 and 1 are kept, 2 (the last) is freed
  for (int i = 3; i < 6; ++i) ASSERT_TRUE(lane.try_post(Probe(&ran, i, &at[i])));
  ms.run_until_idle();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // Item 3's submission took item 1's storage into this thread's slot, item 4
  // was built there and its submission took item 0's, item 5 was built there.
  EXPECT_EQ(at[4], at[1]);
  EXPECT_EQ(at[5], at[0]);
  sync_wait(lane.close());
}

// spec: [LANE-7.4]
TEST(LaneRecycling, ARefusedItemsStorageGoesBackToItsThread) {
  ManualScheduler ms;
  StateLane open_lane("open", ms);
  StateLane shut("shut", ms);
  auto closing = shut.close();
  (void)closing;
  std::vector<int> ran;
  const void* refused_at = nullptr;
  const void* next_at = nullptr;
  EXPECT_FALSE(shut.try_post(Probe(&ran, 1, &refused_at)));
  ASSERT_TRUE(open_lane.try_post(Probe(&ran, 2, &next_at)));
  EXPECT_EQ(next_at, refused_at);  // the refused item's storage, not a new one
  ms.run_until_idle();
  EXPECT_EQ(ran, (std::vector<int>{2}));  // the refused item never ran
  sync_wait(open_lane.close());
}

struct ThrowingMove {
  int* runs;
  bool throw_on_move;
  ThrowingMove(int* r, bool t) : runs(r), throw_on_move(t) {}
  ThrowingMove(ThrowingMove&& o) : runs(o.runs), throw_on_move(o.throw_on_move) {
    if (throw_on_move) throw std::runtime_error("move failed");
  }
  ThrowingMove(const ThrowingMove&) = delete;
  ThrowingMove& operator=(const ThrowingMove&) = delete;
  ThrowingMove& operator=(ThrowingMove&&) = delete;
  ~ThrowingMove() = default;
  void operator()() const { ++*runs; }
};

// spec: [LANE-7.5]
TEST(LaneRecycling, ACallableThatThrowsWhileBuiltReachesTheCallerAndLosesNothing) {
  ManualScheduler ms;
  StateLane lane("throwing-build", ms);
  int runs = 0;
  ThrowingMove bad(&runs, true);
  EXPECT_THROW((void)lane.try_post(std::move(bad)), std::runtime_error);  // nothing queued
  EXPECT_EQ(ms.ready(), 0u);
  ASSERT_TRUE(lane.try_post(ThrowingMove(&runs, false)));  // the lane goes on
  ms.run_until_idle();
  EXPECT_EQ(runs, 1);
  sync_wait(lane.close());  // the leak checker (asan presets) sees the storage freed
}

// spec: [LANE-5.2]
TEST(LaneRecycling, ALargeCallableIsAllocatedOnItsOwnAndRunsInOrder) {
  ManualScheduler ms;
  StateLane lane("large", ms);
  std::vector<int> ran;
  std::array<char, 512> big{};
  big[0] = 7;
  for (int i = 0; i < 4; ++i) {
    if (i % 2 == 0) {
      ASSERT_TRUE(lane.try_post([&ran, big, i] { ran.push_back(i + big[0] - 7); }));
    } else {
      ASSERT_TRUE(lane.try_post([&ran, i] { ran.push_back(i); }));
    }
  }
  ms.run_until_idle();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3}));
  sync_wait(lane.close());
}

// [LANE-I7] a drain step takes the whole queue but runs at most its budget;
// the rest goes back to the front, ahead of items submitted meanwhile (here, by
// one of the batch's own turns, [LANE-7.7], and after the step).
// spec: [LANE-5.2] [LANE-7.7]
TEST(LaneBatches, AStepLeavesTheRestOfItsBatchAheadOfLaterSubmissions) {
  ManualScheduler ms;
  StateLane lane("batched", ms);
  std::vector<int> ran;
  const auto post = [&](int i) {
    ASSERT_TRUE(lane.try_post([&ran, &lane, i] {
      ran.push_back(i);
      if (i == 5) {
        EXPECT_TRUE(lane.try_post([&ran] { ran.push_back(1000); }));  // queued behind
      }
    }));
  };
  for (int i = 0; i < 200; ++i) post(i);
  ASSERT_EQ(ms.ready(), 1u);  // one drain posted
  ms.run_next(0);             // one step of it
  const std::size_t first_step = ran.size();
  EXPECT_GT(first_step, 5u);
  EXPECT_LT(first_step, 200u);  // a step is bounded: the rest was put back
  for (int i = 200; i < 210; ++i) post(i);
  EXPECT_EQ(ms.ready(), 1u);  // the drain reposted itself; no second drain started
  ms.run_until_idle();
  std::vector<int> expected;
  for (int i = 0; i < 200; ++i) expected.push_back(i);
  expected.push_back(1000);  // submitted after 0..199, before 200..209
  for (int i = 200; i < 210; ++i) expected.push_back(i);
  EXPECT_EQ(ran, expected);
  sync_wait(lane.close());
}

// Real carriers and producers (the tsan preset runs this): spares go round
// between the producers' slots and the drains on two carriers.
// spec: [LANE-5.2] [LANE-5.1]
TEST(LaneRecycling, SparesGoRoundBetweenProducersAndCarriersAndNothingIsLost) {
  constexpr int kProducers = 3;
  constexpr int kItems = 2000;
  ThreadPool pool(2);
  StateLane lane("recycled-threads", pool);
  std::array<std::vector<int>, kProducers> seen;  // written in turns only
  turnstile_test::run_threads(kProducers, [&](int p) {
    for (int i = 0; i < kItems; ++i)
      ASSERT_TRUE(lane.try_post([&seen, p, i] { seen[static_cast<std::size_t>(p)].push_back(i); }));
  });
  sync_wait(lane.close());
  for (const auto& s : seen) {
    ASSERT_EQ(s.size(), static_cast<std::size_t>(kItems));
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(s[static_cast<std::size_t>(i)], i);  // FIFO
  }
}

}  // namespace
