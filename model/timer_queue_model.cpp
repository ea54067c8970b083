// model/timer_queue_model.cpp: Relacy model of the timer core:
// turnstile::detail::BasicTimerQueue<Sync> and BasicTimerEntry<Sync>'s
// fire/cancel protocol, the product's own templates
// (impl/include/turnstile/detail/timer_core.hpp), which every scheduler's
// TimerQueue (impl/src/timer_queue.hpp) instantiates with StdSync.
//
// spec: [RT-8.4] [RT-2.3]
//   What the model checks of RT-8.4 (cancel is exact: exactly one of a fire
//   and a cancel wins, from any thread): an entry armed, served and cancelled
//   at once either fires or is cancelled, never both, never neither, and what
//   firing needed is discarded once, only when it did not fire. Of RT-2.3 (a
//   scheduler outlives a wake-up in progress): an arm from a thread that is not
//   the queue's owner wakes the serving thread after the unlock, and the owner
//   may stop and destroy the queue meanwhile.
// Invariants exercised: [TIMER-I1] (fire and cancel: exactly one wins; one
// discard), [TIMER-I2] (no lost wake-up: an arm that makes the earliest
// deadline wakes a serving thread asleep without one; a lost one is a deadlock
// Relacy reports), [TIMER-I3] (the queue outlives a wake-up made after the
// unlock: a notify on a queue its owner destroyed is a use of a destroyed
// condition variable or of freed memory).
//
// How the product is modelled:
//  - T0 serves the queue as a ThreadPool's timer thread does (wait_due() until
//    stopped); instead of posting a due entry's item (post_due, timer.cpp) it
//    runs what that item runs first: try_fire();
//  - deadlines are the clock's extremes: time_point::min() is due at once on
//    steady_clock, so the model's outcome never depends on real time;
//  - the owner's destruction (ThreadPool's destructor: stop, join the serving
//    thread, drop what is left, release the queue) is T0's own last step in
//    waker-outlives-owner, with the arming thread's notify held open until
//    then (HeldNotifySync, model_held_notify.hpp).
// Not modelled: the heap's and the run's order (property_tests/timer_props.cpp
// checks it), the serving thread's start (std::thread, impl/src/timer_queue.cpp;
// unit-tested), std::shared_ptr's and std::weak_ptr's own counts (the
// standard library's atomics, not Sync's), and the fields guarded by the
// queue's mutex that are not Sync::var (the heap, the run, an entry's links).
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/timer_core.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"
#include "model_held_notify.hpp"
#include "model_resume.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Held = turnstile::model::HeldNotifySync;

// A timer entry that counts its discards. The model posts nothing: its
// serving thread calls try_fire() as the posted item would.
template <class S>
struct CountedEntry final : turnstile::detail::BasicTimerEntry<S> {
  turnstile::Runnable& make_due(std::shared_ptr<turnstile::detail::BasicTimerEntry<S>>) noexcept override {
    std::abort();  // never called: post_due is the product's, not the core's
  }
  void discard() noexcept override { discards.fetch_add(1, std::memory_order_relaxed); }
  typename S::template atomic<int> discards{0};
};

template <class S>
std::shared_ptr<CountedEntry<S>> due_entry() {
  auto e = std::make_shared<CountedEntry<S>>();
  e->deadline = std::chrono::steady_clock::time_point::min();  // due at once
  return e;
}

// The serving thread: waits for due entries until stopped, and fires each as
// its posted item would. Returns how many fired.
template <class S>
int serve(turnstile::detail::BasicTimerQueue<S>& q) {
  std::vector<turnstile::detail::BasicTimerEntryRef<S>> due;
  int fired = 0;
  while (q.wait_due(due)) {
    for (auto& e : due) fired += e->try_fire() ? 1 : 0;
    due.clear();
  }
  return fired;
}

using Queue = turnstile::detail::BasicTimerQueue<Sync>;
using Entry = CountedEntry<Sync>;
using Cancel = Queue::Entry::Cancel;

// cancel-vs-fire: T1 arms a due entry and cancels it at once, then stops the
// queue; T0 serves it. Checks [TIMER-I1] for every interleaving of the
// cancel's remove and compare-exchange with the serving thread's take and
// try_fire: fired exactly when cancel() says `fired`; discarded once exactly
// when it did not fire.
struct CancelVsFire : rl::test_suite<CancelVsFire, 2> {
  static constexpr const char* kChecks =
      "an armed due entry is cancelled while the serving thread takes and fires it: exactly one "
      "of fire and cancel wins, and what firing needed is discarded once only when it lost";
  std::shared_ptr<Queue> q;
  std::shared_ptr<Entry> e;
  int fired = 0;
  Cancel result = Cancel::never_armed;

