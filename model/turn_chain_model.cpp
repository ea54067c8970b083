// model/turn_chain_model.cpp: Relacy model of an activation's serial chain:
// turnstile::detail::BasicTurnChain<RelacySync>, the product's own template
// (impl/include/turnstile/detail/turn_chain.hpp), with the hand-off through each
// link's BasicCompletion<RelacySync> (detail/completion_core.hpp).
//
// spec: [TURN-2.1]
// spec: [TURN-2.2]
// spec: [TURN-3.1]
//   TURN-2.1: each serial call links itself behind the tail when it is made; its
//   turn starts when the link before it has settled; it settles its own link
//   when it ends. Each waiting turn holds its predecessor itself; links are
//   reference counted and freed by their last holder.
//   TURN-2.2: serial turns start in the order the calls were made (attach()
//   order), even when a call's turn is run later or on another thread.
//   TURN-3.1: a serial turn waits until the previous one has settled: serial
//   turns never overlap, so plain mutation of the state is safe.
// Invariants exercised: [CHAIN-I1] [CHAIN-I2] [CHAIN-I3] (and [COMP-I1]..[COMP-I4]
// of the link's completion word).
//
// How the product is modelled (Activation::start_call / run_turn,
// detail/activation_impl.hpp):
//  - call(): `mine = chain.attach(prev)` on the calling thread; then, if prev is
//    not null, the call's waiting node (the product's Call::StartAfter, in the
//    call's record) is published on prev->settled with try_add_waiter(), still
//    on the calling thread. False means the predecessor has settled already and
//    the turn may start at once (the product posts its start now); true means
//    its start is posted by notify(). notify() posts the turn to its own thread
//    (a mutex + condition variable stand in for the strand's queue, as in
//    completion_model.cpp), as the product's StartAfter::notify() posts the turn
//    fiber's start to the strand; the node is freed once the turn has started
//    (the product frees it with the call's record, after the turn). Running the successor inline inside notify() on the settling thread
//    would be less honest: the product never does that, and it would order the
//    successor's whole turn before the rest of settle() (the settler's release of
//    its own link), hiding exactly the reference-count race this model is for.
//    A turn that is never notified blocks for ever: Relacy reports a deadlock.
//  - Then Link::release(prev), the body (touches the activation's state, a plain
//    Sync::var, with no other synchronisation: the chain alone must serialise
//    it), and Chain::settle(mine).
//  - The chain is a member of the suite and is destroyed with it, releasing the
//    tail's reference, before Relacy's end-of-execution leak check.
//
// Links are the product's, instantiated with a model payload (the chain's
// LinkPayload parameter; the product's is empty): LinkData, a plain Sync::var
// holding the id of the link's turn. Every holder of a link touches it before
// letting go, as the frame model reads each frame's value:
//  - the link's own turn writes its id into it just before settle(mine), the
//    product's "the turn is done with its link";
//  - the successor turn reads it after its wait and before Link::release(prev)
//    (and checks it names the turn that started last);
//  - ~LinkData, run by Link::release's allocator destroy() on the thread that
//    drops the last reference (before the model's global operator delete frees it),
//    overwrites it with a poison.
// So a free not ordered after another holder's use (the last fetch_sub of
// Link::release without its acquire) is a data race (that holder's access
// against the poison write), which Relacy sees although the count and the
// completion word are atomics. Allocation tracking does the rest: a link never
// freed is a memory leak, one freed twice a double free, one touched after its
// free an access to freed memory.
//
// Arrival order is checked at each turn's start: a turn whose prev is null must
// be the first to start; otherwise the turn that started last must be the one
// whose link is this turn's prev (pointer comparison while prev is still held).
// By induction, turns start exactly in attach() order.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/turn_chain.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"
#include "model_resume.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Completion = turnstile::detail::BasicCompletion<Sync>;

constexpr int kMaxTurns = 4;
constexpr int kNoTurnYet = -1;  // a link whose turn has not finished
constexpr int kFreed = -2;      // the poison written when the link is freed

