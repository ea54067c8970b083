// model/ready_queue_model.cpp: Relacy model of the ThreadPool's ready queue:
// turnstile::detail::BasicReadyQueue<RelacySync, Item*>, the product's own
// template (impl/include/turnstile/detail/ready_queue.hpp), with the bounded
// poll before parking that issue 28 added.
//
// spec: [RT-2.2]
// spec: [RT-2.3]
//   RT-2.2: items posted from one thread start in post order; each runs once.
//   RT-2.3: stopping (the pool's destruction) runs every item already queued.
// Invariants exercised: [READY-I1] (no lost wake-up between a poller's last
// look and its park), [READY-I2] (a carrier leaving work behind wakes a parked
// one), [READY-I3] (stop drains, then every carrier returns), [READY-I4] (at
// most max_pollers carriers poll at once; one refused a slot parks and is
// woken like any other), [READY-I5] (a wake-up made after the unlock; the
// queue is not destroyed under it: destroy-after-wake).
//
// How the product is modelled (ThreadPool, impl/src/scheduler.cpp):
//  - a carrier is a thread running `while (q.pop(item)) run(item)`, as
//    ThreadPool::carrier_loop does;
//  - a poster is a thread that writes an item's payload (a plain Sync::var) and
//    push()es it, as post() does; a carrier that runs an item reads the payload,
//    so a pop not ordered after its push is a data race;
//  - the pool's destructor is stop(), called once every item has run (the
//    poster waits for that on a Resume, model_resume.hpp) or, in stop-drains, at
//    once after the pushes;
//  - spin_limit is 2 (the product's is ThreadPool::kDefaultSpinRounds): each
//    Sync::pause() is a scheduling point, so the search puts a push before,
//    between and after a poller's looks. A larger limit adds executions, not
//    new orders of the decisions made under the mutex.
// A lost wake-up leaves a carrier parked with an item queued and the poster
// waiting for it: every thread blocked, which Relacy reports as a deadlock.
// stop() only after every item ran matters: its notify_all would otherwise wake
// the stranded carrier and hide the lost wake-up.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/ready_queue.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"
#include "model_held_notify.hpp"
#include "model_resume.hpp"

#include <initializer_list>

namespace {

using Sync = turnstile::RelacySync;
using turnstile::model::Resume;

constexpr unsigned kSpinLimit = 2;
constexpr int kMaxItems = 8;
// A local queue of four: a steal moves two at most (kStealMax), and six posts
// from one run overflow it.
constexpr std::size_t kLocalCapacity = 4;

struct Item {
  int id = 0;
  Sync::var<int> payload{0};  // written by whoever posts it, before the post; read by the runner
  Sync::var<int> runs{0};     // written by the one carrier that runs it
  Resume* unblock = nullptr;  // blocked-carrier: this item waits here until released
  Resume* releases = nullptr; // blocked-carrier: this item releases that one
  Resume* started = nullptr;  // slot-streak: posted as the item starts
  Item* posts[6] = {};        // hand-off suites: posted by this item's run (push_from)
  Resume* hold = nullptr;     // held-hand-off: after its posts, this item waits here
  int pauses = 0;             // the rescued-then-post suites: scheduling points ...
  int pause_at = 1;           // ... before this post (index into posts)
  Resume* posted = nullptr;   // poller-steals: posted after this item's posts, before its hold
};

// [READY-I4] The capped suites instantiate the queue over CappedSync: Relacy's
// primitives, with a pause() that asserts, at every round of every poll, that
// no more carriers poll than the cap allows (pause() runs only inside poll()).
struct CappedSync : Sync {
  static void pause();
};
using CappedQueue = turnstile::detail::BasicReadyQueue<CappedSync, Item*, kLocalCapacity>;
const CappedQueue* g_capped = nullptr;  // the queue of the running capped suite
void CappedSync::pause() {
  if (g_capped != nullptr) RL_ASSERT(g_capped->polling() <= g_capped->max_pollers());  // [READY-I4]
  Sync::pause();
}

struct QueueOptions {
  unsigned max_pollers = turnstile::detail::BasicReadyQueue<Sync, Item*>::kUnlimitedPollers;
  unsigned carriers = 2;
  bool hand_off = false;
  unsigned slot_streak = 1;
  unsigned shared_every = 16;
  bool record_order = false;  // two-carrier suites that check an order
};

template <class S>
struct BasicHarness {
  using Queue = turnstile::detail::BasicReadyQueue<S, Item*, kLocalCapacity>;
  Queue q;
  Item items[kMaxItems];
  Sync::atomic<int> done{0};   // items run
  Sync::var<int> order[kMaxItems];  // one-carrier suites: ids in the order run
  Resume all_ran;              // posted by the item that completes the count
  int expected = 0;
  bool record_order = false;

