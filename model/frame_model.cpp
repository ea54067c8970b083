// model/frame_model.cpp: Relacy model of the immutable, reference-counted binding
// frames behind FiberLocal/FiberContext: turnstile::detail::BasicFrame<RelacySync>
// and BasicFrameRef<RelacySync>, the product's own templates
// (impl/include/turnstile/detail/frame.hpp).
//
// spec: [FL-6.3]
// spec: [FL-5.6]
//   FL-6.3: frames are immutable once published and shared by reference count; a
//   snapshot captured on one thread and released on another while the owner
//   unbinds is free of data races and is freed exactly once.
//   FL-5.6: a frame lives while anything holds it (a head, a copy, a snapshot, a
//   newer frame) and is freed when the last holder lets go: no leak, no use after
//   free.
// Invariants exercised: [FRAME-I1] [FRAME-I2] [FRAME-I3].
//
// The typed frame keeps its value in a Sync::var (race-checked) and overrides
// destroy() to poison the value before deleting: a read of a frame that is not
// ordered before its destruction is reported as a data race (value read vs poison
// write); a read after the free as an access to freed memory; a frame never freed
// as a memory leak; a frame freed twice as a double free. Harness data shared
// between threads is an rl type too.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/frame.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Frame = turnstile::detail::BasicFrame<Sync>;
using FrameRef = turnstile::detail::BasicFrameRef<Sync>;

constexpr int kPoison = -1;
constexpr int kFrames = 4;

// Per-iteration bookkeeping of destructions (one bit per frame id).
struct Ledger {
  Sync::atomic<int> destroyed_mask{0};
  Sync::atomic<int> destroyed_count{0};
};

// A binding frame holding an int, as FiberLocal<T>'s typed frame holds its T.
class ValueFrame final : public Frame {
 public:
  // Constructs with one reference (owned by the caller) that adopts `prev`'s.
  ValueFrame(const void* key, Frame* prev_adopted, int id, int value, Ledger& ledger)
      : Frame(key, prev_adopted), id_(id), ledger_(ledger) {
    value_.store(value);  // [FRAME-I1] written before the frame is first published
  }

  int value() const { return value_.load(); }  // race-checked read
  int id() const noexcept { return id_; }

 private:
  void destroy() noexcept override {
    value_.store(kPoison);  // a write: races with any read not ordered before the free
    const int bit = 1 << id_;
    const int before = ledger_.destroyed_mask.fetch_add(bit, std::memory_order_relaxed);
    RL_ASSERT((before & bit) == 0);  // each frame destroyed once
    ledger_.destroyed_count.fetch_add(1, std::memory_order_relaxed);
    delete this;
  }

  const int id_;
  Ledger& ledger_;
  Sync::var<int> value_;
};

const int kKeyA = 0, kKeyB = 0, kKeyC = 0, kKeyD = 0;  // distinct addresses = distinct FiberLocals

int value_of(Frame* f) { return static_cast<ValueFrame*>(f)->value(); }

// Reads every frame of a chain and checks the values; `expected` is newest first.
void read_chain(const FrameRef& head, std::initializer_list<int> expected) {
  Frame* f = head.get();
  for (int v : expected) {
    RL_ASSERT(f != nullptr);
    const int seen = value_of(f);
    RL_ASSERT(seen != kPoison);  // never a destroyed frame
    RL_ASSERT(seen == v);        // never a changed one [FRAME-I1]
    f = f->prev();
  }
  RL_ASSERT(f == nullptr);
}

// Spin (yielding to the model scheduler) until a frame pointer is handed over.
Frame* take(Sync::atomic<Frame*>& slot) {
  for (;;) {
    Frame* f = slot.load(std::memory_order_acquire);  // pairs with the hand-off's release
    if (f != nullptr) return f;
    rl::yield(1, $);
  }
}

// Three references to one frame, one per thread: before() hands them out (the
// frame's count is 3), each thread takes its own. Plain data of the suite: a
// Sync::var slot per thread, written in before(), read by its thread.
struct ThreeRefs {
  Sync::var<Frame*> slot[3];

  void hand_out(FrameRef f) {
    FrameRef r1 = f, r2 = f;
    slot[0].store(f.release());
    slot[1].store(r1.release());
    slot[2].store(r2.release());
  }
  FrameRef take(unsigned idx) { return FrameRef::adopt(slot[idx].load()); }
};

// ---------------------------------------------------------------------------
// share-and-unbind:
//  before(): a parent context A <- B (B newest), as an owner fiber's head, plus
//            one copy of it held by a structured child (thread 2).
//  thread 0 (owner): binds C on top of its head (C adopts the head's reference),
//            captures a snapshot of C (retain), hands it to thread 1 through an
//            atomic slot, reads its chain, then unbinds (releases its head).
//  thread 1: takes the snapshot, reads C <- B <- A, releases it.
//  thread 2: reads its copy B <- A, binds D on top of it (adopting it), reads
//            D <- B <- A, releases D (which drops its reference to B, ...).
// B is released concurrently by whichever of threads 0/1 drops C last and by
// thread 2; A by whoever frees B. Every frame must be freed exactly once, after
// all its readers.
struct ShareAndUnbind : rl::test_suite<ShareAndUnbind, 3> {
  static constexpr const char* kChecks =
      "snapshot handed across threads while the owner unbinds and a child binds on a copy: "
      "no race on frame values, no use after free, each frame freed once, no leak";
  Ledger ledger;
  Sync::atomic<Frame*> snapshot_slot{nullptr};
  // Handles used by one model thread each after before() (before() happens-before
  // every thread): owned, not shared; the raw pointers are adopted on that thread.
  Sync::var<Frame*> owner_head{nullptr};
  Sync::var<Frame*> child_copy{nullptr};