// The model's link payload (see the top): plain data every holder touches
// before it drops its reference; the free writes a poison into it. Not
// copyable (Sync::var is not); Relacy's `delete` macro rules out `= delete` here.
struct LinkData {
  Sync::var<int> turn{kNoTurnYet};  // the id of the link's turn, written as it ends
  ~LinkData() { turn.store(kFreed); }  // races with any use not ordered before the free
};

using Chain = turnstile::detail::BasicTurnChain<Sync, LinkData>;
using Link = Chain::Link;

using turnstile::model::Resume;  // model_resume.hpp

// Per-turn bookkeeping (checked in after()).
struct TurnRecord {
  Resume resume;
  Sync::atomic<int> notified{0};    // notify() calls on this turn's waiting node
  Sync::var<bool> waited{false};    // try_add_waiter returned true (turn's thread)
  Sync::var<Link*> mine{nullptr};   // its link, recorded by the caller after attach()
  Sync::var<int> start{-1};         // start order (written in the turn)
  Sync::var<int> runs{0};           // times its body ran (written in the turn)
};

struct Harness {
  Chain chain;
  Sync::atomic<int> in_turn{0};      // serial turns running now [TURN-3.1]
  Sync::var<int> state{0};           // the activation's state: plain, serialised by the chain only
  Sync::var<int> last_started{-1};   // id of the turn that started last (written in turns)
  TurnRecord rec[kMaxTurns];
};

// The call's node on prev->settled: the product's Call::StartAfter.
class PredecessorWaiter final : public Completion::Waiter {
 public:
  explicit PredecessorWaiter(TurnRecord& rec) : rec_(rec) {}
  void notify() noexcept override {
    rec_.notified.fetch_add(1, std::memory_order_relaxed);
    rec_.resume.post();  // posted: the turn resumes on its own thread
  }

 private:
  TurnRecord& rec_;
};

// What call() leaves for its turn.
struct Call {
  int id = -1;
  Link* prev = nullptr;
  Link* mine = nullptr;
  PredecessorWaiter* waiter = nullptr;  // published on prev->settled (when prev is set)
};

// call(): attach to the tail now, whenever the turn runs [TURN-2.2], and wait
// on the predecessor's settle from here: its notify() starts the turn.
Call call(Harness& h, int id) {
  Call c;
  c.id = id;
  c.mine = h.chain.attach(c.prev);
  TurnRecord& r = h.rec[id];
  r.mine.store(c.mine);
  if (c.prev != nullptr) {
    c.waiter = new PredecessorWaiter(r);
    r.waited.store(c.prev->settled.try_add_waiter(c.waiter));  // false: settled, start now
  }
  return c;
}

// The turn, as Activation::run_turn: starts once the predecessor settled (its
// start posted by notify(), or at once), releases it, runs, settles.
void run_turn(Harness& h, const Call& c) {
  TurnRecord& r = h.rec[c.id];
  if (c.prev != nullptr) {
    if (r.waited.load()) r.resume.wait();  // the start, posted by the settle
    delete c.waiter;                       // notified (or never published): unused now
  }

  // [TURN-2.2] start in attach order; prev is still held here, so comparing
  // its address with the last starter's link is meaningful.
  const int last = h.last_started.load();
  if (c.prev == nullptr) {
    RL_ASSERT(last == -1);  // the chain was empty at attach: the first turn
  } else {
    RL_ASSERT(last >= 0);
    RL_ASSERT(h.rec[last].mine.load() == c.prev);  // the previous starter is my predecessor
  }
  h.last_started.store(c.id);
  if (c.prev != nullptr) {
    // The successor's use of its predecessor link, before it lets go [CHAIN-I3].
    const int pred = c.prev->payload.turn.load();
    RL_ASSERT(pred != kFreed);
    RL_ASSERT(pred == last);  // the link's turn finished and wrote its id before settling
  }
  Link::release(c.prev);  // the product drops its predecessor before the body runs

  // The body: [TURN-3.1] one serial turn at a time, plain state.
  const int others = h.in_turn.fetch_add(1, std::memory_order_relaxed);
  RL_ASSERT(others == 0);
  const int s = h.state.load();
  r.start.store(s);
  h.state.store(s + 1);
  r.runs.store(r.runs.load() + 1);
  h.in_turn.fetch_sub(1, std::memory_order_relaxed);

  // The turn's last use of its own link before settle() drops it [CHAIN-I3].
  RL_ASSERT(c.mine->payload.turn.load() == kNoTurnYet);
  c.mine->payload.turn.store(c.id);
  Chain::settle(c.mine);  // [TURN-2.1] hands off to the successor, drops our reference
}

