// lane_recycling_test.cpp: the lane core's throughput mechanisms: try_post
// items built in slabs ([LANE-7.9], detail/item_slab.hpp), drain steps that
// take the queue whole ([LANE-I7]), and the recycled storage of Strand steps
// ([LANE-7.8], detail/lane_core.hpp [LANE-I6], detail/spare_depot.hpp).
//
// Slabs: a thread builds its try_post items front to back in its slab, a 4 KiB
// page, each in whole cache lines; a slab whose thread moved on and whose items
// all ran goes to the process's pool of free slabs, and the next slab a thread
// needs comes from there. Storage must change nothing a user can see except
// the allocations and the addresses: each item runs once, in FIFO order,
// failures and refusals lose nothing.
//
// Storage addresses are observed through the callable: a Probe records `this`
// when it is moved into its item (the last move) and when it runs.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>
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

using Slabs = detail::ItemSlabs;
constexpr std::uintptr_t kSlabBytes = Slabs::kSlabBytes;
constexpr std::uintptr_t kLine = Slabs::kLine;

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
// The slab (page) an item was built in, and its offset there.
std::uintptr_t slab_of(const void* p) { return address(p) & ~(kSlabBytes - 1); }
std::uintptr_t offset_in_slab(const void* p) { return address(p) & (kSlabBytes - 1); }

// Empties the process's pool of free slabs (earlier tests of this binary, or
// an earlier repetition, may have filled it to its bound), so a test sees only
// what it put there itself. False when the pool keeps none (bound 0).
bool empty_slab_pool() {
  detail::item_slabs().release_free_slabs();
  return detail::kFreeSlabBytes / Slabs::kSlabBytes > 0;
}

// Posts Probes to `lane` until one lands in the first slot of a slab: this
// thread's next items then fill that slab from its front. Returns how many.
int start_a_fresh_slab(StateLane& lane, std::vector<int>& ran) {
  for (int n = 1;; ++n) {
    const void* at = nullptr;
    EXPECT_TRUE(lane.try_post(Probe(&ran, -1, &at)));
    if (offset_in_slab(at) / kLine == 1) return n;  // the header is the slab's first line
  }
}