  explicit BasicHarness(QueueOptions o = {})
      : q(kSpinLimit, o.max_pollers, o.carriers, o.hand_off, o.slot_streak, o.shared_every),
        record_order(o.record_order) {
    for (int i = 0; i < kMaxItems; ++i) items[i].id = i;
  }

  void post(int i) {
    items[i].payload.store(100 + i);  // [RT-2.2] ordered before the pop by the queue
    q.push(&items[i]);
  }

  // The carrier loop of ThreadPool::carrier_loop; an item's own posts go
  // through push_from, as ThreadPool::post does on a carrier.
  void carrier(unsigned idx, bool record_order) {
    Item* it = nullptr;
    while (q.pop(idx, it)) {
      RL_ASSERT(it->payload.load() == 100 + it->id);
      if (it->started != nullptr) it->started->post();
      if (it->unblock != nullptr) it->unblock->wait();
      it->runs.store(it->runs.load() + 1);
      for (int k = 0; k < 6; ++k) {
        Item* next = it->posts[k];
        if (next == nullptr) continue;
        if (k == it->pause_at)
          for (int p = 0; p < it->pauses; ++p) Sync::pause();  // the rescuer's window
        next->payload.store(100 + next->id);  // [SLOT-I2] ordered before its taker's read
        q.push_from(idx, next);
      }
      if (it->posted != nullptr) it->posted->post();
      if (it->hold != nullptr) it->hold->wait();
      if (it->releases != nullptr) it->releases->post();
      const int n = done.fetch_add(1, std::memory_order_acq_rel);
      if (record_order) order[n].store(it->id);
      if (n + 1 == expected) all_ran.post();
    }
  }

  // The pool's rescuer (ThreadPool::rescuer_loop), with a scheduling point
  // where the product sleeps for the rescue interval.
  void rescuer() {
    for (;;) {
      while (q.rescue()) Sync::pause();
      if (!q.wait_for_slots()) return;
    }
  }

  // The threads of a pool with `carriers` carriers and one poster (the next
  // thread) posting items 0..posts-1, then stopping: once every item ran, or at
  // once (stop_at_once: a pool destroyed with work queued). With `rescuer`,
  // the thread after the poster is the pool's rescuer, closed after the stop.
  void pool_thread(unsigned idx, unsigned carriers, int posts, bool stop_at_once,
                   bool with_rescuer = false) {
    if (idx < carriers) {
      carrier(idx, carriers == 1 || record_order);
      return;
    }
    if (idx > carriers) {
      rescuer();
      return;
    }
    for (int i = 0; i < posts; ++i) post(i);
    if (!stop_at_once) all_ran.wait();
    q.stop();
    if (!with_rescuer) return;
    if (stop_at_once) all_ran.wait();  // the pool closes its rescuer after the drain
    q.close_rescuer();
  }

