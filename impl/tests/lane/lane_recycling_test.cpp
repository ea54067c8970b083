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
#include <memory>
#include <set>
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

// ------------------------------------------------------------- the depot
// [LANE-7.8]: what a lane's list has no room for goes to the process's depot,
// and a thread that runs out takes a chain from it. The depot is shared by the
// whole process (every test in this binary), so these tests read its changes.

// Empties the process's depot (earlier tests of this binary filled it), so a
// test sees only what it put there itself.
void empty_spare_depot() {
  while (detail::SpareCore::Spare* chain = detail::spare_depot().take()) detail::SpareCore::release_all(chain);
}

// Floods one lane with `n` items from this thread and drains them; returns
// where each item was built.
std::vector<const void*> flood(ManualScheduler& ms, StateLane& lane, int n, std::vector<int>& ran) {
  std::vector<const void*> at(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(lane.try_post(Probe(&ran, i, &at[static_cast<std::size_t>(i)])));
  ms.run_until_idle();
  return at;
}

// spec: [LANE-7.8] [LANE-5.2]
TEST(LaneRecycling, AFloodsStorageGoesToTheDepotAndTheNextFloodIsBuiltInIt) {
  ManualScheduler ms;
  StateLane lane("flood", ms);
  auto& depot = detail::spare_depot();
  // This flood's storage is then new, and the second flood's can only be the first's.
  empty_spare_depot();
  std::vector<int> ran;
  constexpr int kItems = 1000;  // far more than a lane keeps (32 plus a step)
  const std::size_t before = depot.spares();
  ASSERT_EQ(before, 0u);
  const auto first = flood(ms, lane, kItems, ran);
  const std::size_t kept = depot.spares();
  // All but what the lane's list and this thread's chain hold went to the depot.
  EXPECT_GE(kept, before + kItems - 32 - 64 - 64);
  const auto second = flood(ms, lane, kItems, ran);
  std::set<const void*> used(first.begin(), first.end());
  std::size_t reused = 0;
  for (const void* p : second) reused += used.count(p);
  // Every item of the second flood was built in storage of the first: this
  // thread's chain (which also holds each drain step's last storage), the
  // lane's list, then the depot's chains. None new.
  EXPECT_EQ(reused, static_cast<std::size_t>(kItems));
  std::vector<int> expected;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < kItems; ++i) expected.push_back(i);
  EXPECT_EQ(ran, expected);  // each ran once, in order
  sync_wait(lane.close());
}

// spec: [LANE-7.8]
TEST(LaneRecycling, TheDepotKeepsNoMoreThanItsBoundAndAFloodPastItLosesNothing) {
  ManualScheduler ms;
  StateLane lane("past-the-bound", ms);
  constexpr std::size_t kBound = detail::kDepotBytes / detail::SpareCore::kSpareBytes;
  const int items = static_cast<int>(kBound) + 5000;
  std::vector<int> ran;
  flood(ms, lane, items, ran);
  EXPECT_LE(detail::spare_depot().spares(), kBound);
  ASSERT_EQ(ran.size(), static_cast<std::size_t>(items));
  for (int i = 0; i < items; ++i) ASSERT_EQ(ran[static_cast<std::size_t>(i)], i);
  sync_wait(lane.close());
}

// spec: [LANE-7.8]
TEST(LaneRecycling, ACarrierThatDrainsManyOneItemLanesGivesItsChainToTheDepotInBoundedPieces) {
  auto& depot = detail::spare_depot();
  empty_spare_depot();
  ManualScheduler ms;
  constexpr int kLanes = 400;  // one item each: every drain step's last storage is this thread's
  std::vector<std::unique_ptr<StateLane>> lanes;
  for (int i = 0; i < kLanes; ++i) lanes.push_back(std::make_unique<StateLane>("one-item", ms));
  int ran = 0;
  for (auto& lane : lanes) ASSERT_TRUE(lane->try_post([&ran] { ++ran; }));
  // This thread's chain is long when the drains start (as after a refill of a
  // long chain): its length must not carry over into the chains it gives.
  for (int i = 0; i < 200; ++i) detail::give_back_item_storage(::operator new(detail::SpareCore::kSpareBytes));
  ms.run_until_idle();
  EXPECT_EQ(ran, kLanes);
  // The drains' storage left this thread in pieces, none longer than
  // kMaxDepotChain, and most of it is in the depot now.
  std::size_t in_depot = 0;
  std::size_t chains = 0;
  for (std::size_t n = 0; detail::SpareCore::Spare* chain = depot.take(&n); n = 0) {
    EXPECT_LE(n, detail::kMaxDepotChain);
    in_depot += n;
    ++chains;
    detail::SpareCore::release_all(chain);
  }
  EXPECT_GE(chains, 2u);
  EXPECT_GE(in_depot, static_cast<std::size_t>(kLanes) + 200 - detail::kSlotMaxSpares - detail::kSlotCheckSteps);
  for (auto& lane : lanes) sync_wait(lane->close());
}

// The depot alone (BasicSpareDepot<StdSync>, a private one): a chain is kept
// whole and handed out whole, newest first; what passes either bound is freed
// (the asan preset's leak check proves it freed, not dropped).
// spec: [LANE-7.8]
TEST(SpareDepot, KeepsWholeChainsNewestFirstWithinBothBoundsAndFreesTheRest) {
  using Core = detail::SpareCore;
  Core::SpareDepot depot(/*max_spares=*/5, /*max_chains=*/2);
  auto chain_of = [](std::size_t n, std::vector<void*>& blocks) {
    Core::Spare* chain = nullptr;
    for (std::size_t i = 0; i < n; ++i) {
      void* storage = ::operator new(Core::kSpareBytes);
      blocks.push_back(storage);
      Core::push_storage(chain, storage);  // the last pushed is the chain's head
    }
    return chain;
  };
  std::vector<void*> a, b, c, d;
  depot.give(chain_of(2, a), 2);
  depot.give(chain_of(3, b), 3);
  EXPECT_EQ(depot.spares(), 5u);
  depot.give(chain_of(1, c), 1);  // past max_spares: freed
  EXPECT_EQ(depot.spares(), 5u);
  depot.give(nullptr, 0);  // ignored
  Core::Spare* got = depot.take();  // the newest: b's, whole
  EXPECT_EQ(depot.spares(), 2u);
  for (auto it = b.rbegin(); it != b.rend(); ++it) {
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(Core::take_storage(got), *it);
    ::operator delete(*it);
  }
  EXPECT_EQ(got, nullptr);
  depot.give(chain_of(1, d), 1);
  depot.give(chain_of(1, c), 1);  // a third chain past max_chains: freed
  EXPECT_EQ(depot.spares(), 3u);
  got = depot.take();
  EXPECT_EQ(Core::take_storage(got), d.back());
  ::operator delete(d.back());
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(depot.spares(), 2u);  // a's chain stays: the destructor frees it
}

}  // namespace