// spec: [LANE-7.9] [LANE-5.2]
TEST(LaneRecycling, OneThreadsItemsFillItsSlabFrontToBackInWholeLinesAndRunInFifoOrder) {
  ManualScheduler ms;
  StateLane lane("slab", ms);
  std::vector<int> ran;
  start_a_fresh_slab(lane, ran);
  std::array<const void*, 8> at{};
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(lane.try_post(Probe(&ran, i, &at[static_cast<std::size_t>(i)])));
  ms.run_until_idle();
  std::vector<int> mine;
  for (int id : ran)
    if (id >= 0) mine.push_back(id);
  EXPECT_EQ(mine, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // The slab's second slot, then the next line each: side by side, no two in one line.
  for (std::size_t i = 0; i < at.size(); ++i) {
    EXPECT_EQ(slab_of(at[i]), slab_of(at[0]));
    EXPECT_EQ(address(at[i]) / kLine, address(at[0]) / kLine + i) << "item " << i;
  }
  EXPECT_EQ(offset_in_slab(at[0]) / kLine, 2u);  // after the header and the fresh slab's first item
  sync_wait(lane.close());
}

// spec: [LANE-7.9]
TEST(LaneRecycling, AnItemLongerThanALineTakesWholeLinesAndTheNextStartsAfterThem) {
  ManualScheduler ms;
  StateLane lane("two-lines", ms);
  std::vector<int> ran;
  start_a_fresh_slab(lane, ran);
  std::array<char, 48> payload{};  // with the item's own 40 bytes and 3 more captures: 112, two lines
  payload[0] = 1;
  std::array<const void*, 4> at{};
  for (std::size_t i = 0; i < at.size(); ++i) {
    const void** where = &at[i];
    ASSERT_TRUE(lane.try_post([&ran, payload, where, i] {
      *where = &payload;  // the copy inside the item, in its slot
      ran.push_back(static_cast<int>(i) + payload[0] - 1);
    }));
  }
  ms.run_until_idle();
  for (std::size_t i = 1; i < at.size(); ++i) {
    EXPECT_EQ(slab_of(at[i]), slab_of(at[0]));
    EXPECT_EQ(address(at[i]) - address(at[i - 1]), 2 * kLine) << "item " << i;  // two whole lines each
  }
  std::vector<int> mine;
  for (int id : ran)
    if (id >= 0) mine.push_back(id);
  EXPECT_EQ(mine, (std::vector<int>{0, 1, 2, 3}));
  sync_wait(lane.close());
}

// spec: [LANE-7.9]
TEST(LaneRecycling, ASlabWhoseThreadMovedOnAndWhoseItemsAllRanIsTheNextSlabTaken) {
  if (!empty_slab_pool()) GTEST_SKIP() << "[LANE-7.9] TURNSTILE_SPARE_DEPOT_BYTES is 0: the pool keeps no slab to observe";
  ManualScheduler ms;
  StateLane lane("slab-reuse", ms);
  std::vector<int> ran;
  start_a_fresh_slab(lane, ran);
  ms.run_until_idle();  // the slab this thread left, if any, is free now
  // Fill slab A (its first slot is taken): the item that does not fit starts slab B.
  const void* first = nullptr;
  ASSERT_TRUE(lane.try_post(Probe(&ran, 0, &first)));
  const std::uintptr_t slab_a = slab_of(first);
  const void* at = first;
  while (slab_of(at) == slab_a) ASSERT_TRUE(lane.try_post(Probe(&ran, 1, &at)));
  const std::uintptr_t slab_b = slab_of(at);
  // A is sealed but its items are queued: it is not free yet.
  const std::size_t free_now = detail::item_slabs().free_slabs();
  ms.run_until_idle();  // A's last item released: A goes to the pool
  EXPECT_EQ(detail::item_slabs().free_slabs(), free_now + 1);
  // Filling B takes the newest free slab: A.
  while (slab_of(at) == slab_b) ASSERT_TRUE(lane.try_post(Probe(&ran, 2, &at)));
  EXPECT_EQ(slab_of(at), slab_a);
  EXPECT_EQ(offset_in_slab(at) / kLine, 1u);  // from its front again
  EXPECT_EQ(detail::item_slabs().free_slabs(), free_now);
  ms.run_until_idle();
  sync_wait(lane.close());
}

// spec: [LANE-7.4] [LANE-7.9]
TEST(LaneRecycling, ARefusedItemsSlotIsReleasedAtOnce) {
  if (!empty_slab_pool()) GTEST_SKIP() << "[LANE-7.9] TURNSTILE_SPARE_DEPOT_BYTES is 0: the pool keeps no slab to observe";
  ManualScheduler ms;
  StateLane open_lane("open", ms);
  StateLane shut("shut", ms);
  auto closing = shut.close();
  (void)closing;
  std::vector<int> ran;
  start_a_fresh_slab(open_lane, ran);
  ms.run_until_idle();  // the fresh slab's first item ran: only refusals will hold it
  const std::size_t free_before = detail::item_slabs().free_slabs();
  const void* at = nullptr;
  ASSERT_TRUE(open_lane.try_post(Probe(&ran, 1, &at)));
  const std::uintptr_t slab = slab_of(at);
  ms.run_until_idle();
  // Fill the rest of this slab with refused items, until one starts a slab.
  const void* refused_at = nullptr;
  int refused = 0;
  do {
    EXPECT_FALSE(shut.try_post(Probe(&ran, 9, &refused_at)));
    ++refused;
  } while (offset_in_slab(refused_at) / kLine != 1);
  EXPECT_GT(refused, 1);
  // Every slot of the old slab was released (the refused ones at once), so
  // sealing it made it free, and it was the slab taken next: the same page,
  // from its front, and the pool as it was.
  EXPECT_EQ(slab_of(refused_at), slab);
  EXPECT_EQ(detail::item_slabs().free_slabs(), free_before);
  ms.run_until_idle();
  for (int id : ran) EXPECT_NE(id, 9);  // no refused item ran
  sync_wait(open_lane.close());
}

// spec: [LANE-7.9]
TEST(LaneRecycling, AThreadThatExitsGivesUpItsSlabWhichIsFreeOnceItsItemsRan) {
  if (!empty_slab_pool()) GTEST_SKIP() << "[LANE-7.9] TURNSTILE_SPARE_DEPOT_BYTES is 0: the pool keeps no slab to observe";
  ManualScheduler ms;
  StateLane lane("exiting-thread", ms);
  std::vector<int> ran;
  const void* at = nullptr;
  std::thread producer([&] {
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(lane.try_post(Probe(&ran, i, &at)));
  });
  producer.join();  // its slab is sealed, its 3 items still queued
  const std::size_t free_now = detail::item_slabs().free_slabs();
  ms.run_until_idle();  // the last item's release frees the slab
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(detail::item_slabs().free_slabs(), free_now + 1);
  // This thread's next slab is the newest free one: the exited thread's.
  std::vector<int> mine;
  const void* next = nullptr;
  do {
    ASSERT_TRUE(lane.try_post(Probe(&mine, 0, &next)));
  } while (offset_in_slab(next) / kLine != 1);
  EXPECT_EQ(slab_of(next), slab_of(at));
  ms.run_until_idle();
  sync_wait(lane.close());
}

// A callable whose n-th move throws (moves counted in *moves): try_post takes
// it by value (the first move), then moves it into its item, built in a slot.
struct ThrowingMove {
  int* runs;
  int* moves;
  int throw_at;
  ThrowingMove(int* r, int* m, int t) : runs(r), moves(m), throw_at(t) {}
  ThrowingMove(ThrowingMove&& o) : runs(o.runs), moves(o.moves), throw_at(o.throw_at) {
    if (++*moves == throw_at) throw std::runtime_error("move failed");
  }
  ThrowingMove(const ThrowingMove&) = delete;
  ThrowingMove& operator=(const ThrowingMove&) = delete;
  ThrowingMove& operator=(ThrowingMove&&) = delete;
  ~ThrowingMove() = default;
  void operator()() const { ++*runs; }
};

// spec: [LANE-7.5] [LANE-7.9]
TEST(LaneRecycling, ACallableThatThrowsWhileBuiltReachesTheCallerAndLosesNothing) {
  ManualScheduler ms;
  StateLane lane("throwing-build", ms);
  int runs = 0;
  int moves = 0;
  // The second move is the one into the item, inside try_post: its slot is
  // released and the exception reaches the caller.
  EXPECT_THROW((void)lane.try_post(ThrowingMove(&runs, &moves, 2)), std::runtime_error);
  EXPECT_EQ(moves, 2);
  EXPECT_EQ(ms.ready(), 0u);  // nothing queued
  moves = 0;
  ASSERT_TRUE(lane.try_post(ThrowingMove(&runs, &moves, -1)));  // the lane goes on
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

// Real carriers and producers (the tsan preset runs this): slabs go round
// between the producers, which fill them, and the drains on two carriers,
// which release their slots.
// spec: [LANE-5.2] [LANE-5.1] [LANE-7.9]
TEST(LaneRecycling, SlabsGoRoundBetweenProducersAndCarriersAndNothingIsLost) {
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

// ------------------------------------------------------------- the pool of free slabs
// [LANE-7.9]: a flood's slabs go to the process's pool as their items run, and
// the next flood's items are built in them. The pool is shared by the whole
// process (every test in this binary), so these tests read its changes.

// Floods one lane with `n` items from this thread and drains them; returns
// where each item was built.
std::vector<const void*> flood(ManualScheduler& ms, StateLane& lane, int n, std::vector<int>& ran) {
  std::vector<const void*> at(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_TRUE(lane.try_post(Probe(&ran, i, &at[static_cast<std::size_t>(i)])));
  ms.run_until_idle();
  return at;
}

// spec: [LANE-7.9] [LANE-5.2]
TEST(LaneRecycling, AFloodsSlabsGoToThePoolAndTheNextFloodIsBuiltInThem) {
  if (!empty_slab_pool()) GTEST_SKIP() << "[LANE-7.9] TURNSTILE_SPARE_DEPOT_BYTES is 0: the pool keeps no slab to observe";
  ManualScheduler ms;
  StateLane lane("flood", ms);
  std::vector<int> warm;
  start_a_fresh_slab(lane, warm);
  ms.run_until_idle();
  std::vector<int> ran;
  constexpr int kItems = 1000;  // 16 slabs of 63 one-line items
  const auto first = flood(ms, lane, kItems, ran);
  std::set<std::uintptr_t> first_slabs;
  for (const void* p : first) first_slabs.insert(slab_of(p));
  EXPECT_GE(first_slabs.size(), static_cast<std::size_t>(kItems / 63));
  // Every slab this thread moved on from is free again: all but the one it
  // fills (the pool may hold others too, and lent some to this flood).
  EXPECT_GE(detail::item_slabs().free_slabs(), first_slabs.size() - 1);
  const auto second = flood(ms, lane, kItems, ran);
  std::set<std::uintptr_t> other_slabs;
  for (const void* p : second)
    if (first_slabs.count(slab_of(p)) == 0) other_slabs.insert(slab_of(p));
  // The second flood was built in the first's slabs (the one this thread was
  // still filling, then the pool's, newest first), all but its last few items:
  // it needs one slab more than the first left free, as the first flood's
  // last slab was part filled when the second began.
  EXPECT_LE(other_slabs.size(), 1u);
  std::vector<int> expected;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < kItems; ++i) expected.push_back(i);
  EXPECT_EQ(ran, expected);  // each ran once, in order
  sync_wait(lane.close());
}

// spec: [LANE-7.9]
TEST(LaneRecycling, ThePoolKeepsNoMoreThanItsBoundAndAFloodPastItLosesNothing) {
  if (!empty_slab_pool()) GTEST_SKIP() << "[LANE-7.9] TURNSTILE_SPARE_DEPOT_BYTES is 0: the pool keeps no slab to observe";
  ManualScheduler ms;
  StateLane lane("past-the-bound", ms);
  constexpr std::size_t kBound = detail::kFreeSlabBytes / Slabs::kSlabBytes;
  const int items = static_cast<int>((kBound + 20) * 63);  // 20 slabs past the bound
  std::vector<int> ran;
  flood(ms, lane, items, ran);
  EXPECT_LE(detail::item_slabs().free_slabs(), kBound);
  EXPECT_GE(detail::item_slabs().free_slabs(), kBound > 0 ? kBound - 1 : 0);  // full, less rounding
  ASSERT_EQ(ran.size(), static_cast<std::size_t>(items));
  for (int i = 0; i < items; ++i) ASSERT_EQ(ran[static_cast<std::size_t>(i)], i);
  sync_wait(lane.close());
}

// ------------------------------------------------------------- the depot
// [LANE-7.8]: a Strand step's storage is a spare: what a strand's list has no
// room for goes to the process's depot, and a thread that runs out takes a
// chain from it. The depot is shared by the whole process.

// Empties the process's depot (earlier tests of this binary filled it), so a
// test sees only what it put there itself.
void empty_spare_depot() {
  while (detail::SpareCore::Spare* chain = detail::spare_depot().take()) detail::SpareCore::release_all(chain);
}

// One step posted to a strand: counts its run.
class CountingStep final : public Runnable {
 public:
  explicit CountingStep(int* runs) : runs_(runs) {}
  void run() noexcept override { ++*runs_; }

 private:
  int* runs_;
};

// spec: [LANE-7.8]
TEST(LaneRecycling, ACarrierThatDrainsManyOneStepStrandsGivesItsChainToTheDepotInBoundedPieces) {
  auto& depot = detail::spare_depot();
  empty_spare_depot();
  ManualScheduler ms;
  constexpr int kStrands = 400;  // one step each: every drain step's last storage is this thread's
  std::vector<std::shared_ptr<Strand>> strands;
  for (int i = 0; i < kStrands; ++i) strands.push_back(std::make_shared<Strand>(ms));
  int ran = 0;
  CountingStep step(&ran);
  for (auto& strand : strands) strand->post(step);
  // This thread's chain is long when the drains start (as after a refill of a
  // long chain): its length must not carry over into the chains it gives.
  for (int i = 0; i < 200; ++i) detail::give_back_item_storage(::operator new(detail::SpareCore::kSpareBytes));
  ms.run_until_idle();
  EXPECT_EQ(ran, kStrands);
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
  EXPECT_GE(in_depot, static_cast<std::size_t>(kStrands) + 200 - detail::kSlotMaxSpares - detail::kSlotCheckSteps);
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