  void check_all_ran_once() {
    RL_ASSERT(done.load(std::memory_order_relaxed) == expected);
    for (int i = 0; i < expected; ++i) RL_ASSERT(items[i].runs.load() == 1);
  }
  // The same when the items that run are not 0..expected-1.
  void check_ran_once(std::initializer_list<int> ids) {
    RL_ASSERT(done.load(std::memory_order_relaxed) == expected);
    for (int i : ids) RL_ASSERT(items[i].runs.load() == 1);
  }
  // One-carrier suites whose items are posted 0, 1, 2, ...: [SLOT-I1]
  // [RT-2.2], they ran in that order.
  void check_ran_in_post_order() {
    for (int n = 0; n < expected; ++n) RL_ASSERT(order[n].load() == n);
  }

  // One-carrier suites: where item `id` ran.
  int position_of(int id) {
    for (int n = 0; n < expected; ++n)
      if (order[n].load() == id) return n;
    return -1;
  }
};

using Harness = BasicHarness<Sync>;


// ---------------------------------------------------------------------------
// poll-then-park: one carrier, one poster posting two items, then (after both
// ran) stop. Checks: no lost wake-up whether a push lands before, during or
// after the carrier's poll or while it parks [READY-I1]; FIFO [RT-2.2]; each
// item once; the carrier returns after stop [READY-I3].
struct PollThenPark : rl::test_suite<PollThenPark, 2> {
  static constexpr const char* kChecks =
      "one carrier, two posts at any point of its poll or park: no lost wake-up, FIFO, each "
      "item once, the carrier returns after stop";
  Harness h{QueueOptions{.carriers = 1}};

  void before() { h.expected = 2; }
  void thread(unsigned idx) { h.pool_thread(idx, 1, 2, false); }
  void after() {
    h.check_all_ran_once();
    RL_ASSERT(h.order[0].load() == 0);  // [RT-2.2] post order
    RL_ASSERT(h.order[1].load() == 1);
  }
};

// ---------------------------------------------------------------------------
// two-carriers: two carriers (either polling, parked or between), one poster
// posting two items, then stop once both ran. Checks: each item runs exactly
// once (a doubled pop is a race on `runs` or a count of 2); no lost wake-up
// with two carriers counted as pollers or parked [READY-I1]; both return.
struct TwoCarriers : rl::test_suite<TwoCarriers, 3> {
  static constexpr const char* kChecks =
      "two carriers, two posts: each item once, no carrier stranded, both return after stop";
  Harness h;

  void before() { h.expected = 2; }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 2, false); }
  void after() { h.check_all_ran_once(); }
};

// ---------------------------------------------------------------------------
// blocked-carrier: two carriers; item 0 blocks its carrier until item 1 has run
// (a user's item that waits for other work). Checks [READY-I2]: when one
// carrier takes item 0 and leaves item 1 behind while the other is parked, it
// wakes that one; otherwise item 1 waits behind the blocked carrier for ever.
struct BlockedCarrier : rl::test_suite<BlockedCarrier, 3> {
  static constexpr const char* kChecks =
      "an item that blocks its carrier until the next item runs: the work left behind is "
      "handed to the other carrier, never stranded";
  Harness h;
  Resume item1_ran;

  void before() {
    h.expected = 2;
    h.items[0].unblock = &item1_ran;
    h.items[1].releases = &item1_ran;
  }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 2, false); }
  void after() { h.check_all_ran_once(); }
};

// ---------------------------------------------------------------------------
// stop-drains: the poster posts three items and stops at once, as a pool
// destroyed with work queued. Checks [RT-2.3] [READY-I3]: every item queued at
// stop runs exactly once, then both carriers return.
struct StopDrains : rl::test_suite<StopDrains, 3> {
  static constexpr const char* kChecks =
      "stop right after three posts: every queued item runs once, then every carrier returns";
  Harness h;

  void before() { h.expected = 3; }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 3, true); }
  void after() { h.check_all_ran_once(); }
};

