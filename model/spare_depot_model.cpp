// model/spare_depot_model.cpp: Relacy model of the process's depot of recycled
// item storage: turnstile::detail::BasicSpareDepot<RelacySync, BasicLaneCore<
// RelacySync>>, the product's own template (impl/include/turnstile/detail/
// spare_depot.hpp), the one detail::spare_depot() instantiates with StdSync.
//
// spec: [LANE-7.8]
// spec: [RT-1.7]
//   LANE-7.8: the storage kept for reuse is bounded, per lane and per process;
//   kept storage is handed to one item at a time and nothing is lost.
//   RT-1.7: the block caches of frames and call records exchange chains
//   through depots of this very type (block_cache.cpp, one per size class),
//   relying on take()'s reported length, checked here too.
// Invariants exercised: [DEPOT-I1] (a chain is kept or owned by one thread,
// never both: no two takes return it), [DEPOT-I2] (at most max_spares spares in
// at most max_chains chains; what does not fit is freed, nothing leaks).
// The lane's side (a drain gives what its list has no room for, a submitter
// takes a chain when its own is empty) is model/lane_model.cpp's
// recycled-through-depot suite.
//
// How the product is modelled:
//  - storage is ::operator new(kSpareBytes), as take_item_storage()'s is;
//    a Block (the stand-in for a lane item) is built in it while a thread uses
//    it, and destroyed before the storage becomes a spare (make_spare), as an
//    item's complete() does. A Block's tag is a Sync::var written when it is
//    built and read before it is destroyed: two threads handed the same
//    storage build over each other's Block, a data race (or use of freed
//    memory, or a double free, whichever the schedule reaches first);
//  - givers are drains: they build Blocks, chain their storage and give() the
//    chain, as Kept::release() does; takers are submitters whose chain ran
//    out: they take() a chain and use each spare in turn;
//  - the bound is max_spares 3 in max_chains 2, so a third chain, or one that
//    would pass 3 spares, is refused and freed by its giver.
// At the end every thread frees what it holds and the depot is destroyed with
// what it keeps: Relacy's heap checks then prove nothing leaked and nothing
// was freed twice.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/lane_core.hpp"
#include "turnstile/detail/spare_depot.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Core = turnstile::detail::BasicLaneCore<Sync>;
using Depot = Core::SpareDepot;
using Spare = Core::Spare;

constexpr std::size_t kMaxSpares = 3;
constexpr std::size_t kMaxChains = 2;

// The stand-in for an item built in a spare's storage.
struct Block {
  explicit Block(int tag) : tag_(tag) {}
  int tag() const { return tag_.load(); }

 private:
  Sync::var<int> tag_;
};
static_assert(sizeof(Block) <= Core::kSpareBytes);

#pragma push_macro("new")
#undef new
// A Block in new storage, or in `storage` (a spare's, taken off a chain).
Block* build(int tag, void* storage = nullptr) {
  if (storage == nullptr) storage = ::operator new(Core::kSpareBytes);
  return ::new (storage) Block(tag);
}
#pragma pop_macro("new")

// The Block's storage as a spare at the head of `chain`, as complete() does.
void retire(Block* block, Spare*& chain, int tag) {
  RL_ASSERT(block->tag() == tag);  // nobody built over it while this thread held it
  void* storage = block;
  block->~Block();
  Core::push_storage(chain, storage);
}

// A drain's give: `n` new Blocks, used, chained and given whole.
void give_new(Depot& depot, std::size_t n, int tag) {
  Spare* chain = nullptr;
  for (std::size_t i = 0; i < n; ++i) retire(build(tag), chain, tag);
  depot.give(chain, n);  // [DEPOT-I1] no longer this thread's
  RL_ASSERT(depot.spares() <= kMaxSpares);  // [DEPOT-I2]
}

// A submitter's take: a chain, each spare used for a Block in turn, then the
// storage kept on this thread's own chain (the product's slot). Returns the
// number of spares the chain held.
std::size_t take_and_use(Depot& depot, Spare*& own, int tag) {
  std::size_t told = 0;
  Spare* chain = depot.take(&told);  // [DEPOT-I1] now this thread's alone
  std::size_t n = 0;
  while (chain != nullptr) {
    Block* block = build(tag, Core::take_storage(chain));
    retire(block, own, tag);
    ++n;
  }
  RL_ASSERT(n == told);  // the length take() reports is the chain's (block_cache.cpp counts on it)
  return n;
}

// give-take: two drains give, two submitters take.
//  thread 0: gives a chain of 2, then a chain of 1;
//  thread 1: gives a chain of 2, then takes a chain and uses it;
//  thread 2: takes a chain and uses it, twice.
// Checks: no chain is handed to two threads (a race on a Block's tag, a use of
// freed memory or a double free); the depot never keeps more than 3 spares or
// 2 chains; at the end what the threads hold plus what the depot keeps is
// freed once, nothing leaks.
struct GiveTake : rl::test_suite<GiveTake, 3> {
  static constexpr const char* kChecks =
      "chains given by two drains and taken by two submitters: no chain handed out twice, "
      "at most 3 spares in 2 chains kept, what does not fit freed, no leak, no double free";
  Depot* depot = nullptr;
  Spare* own[3] = {};  // each thread's own chain (own thread only)

  void before() { depot = new Depot(kMaxSpares, kMaxChains); }
  void thread(unsigned idx) {
    if (idx == 0) {
      give_new(*depot, 2, 10);
      give_new(*depot, 1, 11);
    } else if (idx == 1) {
      give_new(*depot, 2, 20);
      take_and_use(*depot, own[1], 21);
    } else {
      take_and_use(*depot, own[2], 30);
      take_and_use(*depot, own[2], 31);
    }
    Core::release_all(own[idx]);  // the thread's chain, freed at its exit
  }
  void after() {
    RL_ASSERT(depot->spares() <= kMaxSpares);  // [DEPOT-I2]
    delete depot;  // frees the chains it keeps
  }
};

// refill-round: the product's round trip. A submitter takes what a drain gave
// while the drain gives more; every spare that went in comes out once.
//  thread 0: gives 1, gives 2 (refused when it would pass 3 spares);
//  thread 1: takes and uses, gives back what it used as one chain;
//  thread 2: takes and uses.
struct RefillRound : rl::test_suite<RefillRound, 3> {
  static constexpr const char* kChecks =
      "a chain taken, used and given back while others give and take: kept within the bound, "
      "each spare used by one thread at a time, no leak, no double free";
  Depot* depot = nullptr;
  Spare* own[3] = {};

  void before() { depot = new Depot(kMaxSpares, kMaxChains); }
  void thread(unsigned idx) {
    if (idx == 0) {
      give_new(*depot, 1, 10);
      give_new(*depot, 2, 11);
    } else if (idx == 1) {
      const std::size_t n = take_and_use(*depot, own[1], 20);
      Spare* back = own[1];
      own[1] = nullptr;
      depot->give(back, n);  // as a drain gives the storage it completed
      RL_ASSERT(depot->spares() <= kMaxSpares);
    } else {
      take_and_use(*depot, own[2], 30);
    }
    Core::release_all(own[idx]);
  }
  void after() {
    RL_ASSERT(depot->spares() <= kMaxSpares);
    delete depot;
  }
};

}  // namespace

TURNSTILE_MODEL_MAIN("spare_depot", {
    suite<GiveTake, "give-take">({bounded(2), random_search(200000)}),
    suite<RefillRound, "refill-round">({bounded(2), random_search(200000)}),
})
