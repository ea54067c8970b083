// model/item_slab_model.cpp: Relacy model of the slabs try_post items are
// built in: turnstile::detail::BasicItemSlabs<RelacySync, Storage>, the
// product's own template (impl/include/turnstile/detail/item_slab.hpp), the one
// detail::item_slabs() instantiates with StdSync.
//
// spec: [LANE-7.9]
//   LANE-7.9: a slot holds one item at a time; a slab is reused only after its
//   thread moved on and every slot taken from it was released; at most the
//   bound of free slabs is kept; nothing is lost or leaked.
// Invariants exercised: [SLAB-I1] (the claims reach zero once, at the last of
// the seal and the releases, and that decrement acquires every release's
// accesses), [SLAB-I2] (a slot is handed out once per life of its slab),
// [SLAB-I3] (at most max_free free slabs; the rest freed).
//
// How the product is modelled:
//  - a slab is 512 bytes: the header "line" (128 bytes here, as Relacy's atomics
//    are larger than the product's) and 3 slots of one line, so four
//    items on one thread fill a slab and start a second (seal, then fresh);
//  - Storage allocates through Relacy (leaks, double frees and uses of freed
//    memory are reported), aligned by hand as the product's aligned new does,
//    and builds one Sync::var<int> in each slot for the slab's whole life: an
//    item is a tag stored there by its producer and read back by whoever runs
//    it. Two items in one slot at once, or a slab reused before a release's
//    read is ordered before the reuse, is a data race on that var or a wrong
//    tag;
//  - the lane's queue is a mutex-guarded array of (slot, tag): a producer
//    pushes its item, a consumer (the drain) pops one, checks its tag and
//    releases its slot, as PostItem::complete() does;
//  - each producer seals its cursor when it ends, as the thread's Sealer does;
//  - the bound is one free slab, so a second recycled slab is freed.
// At the end the items left in the queue are released, the pool is destroyed
// with its free list, and Relacy's heap checks prove every slab was recycled
// or freed exactly once.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/item_slab.hpp"
#include "product_headers_end.hpp"

#include <cstdint>

#include "model_main.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Payload = Sync::var<int>;

#pragma push_macro("new")
#pragma push_macro("delete")
#undef new
#undef delete
struct ModelStorage {
  static constexpr std::size_t kSlabBytes = 512;
  static constexpr std::size_t kLine = 128;  // Relacy's atomic and var are larger than a cache line
  // 3 slabs' worth, so an aligned slab and the raw pointer after it always fit.
  static void* allocate() {
    auto* raw = static_cast<char*>(::operator new(3 * kSlabBytes));
    const auto at = (reinterpret_cast<std::uintptr_t>(raw) + kSlabBytes) & ~(kSlabBytes - 1);
    auto* slab = reinterpret_cast<char*>(at);
    *reinterpret_cast<char**>(slab + kSlabBytes) = raw;
    for (std::size_t off = kLine; off < kSlabBytes; off += kLine) ::new (slab + off) Payload(0);
    return slab;
  }
  static void deallocate(void* p) noexcept {
    auto* slab = static_cast<char*>(p);
    for (std::size_t off = kLine; off < kSlabBytes; off += kLine)
      reinterpret_cast<Payload*>(slab + off)->~Payload();
    ::operator delete(*reinterpret_cast<char**>(slab + kSlabBytes));
  }
};
#pragma pop_macro("delete")
#pragma pop_macro("new")

using Slabs = turnstile::detail::BasicItemSlabs<Sync, ModelStorage>;
static_assert(Slabs::kMaxSlotBytes == 3 * Slabs::kLine);

constexpr std::size_t kMaxFree = 1;
constexpr int kQueue = 8;

// The lane's queue, reduced to what the slabs see: items in, items out.
struct Queue {
  Sync::mutex mu;
  Payload* slot[kQueue] = {};
  int tag[kQueue] = {};
  Sync::var<int> head{0};
  Sync::var<int> tail{0};

  void push(Payload* p, int t) {
    turnstile::detail::BasicLockGuard<Sync::mutex> lock(mu);
    const int at = tail.load();
    RL_ASSERT(at < kQueue);
    slot[at] = p;
    tag[at] = t;
    tail.store(at + 1);
  }
  bool pop(Payload*& p, int& t) {
    turnstile::detail::BasicLockGuard<Sync::mutex> lock(mu);
    const int at = head.load();
    if (at == tail.load()) return false;
    p = slot[at];
    t = tag[at];
    head.store(at + 1);
    return true;
  }
};

// An item made: a slot of this thread's slab, its tag stored, queued.
void make(Slabs& slabs, Slabs::Cursor& cursor, Queue& q, int tag) {
  auto* item = static_cast<Payload*>(cursor.take(slabs, sizeof(Payload)));
  item->store(tag);  // the item's construction
  q.push(item, tag);
}