// ---------------------------------------------------------------------------
// one-poller: two carriers, a cap of one poller, one poster posting two items,
// then stop once both ran. Checks [READY-I4]: at every pause of every poll, at
// most one carrier polls (CappedSync); a carrier refused the slot parks without
// counting as a poller, so no push skips its wake-up [READY-I1]; each item once.
struct OnePoller : rl::test_suite<OnePoller, 3> {
  static constexpr const char* kChecks =
      "two carriers, one polling slot, two posts: never two pollers at once, no carrier "
      "stranded, each item once, both return after stop";
  BasicHarness<CappedSync> h{QueueOptions{1}};

  void before() {
    h.expected = 2;
    g_capped = &h.q;
  }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 2, false); }
  void after() {
    h.check_all_ran_once();
    g_capped = nullptr;
  }
};

// ---------------------------------------------------------------------------
// The hand-off slot ([SLOT-I1]..[SLOT-I4]): items posted by a running item go
// through push_from, as ThreadPool::post does on a carrier.

// run-order: one carrier with slots; item 0 (posted by T1) posts items 1 and 2
// from its run. Checks [SLOT-I1] [RT-2.2]: the run's first post goes to the
// slot, the second moves it to the local queue ahead of itself, so 0, 1, 2.
struct RunOrder : rl::test_suite<RunOrder, 2> {
  static constexpr const char* kChecks =
      "one carrier, an item that posts two more from its run: they run in post order, each once";
  Harness h{QueueOptions{.carriers = 1, .hand_off = true}};

  void before() {
    h.expected = 3;
    h.items[0].posts[0] = &h.items[1];
    h.items[0].posts[1] = &h.items[2];
  }
  void thread(unsigned idx) { h.pool_thread(idx, 1, 1, false); }
  void after() {
    h.check_all_ran_once();
    h.check_ran_in_post_order();
  }
};

// The poster thread of slot-streak, local-fair and shared-turn-slot: posts item
// 0, waits until it runs, posts item 4 to the shared queue while item 0 still
// runs, then lets item 0 go on (to its own posts); stops the queue once every
// item ran.
struct LatePost {
  Resume item0_started;
  Resume item4_posted;
  void hold_item0(Harness& h) {
    h.items[0].started = &item0_started;
    h.items[0].unblock = &item4_posted;
  }
  void poster(Harness& h) {
    h.post(0);
    item0_started.wait();
    h.post(4);
    item4_posted.post();
    h.all_ran.wait();
    h.q.stop();
  }
};

// slot-streak: one carrier with slots, a streak of one. Item 0 runs, and while
// it runs T1 posts item 4 to the shared queue; item 0 then starts a chain of
// hand-offs (0 posts 1, 1 posts 2, 2 posts 3). Checks [SLOT-I3]: item 4, queued
// before item 1 was posted, runs after at most one slot item (position 2),
// not after the whole chain.
struct SlotStreak : rl::test_suite<SlotStreak, 2> {
  static constexpr const char* kChecks =
      "one carrier, a chain of hand-offs while another item waits in the shared queue: the "
      "waiting item runs after at most slot_streak of them";
  Harness h{QueueOptions{.carriers = 1, .hand_off = true, .slot_streak = 1}};
  LatePost late;

  void before() {
    h.expected = 5;
    late.hold_item0(h);
    for (int i = 0; i < 3; ++i) h.items[i].posts[0] = &h.items[i + 1];
  }
  void thread(unsigned idx) {
    if (idx == 0) return h.carrier(0, true);
    late.poster(h);
  }
  void after() {
    h.check_all_ran_once();
    RL_ASSERT(h.position_of(4) <= 2);  // [SLOT-I3]
  }
};

// held-hand-off: two carriers with slots and the rescuer. Item 0 posts item 1
// (to its carrier's slot) and then holds its carrier until item 1 has run.
// Checks [SLOT-I2] [SLOT-I4] [RT-2.2]: the other carrier steals item 1 after a
// vain poll, or the rescuer moves it to the shared queue and wakes it; either
// way item 1 runs exactly once, and nothing is left parked for ever.
struct HeldHandOff : rl::test_suite<HeldHandOff, 4> {
  static constexpr const char* kChecks =
      "an item that posts a hand-off and then holds its carrier until the hand-off ran: the "
      "other carrier or the rescuer takes it, exactly once; the rescuer is never left asleep";
  Harness h{QueueOptions{.carriers = 2, .hand_off = true}};
  Resume item1_ran;