  void before() {
    auto* a = new ValueFrame(&kKeyA, nullptr, 0, 10, ledger);
    auto* b = new ValueFrame(&kKeyB, a, 1, 20, ledger);  // b adopts a's reference
    FrameRef head = FrameRef::adopt(b);
    FrameRef copy = head;  // retain: the child's reference
    owner_head.store(head.release());
    child_copy.store(copy.release());
  }

  void thread(unsigned idx) {
    if (idx == 0) {
      FrameRef head = FrameRef::adopt(owner_head.load());
      // bind: the new frame adopts the head's reference to B
      head = FrameRef::adopt(new ValueFrame(&kKeyC, head.release(), 2, 30, ledger));
      FrameRef snapshot = head;  // capture (retain)
      snapshot_slot.store(snapshot.release(), std::memory_order_release);  // hand-off
      read_chain(head, {30, 20, 10});
      head = FrameRef();  // unbind: drop the owner's reference
    } else if (idx == 1) {
      FrameRef snapshot = FrameRef::adopt(take(snapshot_slot));
      read_chain(snapshot, {30, 20, 10});
    } else {
      FrameRef copy = FrameRef::adopt(child_copy.load());
      read_chain(copy, {20, 10});
      FrameRef bound = FrameRef::adopt(new ValueFrame(&kKeyD, copy.release(), 3, 40, ledger));
      read_chain(bound, {40, 20, 10});
    }
  }

  void after() {
    RL_ASSERT(ledger.destroyed_count.load(std::memory_order_relaxed) == kFrames);
    RL_ASSERT(ledger.destroyed_mask.load(std::memory_order_relaxed) == (1 << kFrames) - 1);
  }
};

// ---------------------------------------------------------------------------
// copy-while-releasing: retains and releases of one frame from three threads at
// once. before(): a chain A <- B and three references to B (one per thread).
// Thread 0 copies its reference (retain, concurrent with the others' releases),
// reads through both, releases both; threads 1 and 2 read and release theirs.
struct CopyWhileReleasing : rl::test_suite<CopyWhileReleasing, 3> {
  static constexpr const char* kChecks =
      "retain and releases of one frame from three threads: each frame freed once after its "
      "last reader, no leak";
  Ledger ledger;
  ThreeRefs refs;

  void before() {
    auto* a = new ValueFrame(&kKeyA, nullptr, 0, 10, ledger);
    refs.hand_out(FrameRef::adopt(new ValueFrame(&kKeyB, a, 1, 20, ledger)));
  }

  void thread(unsigned idx) {
    FrameRef mine = refs.take(idx);
    if (idx == 0) {
      FrameRef extra = mine;  // retain while the others may be releasing
      read_chain(extra, {20, 10});
    }
    read_chain(mine, {20, 10});
  }

  void after() {
    RL_ASSERT(ledger.destroyed_count.load(std::memory_order_relaxed) == 2);
    RL_ASSERT(ledger.destroyed_mask.load(std::memory_order_relaxed) == 3);
  }
};

// ---------------------------------------------------------------------------
// refcount-arithmetic: counting alone, with no reads of the frame's value (so
// ordering bugs cannot show up as races here): one frame, three references; each
// thread copies its reference (retain) and drops both, concurrently with the
// others. The frame must be freed exactly once, by the last drop: a lost update
// of the count shows up as a leak, a double free or a use of freed memory.
struct RefcountArithmetic : rl::test_suite<RefcountArithmetic, 3> {
  static constexpr const char* kChecks =
      "retain/release counting alone (no value reads): freed exactly once, by the last drop";
  Ledger ledger;
  ThreeRefs refs;

  void before() { refs.hand_out(FrameRef::adopt(new ValueFrame(&kKeyA, nullptr, 0, 10, ledger))); }

  void thread(unsigned idx) {
    FrameRef mine = refs.take(idx);
    FrameRef copy = mine;  // retain, concurrent with the other threads' releases
    if (idx % 2 == 0) mine = FrameRef();  // vary which reference goes first
  }

  void after() {
    RL_ASSERT(ledger.destroyed_count.load(std::memory_order_relaxed) == 1);
    RL_ASSERT(ledger.destroyed_mask.load(std::memory_order_relaxed) == 1);
  }
};

}  // namespace

TURNSTILE_MODEL_MAIN("frame", {
    suite<ShareAndUnbind, "share-and-unbind">({bounded(4), random_search(200000)}),
    suite<CopyWhileReleasing, "copy-while-releasing">({full_search(), random_search(200000)}),
    suite<RefcountArithmetic, "refcount-arithmetic">({full_search(), random_search(200000)}),
})