  void before() {
    q = std::make_shared<Queue>();
    e = due_entry<Sync>();
  }
  void thread(unsigned idx) {
    if (idx == 0) {
      fired = serve(*q);
      return;
    }
    RL_ASSERT(q->arm(e));
    result = e->cancel();
    q->stop();
  }
  void after() {
    RL_ASSERT(result != Cancel::never_armed && result != Cancel::earlier);
    RL_ASSERT((fired == 1) == (result == Cancel::fired));  // [TIMER-I1] exactly one wins
    q.reset();  // drops nothing: the entry left the queue by the cancel or the take
    RL_ASSERT(e->discards.load(std::memory_order_relaxed) == (fired == 1 ? 0 : 1));  // [TIMER-I1]
    e.reset();
  }
};

// arm-wakes-server: T0 serves an empty queue, asleep without a deadline; T1
// arms a due entry, waits until T0 has fired it, then stops the queue.
// Checks [TIMER-I2]: only the arm's wake-up ends T0's sleep (a lost one is a
// deadlock: T1 waits for the fire); the entry fires once.
struct ArmWakesServer : rl::test_suite<ArmWakesServer, 2> {
  static constexpr const char* kChecks =
      "an arm that makes the earliest deadline wakes the serving thread asleep on an empty queue, "
      "which fires it once; then stop() ends the serving thread";
  std::shared_ptr<Queue> q;
  std::shared_ptr<Entry> e;
  turnstile::model::Resume fired_one;

  void before() {
    q = std::make_shared<Queue>();
    e = due_entry<Sync>();
  }
  void thread(unsigned idx) {
    if (idx == 0) {
      std::vector<turnstile::detail::BasicTimerEntryRef<Sync>> due;
      RL_ASSERT(q->wait_due(due));  // [TIMER-I2] woken by the arm, or found it armed
      RL_ASSERT(due.size() == 1 && due[0]->try_fire());
      due.clear();
      fired_one.post();
      RL_ASSERT(!q->wait_due(due));  // stopped
      return;
    }
    RL_ASSERT(q->arm(e));
    fired_one.wait();
    q->stop();
  }
  void after() {
    q.reset();
    RL_ASSERT(e->discards.load(std::memory_order_relaxed) == 0);
    e.reset();
  }
};

using HeldQueue = turnstile::detail::BasicTimerQueue<Held>;
using HeldEntry = CountedEntry<Held>;

// waker-outlives-owner: T1, a thread that is not the queue's owner, arms a
// due entry; its wake-up, decided under the mutex and made after the unlock,
// is held (HeldNotifySync) until the owner announces the queue's end. T0
// serves the queue, fires the entry, then ends it as a ThreadPool's destructor
// does: stop, drop what is left, release the owner's reference, the only one
// besides a waker's. Checks [TIMER-I3] / [RT-2.3]: the notify never lands on a
// destroyed queue.
struct WakerOutlivesOwner : rl::test_suite<WakerOutlivesOwner, 2> {
  static constexpr const char* kChecks =
      "a thread outside the owner arms a due entry, its notify held while the serving thread "
      "fires it and the owner stops and releases the queue: the queue outlives the notify";
  std::shared_ptr<HeldQueue> owner;  // T0's: the pool's reference
  HeldQueue* queue = nullptr;        // T1's: a Scheduler& to the pool, no reference
  std::shared_ptr<HeldEntry> e;      // T1's handle
  Sync::atomic<int> ending{0};

  void before() {
    owner = std::make_shared<HeldQueue>();
    queue = owner.get();
    e = due_entry<Held>();
    turnstile::model::g_held_notify = {1, &ending};
  }
  void thread(unsigned idx) {
    if (idx == 1) {
      RL_ASSERT(queue->arm(e));  // returns once its wake-up was made
      return;                    // nothing joins it: the queue may be gone by now
    }
    std::vector<turnstile::detail::BasicTimerEntryRef<Held>> due;
    RL_ASSERT(owner->wait_due(due));
    RL_ASSERT(due.size() == 1 && due[0]->try_fire());
    due.clear();
    owner->stop();
    owner->drop_all();
    ending.store(1, std::memory_order_relaxed);  // the held notify may go now, or after
    owner.reset();  // [TIMER-I3] a waker's reference keeps the queue for its notify
  }
  void after() {
    turnstile::model::g_held_notify = {};
    e.reset();
  }
};

}  // namespace

TURNSTILE_MODEL_MAIN("timer_queue", {
    // Full: 105 864 and 520 680 executions (0.2 s and 1.2 s here). The held
    // window's full search ran 16.7 M executions in 37 s: bound 4 is 26 592.
    suite<CancelVsFire, "cancel-vs-fire">({full_search(), random_search(100000)}),
    suite<ArmWakesServer, "arm-wakes-server">({full_search(), random_search(100000)}),
    suite<WakerOutlivesOwner, "waker-outlives-owner">({bounded(4), random_search(100000)}),
})