void check_all(Harness& h, int turns) {
  RL_ASSERT(h.state.load() == turns);
  for (int i = 0; i < turns; ++i) {
    RL_ASSERT(h.rec[i].runs.load() == 1);
    // a published node is notified exactly once [COMP-I3]
    RL_ASSERT(h.rec[i].notified.load(std::memory_order_relaxed) == (h.rec[i].waited.load() ? 1 : 0));
  }
}

// ---------------------------------------------------------------------------
// three-callers: three threads each make one serial call and run its turn.
// Checks: turns never overlap and the plain state is race-free [TURN-3.1]; they
// start in attach order [TURN-2.2]; each waits for its predecessor's settle and
// its node is notified exactly once; every link is freed exactly once, after its
// last use (Relacy: leak, double free, access to freed memory) [TURN-2.1].
struct ThreeCallers : rl::test_suite<ThreeCallers, 3> {
  static constexpr const char* kChecks =
      "three serial calls from three threads: turns never overlap, start in attach order, "
      "each waiter notified once, every link freed exactly once after its last use";
  Harness h;

  void thread(unsigned idx) { run_turn(h, call(h, static_cast<int>(idx))); }

  void after() { check_all(h, 3); }
};

// ---------------------------------------------------------------------------
// call-then-run-elsewhere: a call takes its place when it is made, not when its
// turn runs [TURN-2.2].
//  thread 0: calls A, publishes "A called" (release), calls B, hands B's turn to
//            thread 2 (release), then runs A's turn;
//  thread 1: looks (acquire) whether A was called, calls C, runs C's turn;
//  thread 2: takes B's call (acquire) and runs B's turn.
// Checks: as three-callers; plus A starts before B (same caller,
// B's turn run on another thread, possibly ready first) and A before C when
// thread 1 saw A called.
struct CallThenRunElsewhere : rl::test_suite<CallThenRunElsewhere, 3> {
  static constexpr const char* kChecks =
      "two calls from one thread (the second's turn run on another thread) and one from a third: "
      "call order is start order, no overlap, links freed exactly once";
  Harness h;
  Sync::atomic<int> a_called{0};
  Sync::var<int> c_saw_a{0};
  Sync::atomic<int> b_ready{0};
  Sync::var<Link*> b_prev{nullptr};
  Sync::var<Link*> b_mine{nullptr};
  Sync::var<PredecessorWaiter*> b_waiter{nullptr};

  void thread(unsigned idx) {
    if (idx == 0) {
      const Call a = call(h, 0);
      a_called.store(1, std::memory_order_release);
      const Call b = call(h, 1);
      b_prev.store(b.prev);
      b_mine.store(b.mine);
      b_waiter.store(b.waiter);
      b_ready.store(1, std::memory_order_release);  // B's turn starts elsewhere
      run_turn(h, a);
    } else if (idx == 1) {
      c_saw_a.store(a_called.load(std::memory_order_acquire));
      run_turn(h, call(h, 2));
    } else {
      while (b_ready.load(std::memory_order_acquire) == 0) rl::yield(1, $);
      Call b;
      b.id = 1;
      b.prev = b_prev.load();
      b.mine = b_mine.load();
      b.waiter = b_waiter.load();
      RL_ASSERT(b.prev != nullptr);  // A was attached before B
      run_turn(h, b);
    }
  }

  void after() {
    check_all(h, 3);
    const auto start = [&](int i) { return h.rec[i].start.load(); };
    RL_ASSERT(start(0) < start(1));                           // same caller: call order
    if (c_saw_a.load() == 1) RL_ASSERT(start(0) < start(2));  // happens-before: call order
  }
};

}  // namespace

TURNSTILE_MODEL_MAIN("turn_chain", {
    suite<ThreeCallers, "three-callers">({bounded(2), random_search(200000)}),
    suite<CallThenRunElsewhere, "call-then-run-elsewhere">({bounded(2), random_search(200000)}),
})