  void before() {
    h.expected = 2;
    h.items[0].posts[0] = &h.items[1];
    h.items[0].hold = &item1_ran;
    h.items[1].releases = &item1_ran;
  }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 1, false, true); }
  void after() { h.check_all_ran_once(); }
};

// hand-off-drain: two carriers with slots and the rescuer; T2 posts items 0
// and 1 and stops the pool at once; their runs hand off items 2 and 3. Checks
// [READY-I3] [RT-2.3] with slots: every item, queued or handed off, runs
// exactly once before the carriers return.
struct HandOffDrain : rl::test_suite<HandOffDrain, 4> {
  static constexpr const char* kChecks =
      "stop right after two posts whose runs hand off two more: every item runs once, then "
      "every carrier returns";
  Harness h{QueueOptions{.carriers = 2, .hand_off = true}};

  void before() {
    h.expected = 4;
    for (int i = 0; i < 2; ++i) h.items[i].posts[0] = &h.items[i + 2];
  }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 2, true, true); }
  void after() { h.check_all_ran_once(); }
};

// ---------------------------------------------------------------------------
// The local queues ([LOCAL-I1]..[LOCAL-I5], detail/local_queue.hpp): a run's
// later posts wait in its carrier's local queue (capacity 4 here); the
// rescuer moves one whose items waited a whole look to the shared queue, and
// idle carriers steal from them only while the pool stops.

// local-rescue: two carriers with slots and the rescuer. Item 0 posts items
// 1, 2 and 3 from its run (1 to the slot, then 1 and 2 to the local queue,
// then 3) and holds its carrier until item 3 has run. Checks [LOCAL-I4] (the
// rescuer, awake, parking or parked, is woken or sees the local items),
// [LOCAL-I2] [LOCAL-I5] (the rescue, and the run's later posts after it) and
// [LOCAL-I1] [RT-2.2] (the run's posts start in post order, each exactly
// once), whichever of a slot steal, a slot rescue and a local rescue moves
// them.
struct LocalRescue : rl::test_suite<LocalRescue, 4> {
  static constexpr const char* kChecks =
      "an item that posts three more and then holds its carrier until the last ran: the "
      "rescuer moves them to the other carrier, which runs them in post order, each once";
  Harness h{QueueOptions{.carriers = 2, .hand_off = true, .record_order = true}};
  Resume item3_ran;

  void before() {
    h.expected = 4;
    for (int i = 0; i < 3; ++i) h.items[0].posts[i] = &h.items[i + 1];
    h.items[0].hold = &item3_ran;
    h.items[3].releases = &item3_ran;
  }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 1, false, true); }
  void after() {
    h.check_all_ran_once();
    RL_ASSERT(h.position_of(1) < h.position_of(2));  // [LOCAL-I1] [RT-2.2]
    RL_ASSERT(h.position_of(2) < h.position_of(3));
  }
};

// local-stop: two carriers with slots; T2 posts item 0 and stops the pool at
// once (a pool destroyed while a run posts); item 0 posts items 1, 2 and 3
// from its run. Checks [READY-I3] [RT-2.3] with local queues: what a run
// leaves in its slot and local queue while the pool stops (stolen by the
// other carrier or taken by its owner) runs exactly once, then both return.
struct LocalStop : rl::test_suite<LocalStop, 3> {
  static constexpr const char* kChecks =
      "stop at once while a run posts three items to its slot and local queue: each runs once, "
      "then every carrier returns";
  Harness h{QueueOptions{.carriers = 2, .hand_off = true}};

  void before() {
    h.expected = 4;
    for (int i = 0; i < 3; ++i) h.items[0].posts[i] = &h.items[i + 1];
  }
  void thread(unsigned idx) { h.pool_thread(idx, 2, 1, true); }
  void after() { h.check_all_ran_once(); }
};