// An item run: its tag read back (nobody built over it), its slot released.
bool run_one(Slabs& slabs, Queue& q) {
  Payload* item = nullptr;
  int tag = 0;
  if (!q.pop(item, tag)) return false;
  RL_ASSERT(item->load() == tag);  // [SLAB-I2] the slot held this item alone
  slabs.release(item);             // [SLAB-I1] nothing touches it after this
  return true;
}

// What every suite builds: the pool (bound kMaxFree), the queue, a cursor per
// thread; run_rest_and_destroy() runs what is left and destroys both, so
// Relacy's heap checks see every slab recycled or freed once.
template <unsigned Threads>
struct World {
  Slabs* slabs = nullptr;
  Queue* q = nullptr;
  Slabs::Cursor cursor[Threads];

  void build() {
    slabs = new Slabs(kMaxFree);
    q = new Queue;
  }
  void run_rest_and_destroy() {
    while (run_one(*slabs, *q)) {
    }
    RL_ASSERT(slabs->free_slabs() <= kMaxFree);  // [SLAB-I3]
    delete q;
    delete slabs;  // frees the free list; a slab neither free nor freed leaks
  }
};

// produce-run-reuse: two producers, one of which runs items too, and a drain.
//  thread 0: makes 4 items (fills its first slab, seals it, starts a second),
//            then seals;
//  thread 1: runs up to 2 items, makes 2 (a fresh slab: the free one when a
//            slab was recycled by then), runs up to 2 more, then seals;
//  thread 2: runs up to 4 items.
// Checks: each item read back with its own tag (no slot handed out twice, no
// slab reused early: a wrong tag or a data race on a slot); at most one free
// slab kept; at the end every slab recycled or freed once (no leak, no double
// free).
struct ProduceRunReuse : rl::test_suite<ProduceRunReuse, 3> {
  static constexpr const char* kChecks =
      "items made on two threads and run on two: each slot holds one item at a time, a slab is "
      "reused only after its seal and every release, at most 1 free slab kept, no leak, no "
      "double free";
  World<3> w;
  Slabs*& slabs = w.slabs;
  Queue*& q = w.q;
  Slabs::Cursor (&cursor)[3] = w.cursor;

  void before() { w.build(); }
  void thread(unsigned idx) {
    if (idx == 0) {
      for (int i = 0; i < 4; ++i) make(*slabs, cursor[0], *q, 100 + i);
      cursor[0].seal(*slabs);
    } else if (idx == 1) {
      for (int i = 0; i < 2; ++i) run_one(*slabs, *q);
      for (int i = 0; i < 2; ++i) make(*slabs, cursor[1], *q, 200 + i);
      for (int i = 0; i < 2; ++i) run_one(*slabs, *q);
      cursor[1].seal(*slabs);
    } else {
      for (int i = 0; i < 4; ++i) run_one(*slabs, *q);
    }
    RL_ASSERT(slabs->free_slabs() <= kMaxFree);  // [SLAB-I3]
  }
  void after() { w.run_rest_and_destroy(); }
};

// seal-vs-release: the owner seals while the drain releases its last slots;
// exactly one of them recycles the slab, after both.
//  thread 0: makes 2 items, then seals;
//  thread 1: runs up to 2 items;
// then (after) the rest are run, and a new slab is taken and checked clean.
struct SealVsRelease : rl::test_suite<SealVsRelease, 2> {
  static constexpr const char* kChecks =
      "a seal racing the last releases: the slab recycled once, after both, and reused clean";
  World<2> w;
  Slabs*& slabs = w.slabs;
  Queue*& q = w.q;
  Slabs::Cursor (&cursor)[2] = w.cursor;

  void before() { w.build(); }
  void thread(unsigned idx) {
    if (idx == 0) {
      make(*slabs, cursor[0], *q, 10);
      make(*slabs, cursor[0], *q, 11);
      cursor[0].seal(*slabs);
    } else {
      run_one(*slabs, *q);
      run_one(*slabs, *q);
    }
  }
  void after() {
    while (run_one(*slabs, *q)) {
    }
    RL_ASSERT(slabs->free_slabs() == 1);  // [SLAB-I1] recycled once, not lost, not twice
    make(*slabs, cursor[1], *q, 20);      // the free slab, taken again
    RL_ASSERT(slabs->free_slabs() == 0);
    RL_ASSERT(run_one(*slabs, *q));
    cursor[1].seal(*slabs);
    RL_ASSERT(slabs->free_slabs() == 1);
    w.run_rest_and_destroy();
  }
};

}  // namespace

TURNSTILE_MODEL_MAIN("item_slab", {
    suite<ProduceRunReuse, "produce-run-reuse">({bounded(2), random_search(200000)}),
    suite<SealVsRelease, "seal-vs-release">({full_search()}),
})