// local-spill: one carrier; item 0 posts six items from its run, two more
// than its local queue holds after the slot. Checks [SLOT-I1] [RT-2.2] on the
// overflow: the local queue's items, then the run's later posts, go to the
// shared queue in order, so 0..6 run in post order, each once.
struct LocalSpill : rl::test_suite<LocalSpill, 2> {
  static constexpr const char* kChecks =
      "one carrier, a run that posts more than its local queue holds: every post runs once, in "
      "post order";
  Harness h{QueueOptions{.carriers = 1, .hand_off = true}};

  void before() {
    h.expected = 7;
    for (int i = 0; i < 6; ++i) h.items[0].posts[i] = &h.items[i + 1];
  }
  void thread(unsigned idx) { h.pool_thread(idx, 1, 1, false); }
  void after() {
    h.check_all_ran_once();
    h.check_ran_in_post_order();
  }
};

// local-fair: one carrier, shared_every 2. Item 0 runs; meanwhile T1 posts
// item 4 to the shared queue; item 0 then posts 1, 2 and 3 (slot, then local
// queue). Checks [LOCAL-I3]: item 4 runs at the second pop, ahead of the local
// queue, not after it.
struct LocalFair : rl::test_suite<LocalFair, 2> {
  static constexpr const char* kChecks =
      "one carrier fed by its own posts while an item waits in the shared queue: the waiting "
      "item runs within shared_every pops";
  Harness h{QueueOptions{.carriers = 1, .hand_off = true, .slot_streak = 8, .shared_every = 2}};
  LatePost late;

  void before() {
    h.expected = 5;
    late.hold_item0(h);
    for (int i = 0; i < 3; ++i) h.items[0].posts[i] = &h.items[i + 1];
  }
  void thread(unsigned idx) {
    if (idx == 0) return h.carrier(0, true);
    late.poster(h);
  }
  void after() {
    h.check_all_ran_once();
    RL_ASSERT(h.position_of(4) <= 2);  // [LOCAL-I3] within shared_every pops of its post
  }
};

// shared-turn-slot: one carrier, shared_every 2. Item 0 runs; meanwhile T1
// posts item 4 to the shared queue; item 0 then posts item 1 (its slot only).
// The second pop is a shared turn: it moves item 1 from the slot to the local
// queue and takes item 4, whose run posts item 5 (the slot again). Checks
// [LOCAL-I3] with a filled slot and [SLOT-I1]'s empty slot at a run's start:
// item 4 runs second, and nothing is lost when item 5 fills the slot.
struct SharedTurnSlot : rl::test_suite<SharedTurnSlot, 2> {
  static constexpr const char* kChecks =
      "a shared turn while the slot holds a hand-off: the hand-off waits in the local queue, "
      "the next run's hand-off does not overwrite it, each runs once";
  Harness h{QueueOptions{.carriers = 1, .hand_off = true, .shared_every = 2}};
  LatePost late;

  void before() {
    h.expected = 4;
    late.hold_item0(h);
    h.items[0].posts[0] = &h.items[1];
    h.items[4].posts[0] = &h.items[5];
  }
  void thread(unsigned idx) {
    if (idx == 0) return h.carrier(0, true);
    late.poster(h);
  }
  void after() {
    h.check_ran_once({0, 1, 4, 5});
    RL_ASSERT(h.order[1].load() == 4);  // [LOCAL-I3] the shared turn
  }
};

// rescued-then-post: one carrier with slots and the rescuer. Item 0 posts
// item 1 (its slot), lets the rescuer look (scheduling points where the
// product's run would go on working), then posts item 2. Checks [SLOT-I1]
// [RT-2.2] across a rescue: when the rescuer moved item 1 to the shared
// queue, it leaves its mark in the slot and item 2 follows item 1 there
// instead of overtaking it from the local queue: 0, 1, 2, each once.
struct RescuedThenPost : rl::test_suite<RescuedThenPost, 3> {
  static constexpr const char* kChecks =
      "a run's first post rescued from its slot before the run's second post: they still run "
      "in post order, each once";
  Harness h{QueueOptions{.carriers = 1, .hand_off = true}};

  void before() {
    h.expected = 3;
    h.items[0].posts[0] = &h.items[1];
    h.items[0].posts[1] = &h.items[2];
    h.items[0].pauses = 3;
  }
  void thread(unsigned idx) { h.pool_thread(idx, 1, 1, false, true); }
  void after() {
    h.check_all_ran_once();
    h.check_ran_in_post_order();
  }
};

// local-rescued-then-post: one carrier with the rescuer. Item 0 posts items
// 1 and 2 (the slot, then both to the local queue), lets the rescuer look
// (scheduling points where the product's run would go on working), then
// posts item 3. Checks [LOCAL-I5] [RT-2.2] across a local rescue: when the
// rescuer moved items 1 and 2 to the shared queue, item 3 follows them there
// instead of overtaking them from the local queue: 0, 1, 2, 3, each once.
struct LocalRescuedThenPost : rl::test_suite<LocalRescuedThenPost, 3> {
  static constexpr const char* kChecks =
      "a run's local posts rescued before the run's next post: they still run in post order, "
      "each once";
  Harness h{QueueOptions{.carriers = 1, .hand_off = true}};

  void before() {
    h.expected = 4;
    for (int i = 0; i < 3; ++i) h.items[0].posts[i] = &h.items[i + 1];
    h.items[0].pause_at = 2;
    h.items[0].pauses = 4;
  }
  void thread(unsigned idx) { h.pool_thread(idx, 1, 1, false, true); }
  void after() {
    h.check_all_ran_once();
    h.check_ran_in_post_order();
  }
};

// poller-steals: three carriers with slots and a cap of one poller, no
// rescuer. Item 0 posts item 1 (its slot) and holds its carrier until item 1
// has run; once item 1 is in the slot, T3 posts item 2 to the shared queue;
// item 1 holds its carrier until item 2 has run. (Without a rescuer a slot
// fill wakes nobody, so item 2's push comes after it: the carrier that takes
// item 2 then steals item 1.) Checks [READY-I1] across a steal: a push
// that lands while the one poller polls wakes nobody; when that poller then
// steals item 1 instead of re-checking under the mutex, it hands item 2 on
// to the parked carrier (hand_on()); otherwise all three carriers wait.
struct PollerSteals : rl::test_suite<PollerSteals, 4> {
  static constexpr const char* kChecks =
      "three carriers, one poller: a shared push made while the poller polls is handed on "
      "when the poller steals a hand-off instead, never left with a carrier asleep";
  Harness h{QueueOptions{.max_pollers = 1, .carriers = 3, .hand_off = true}};
  Resume item1_posted;
  Resume item1_done;  // item 0 holds until item 1 ran
  Resume item2_done;  // item 1 holds until item 2 ran

  void before() {
    h.expected = 3;
    h.items[0].posted = &item1_posted;
    h.items[0].posts[0] = &h.items[1];
    h.items[0].hold = &item1_done;
    h.items[1].unblock = &item2_done;
    h.items[1].releases = &item1_done;
    h.items[2].releases = &item2_done;
  }
  void thread(unsigned idx) {
    if (idx < 3) return h.carrier(idx, false);
    h.post(0);
    item1_posted.wait();
    h.post(2);
    h.all_ran.wait();
    h.q.stop();
  }
  void after() { h.check_all_ran_once(); }
};

// ---------------------------------------------------------------------------
// destroy-after-wake: two carriers on a queue on the heap (a harness the owner
// deletes); a poster (T2) that pushes items 0 and 1 and returns; and the
// pool's owner (T3), which waits for both items to run, stops the queue,
// waits for both carriers to return and deletes the queue, as ~ThreadPool
// does after joining its carriers. The poster is not a carrier, so nothing
// joins it. Checks [READY-I5]: a wake-up decided under the mutex is made
// after the unlock, and the queue is not destroyed under it: a notify on a
// deleted queue is a use of a destroyed condition variable or of freed
// memory, which Relacy reports. Each item runs once.
// The window is held open (HeldNotifySync, model_held_notify.hpp): the
// poster's notify waits, yielding, until the owner announces its delete (or a
// bound of rounds passes, so a wake-up both carriers are parked for is still
// made). A free scheduler puts the owner's stop, two returns and delete
// inside that one window too rarely to find: the search then lets either the
// delete or the notify go first.
struct DestroyAfterWake : rl::test_suite<DestroyAfterWake, 4> {
  static constexpr const char* kChecks =
      "a poster that is not a carrier notifies after its unlock, held until its items ran and "
      "the owner deletes the queue: the destructor waits for the notify, each item once";
  using WindowHarness = BasicHarness<turnstile::model::HeldNotifySync>;
  WindowHarness* h = nullptr;  // on the heap: the owner deletes it, and its queue with it
  Sync::atomic<int> deleting{0};
  Resume returned[2];

  void before() {
    h = new WindowHarness;
    h->expected = 2;
    turnstile::model::g_held_notify = {2, &deleting};
  }
  void thread(unsigned idx) {
    if (idx < 2) {
      h->carrier(idx, false);
      returned[idx].post();
      return;
    }
    if (idx == 2) {
      h->post(0);
      h->post(1);
      return;  // nothing joins the poster: its notify may still be due
    }
    h->all_ran.wait();
    h->q.stop();
    returned[0].wait();
    returned[1].wait();
    h->check_all_ran_once();
    deleting.store(1, std::memory_order_relaxed);  // the held notify may go now, or after the delete
    delete h;  // [READY-I5] ~BasicReadyQueue waits for the poster's notify
    h = nullptr;
  }
  void after() { turnstile::model::g_held_notify = {}; }
};

}  // namespace

TURNSTILE_MODEL_MAIN("ready_queue", {
    suite<PollThenPark, "poll-then-park">({bounded(2), random_search(100000)}),
    suite<TwoCarriers, "two-carriers">({bounded(2), random_search(100000)}),
    suite<BlockedCarrier, "blocked-carrier">({bounded(2), random_search(100000)}),
    suite<StopDrains, "stop-drains">({bounded(2), random_search(100000)}),
    suite<OnePoller, "one-poller">({bounded(2), random_search(100000)}),
    suite<RunOrder, "run-order">({bounded(2), random_search(100000)}),
    suite<SlotStreak, "slot-streak">({bounded(2), random_search(100000)}),
    // Four threads (two carriers, the poster, the rescuer): bound 0 is 92 864
    // executions here (1.4 s), bound 1 runs for minutes: ci/model-long's.
    suite<HeldHandOff, "held-hand-off">({bounded(0), random_search(100000)}),
    suite<HandOffDrain, "hand-off-drain">({bounded(0), random_search(100000)}),
    // Four threads again; bound 0 is 1.36 M executions here (21 s): ci/model-long's.
    suite<LocalRescue, "local-rescue">({random_search(100000)}),
    suite<LocalStop, "local-stop">({bounded(1), random_search(100000)}),
    suite<LocalSpill, "local-spill">({bounded(2), random_search(20000)}),
    suite<LocalFair, "local-fair">({bounded(2), random_search(20000)}),
    // Bound 2 is 1.6 M executions (16 s): ci/model-long's.
    suite<RescuedThenPost, "rescued-then-post">({bounded(1), random_search(20000)}),
    suite<LocalRescuedThenPost, "local-rescued-then-post">({bounded(1), random_search(20000)}),
    suite<SharedTurnSlot, "shared-turn-slot">({bounded(2), random_search(20000)}),
    suite<PollerSteals, "poller-steals">({random_search(100000)}),
    suite<DestroyAfterWake, "destroy-after-wake">({bounded(1), random_search(100000)}),
})
