// turnstile/detail/ready_queue.hpp: the ThreadPool's ready queue. One FIFO
// shared by every carrier, plus one hand-off slot and one local queue per
// carrier (detail/local_queue.hpp); an idle carrier polls for a bounded while
// before it parks (at most max_pollers carriers at once), and a push wakes a
// parked carrier only when nobody is polling. A rescuer thread moves a
// hand-off or local work that waits too long to the shared queue.
//
// Why (issue 28, impl/bench/caf_bench.cpp): a carrier that parks as soon as the
// queue is empty turns every hand-off between two carriers (a caller's
// `co_await act.call`, the turn it starts, the resume it posts back) into a
// futex wake-up and a context switch: 176,560 switches against CAF's 8,710 for
// the same pipelined run. Three remedies, all here:
//  - the poll: a carrier that has just run out of work is the one most likely
//    to be handed the next item within microseconds; it waits for it awake,
//    and the poster saves the wake-up;
//  - the hand-off slot: the first item a carrier posts while it runs an item
//    (the fiber its item just made ready) runs next on that same carrier,
//    after the running item returns, with no wake-up and no second carrier
//    touching the fiber's storage; an idle carrier steals it, and the rescuer
//    moves it to the shared queue, when the running item holds its carrier;
//  - the local queue: the run's later posts wait on the same carrier too,
//    behind a lock nobody else takes (BM_Base_LaneRunMany/carriers:2, 128
//    lane items from one fiber: each post and each take met the other
//    carrier on the shared queue's mutex). They stay its carrier's while it
//    keeps up with them: the rescuer moves them to the shared queue only once
//    some have waited a whole rescue interval. A thief that stole them at once
//    moved each fresh item, and what it touches, across cores: 1,000 actors
//    created and called from one fiber took 2.3 to 3.4 ms on two carriers
//    against 0.8 ms on one (BM_CafTs_CreateCall, impl/bench/README.md).
//
// Guarantees
//  - [RT-2.2] Order. pop() takes the shared queue's oldest item; items pushed
//    to it by one thread are taken in push order, by whichever carriers take
//    them. The posts one run makes (push_from, [SLOT-I1]) are taken in post
//    order: each from the queue it waits in (slot, local queue, or the shared
//    queue once the local one was full or rescued), and a rescue or a thief
//    takes the oldest ([LOCAL-I1]). A post may start before items queued
//    earlier by other runs or threads: that is the hand-off and the local
//    queue, bounded by [SLOT-I3] and [LOCAL-I3].
//  - [READY-I1] No lost wake-up. A carrier parks only after it has re-checked,
//    under the mutex, that the queue is empty and it is no longer counted as
//    polling; push() decides whether to wake under the same mutex. So an item
//    pushed while a carrier polls is either seen by that carrier's re-check or
//    its push saw the carrier parked (or about to be, counted in parked_) and
//    woke one.
//  - [READY-I2] Work left is not stranded: a carrier that takes an item and
//    leaves more behind wakes a parked carrier when nobody is polling, so k
//    items pushed while one carrier polled are not all run by that one while
//    others sleep.
//  - [READY-I5] A wake-up is made outside the mutex: push() and the takes
//    decide under mu_ whom to wake ([READY-I1], [READY-I2]) and notify once
//    mu_ is released, so the woken carrier does not block on the mutex its
//    waker still holds. The queue is not destroyed under a waker: each wake
//    decided is counted under mu_ and uncounted after its notify, and the
//    destructor waits for the count to reach zero (a pusher that is not a
//    carrier may still be notifying when its item has run and the pool's
//    owner destroys the pool). Both halves are detail/deferred_wake.hpp,
//    shared with sync_wait's loop inbox ([INBOX-I2]).
//  - [READY-I3] [RT-2.3] stop() wakes every carrier; pop() keeps returning the
//    items queued (and any pushed while draining) and returns false only when
//    stopped, the shared queue empty, the caller's own slot and local queue
//    empty and a steal from the other local queues found nothing (what a
//    running carrier posts after that is run by that carrier itself). While
//    the pool stops, an idle carrier steals the oldest half of another's
//    local queue at once (steal_local()): the drain uses every carrier.
//  - Polling is bounded (spin_limit rounds of Sync::pause(), about 20 us on
//    the benchmarks' x86 VM with the ThreadPool's limit), so an idle pool
//    parks and costs nothing: no carrier polls for ever.
//  - [READY-I4] At most max_pollers carriers poll at once. A carrier that finds
//    every polling slot taken parks at once. A refused carrier is never counted
//    as polling, so it is woken like any parked carrier ([READY-I1]).
//  - [SLOT-I1] The hand-off slot holds at most the first item a carrier posts
//    during one run. A later post of the same run first moves the slot's item
//    (if nobody took it yet) to the local queue, then queues its own: the
//    run's posts keep their order. When the rescuer took the slot's item to
//    the shared queue, it leaves a mark in the slot (rescued_mark(), cleared
//    by the owner's next pop()), and the run's later posts follow the item
//    there instead of overtaking it from the local queue.
//  - [SLOT-I2] A slot item runs exactly once, taken by whichever of three
//    exchanges the slot first: its owner's next pop(), an idle carrier's steal
//    (only after that carrier polled in vain: a fresh hand-off is its owner's),
//    or the rescuer, which moves to the shared queue (with its wake-up) an item
//    found in the same slot at two looks with no pop() by its owner between:
//    a run that holds its carrier does not hold back its hand-off while
//    another carrier is idle ([RT-2.2]) for longer than two rescue intervals.
//  - [SLOT-I3] A slot does not starve the shared queue: a carrier runs at most
//    slot_streak slot items in a row; the next one, when the shared queue has
//    items, goes behind them and the carrier takes the oldest.
//  - [LOCAL-I1] A run's later posts wait in its carrier's local queue
//    (capacity LocalCapacity, a FIFO) behind the slot's item, which the
//    second post moves there first. A post that does not fit moves the whole
//    local queue, then itself, to the shared queue, and the run's later posts
//    follow it there, so the run's posts keep their order.
//  - [LOCAL-I2] Local items are their carrier's while it keeps up with them:
//    while the pool runs, no other carrier takes from a local queue. The
//    rescuer moves a local queue whole to the shared queue (in order, with
//    push()'s wake-up) when an item that was in it at the rescuer's previous
//    look is still there: so no local item waits more than about two rescue
//    intervals while another carrier is idle ([RT-2.2]), and a carrier that
//    takes its own posts within an interval keeps them, with no cache line
//    crossing cores. The run that was posting there (if any) is sealed
//    (local_queue.hpp [LOCAL-I5]): its later posts follow the rescued items
//    to the shared queue. Each item is taken once (local_queue.hpp
//    [LOCAL-I2]). While the pool stops, idle carriers steal ([READY-I3]).
//  - [LOCAL-I3] A local queue does not starve the shared queue: every
//    shared_every-th pop of a carrier takes the shared queue's oldest first,
//    when it holds any, as its relaxed size hint shows (a stale zero skips
//    that turn; a later one takes it). So a carrier fed by its own posts still
//    runs what other threads queue; the slot's item, if any, goes behind the
//    local ones.
//  - [LOCAL-I4] No lost rescuer wake-up for local work: a local push
//    publishes the queue's size (seq_cst) and then reads the rescuer's
//    announcement (seq_cst); the rescuer announces its park (seq_cst) and then
//    re-reads every local queue's size (seq_cst). One of the two sees the
//    other: the push wakes it, or it does not park. The rescuer stays awake
//    while any local queue holds items.
//  - [SLOT-I4] No lost rescuer wake-up: the rescuer announces its park
//    (rescuer_parked_, seq_cst) and then re-checks every slot; a fill stores
//    its slot (seq_cst) and then reads the announcement. One of the two sees
//    the other, so a parked rescuer is woken by the first fill after it parks.
//
// Ordering: push() and pop() synchronise through the mutex: what a pusher wrote
// before push() happens before what the carrier that pops the item does next
// (the model checks this with a Sync::var payload). A slot is filled with a
// seq_cst (so release) store and emptied by exchanges that acquire: what the
// run wrote before push_from happens before what a thief or the owner does
// with the item. The counters read outside the mutex (polling_, size_, a
// carrier's runs_ and fills_, a local queue's pushed() and taken()) are hints
// only: every decision they feed is re-made under the mutex or by an exchange
// ([READY-I1], [SLOT-I2], [LOCAL-I2]).
//
// Where a popped item runs: on the calling carrier, after pop() returns
// (ThreadPool::carrier_loop). Nothing runs inside push(), push_from() or pop().
//
// Lock order: mu_, then a local queue's mutex (a spill, a rescue,
// shared_first(), streak_used_up()); no other nesting.
//
// Thread safety: push(), stop() from any thread; pop(c) and push_from(c) only
// from carrier c (push_from between two of its pop()s, i.e. while it runs an
// item); rescue() and wait_for_slots() from one rescuer thread at a time.
// Template over Sync (turnstile/sync.hpp): model/ready_queue_model.cpp checks
// this very code with Relacy (RelacySync). The product instantiates
// BasicReadyQueue<StdSync, Runnable*> (turnstile/scheduler.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <type_traits>

#include "turnstile/detail/deferred_wake.hpp"
#include "turnstile/detail/local_queue.hpp"
#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/sync.hpp"

namespace turnstile::detail {

// LocalCapacity: how many of one run's posts stay on its carrier before the
// run spills to the shared queue ([LOCAL-I1]). 1024 (8 KB of pointers per
// carrier): a run that fans out up to 1,023 posts (a loop creating and
// calling 1,000 activations) keeps them on its carrier, which takes them
// while they are in its cache; 256 spilled that loop's posts to the shared
// queue, and create + call on two carriers stayed at 2.6 to 3.7 ms against
// 0.77 to 0.98 ms (impl/bench/README.md). The rescuer bounds how long they
// wait there either way ([LOCAL-I2]).
template <class Sync, class T, std::size_t LocalCapacity = 1024>
class BasicReadyQueue {
  static_assert(std::is_pointer_v<T>, "items are pointers: a null slot is an empty one");
  using LocalQueue = BasicLocalQueue<Sync, T, LocalCapacity>;

 public:
  static constexpr unsigned kUnlimitedPollers = ~0u;
  static constexpr unsigned kDefaultSlotStreak = 3;
  static constexpr unsigned kDefaultSharedEvery = 16;  // [LOCAL-I3]
  static constexpr std::size_t kLocalCapacity = LocalCapacity;  // [LOCAL-I1]
  // The most a steal moves at once: half a local queue, so the thief's own
  // (empty) local queue takes the rest of its batch.
  static constexpr std::size_t kStealMax = LocalCapacity / 2 < 32 ? LocalCapacity / 2 : 32;

  // spin_limit: the rounds of Sync::pause() an idle carrier polls before it
  // parks (0: park at once, the behaviour before issue 28). max_pollers: how
  // many carriers may poll at once ([READY-I4]; 0 is taken as 1). carriers:
  // the pop() indices 0..carriers-1 (0 is taken as 1). hand_off: whether a
  // carrier's first post of a run goes to its slot ([SLOT-I1]; false: every
  // post goes to the shared queue). slot_streak: [SLOT-I3] (0 is taken as 1).
  // shared_every: [LOCAL-I3] (0 is taken as 1).
  explicit BasicReadyQueue(unsigned spin_limit, unsigned max_pollers = kUnlimitedPollers,
                           unsigned carriers = 1, bool hand_off = false,
                           unsigned slot_streak = kDefaultSlotStreak,
                           unsigned shared_every = kDefaultSharedEvery)
      : spin_limit_(spin_limit),
        max_pollers_(max_pollers == 0 ? 1 : max_pollers),
        carrier_count_(carriers == 0 ? 1 : carriers),
        hand_off_(hand_off),
        slot_streak_(slot_streak == 0 ? 1 : slot_streak),
        shared_every_(shared_every == 0 ? 1 : shared_every),
        carriers_(new Carrier[carrier_count_]()) {}  // () zero-fills: empty slots
  BasicReadyQueue(const BasicReadyQueue&) = delete;
  BasicReadyQueue& operator=(const BasicReadyQueue&) = delete;
  // [READY-I5] Waits until every wake-up decided under mu_ has been made: a
  // pusher that is not a carrier may still be in its notify when the item it
  // pushed has run and the pool's owner destroys the pool.
  ~BasicReadyQueue() { wakes_.wait_until_made(); }

  // Appends `item` to the shared queue ([RT-2.2]) and wakes a parked carrier
  // unless one polls.
  void push(T item) {
    Wake wake(*this);  // [READY-I5] made once the lock below is released
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    push_locked(item, wake);
  }

  // A post made by carrier `c` while it runs an item ([SLOT-I1]): the run's
  // first goes to c's slot (no wake-up: c takes it when its item returns);
  // a later one moves the slot's item, if still there, and then itself to c's
  // local queue ([LOCAL-I1]; the shared queue when that is full or was
  // rescued during this run), and wakes a parked rescuer ([LOCAL-I4]).
  void push_from(unsigned c, T item) {
    if (!hand_off_) return push(item);
    Carrier& me = carriers_[c];
    if (!me.filled_this_run_.load()) {
      me.filled_this_run_.store(true);
      // relaxed: a hint for the rescuer's "busy" answer; only c writes it.
      me.fills_.store(me.fills_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      // seq_cst: a release for the exchange that takes the item ([SLOT-I2]),
      // and [SLOT-I4]'s store-then-load against the rescuer's announcement.
      me.slot_.store(item, std::memory_order_seq_cst);
      if (rescuer_parked_.load(std::memory_order_seq_cst)) wake_rescuer();  // [SLOT-I4]
      return;
    }
    // [SLOT-I1] a later post: the slot's item first, then this one, in order.
    // relaxed: c filled the slot itself, so there is nothing to acquire; the
    // exchange alone decides against a thief or the rescuer [SLOT-I2].
    T first = me.slot_.exchange(T{}, std::memory_order_relaxed);
    if (first == rescued_mark()) {
      // [SLOT-I1] the rescuer moved the run's first post to the shared queue
      // (under mu_, which it held while it left this mark): follow it there.
      first = T{};
      me.run_local_.store(kRunSpilled);
    }
    const unsigned run_local = me.run_local_.load();
    if (run_local != kRunSpilled && me.local_.push_run(first, item, run_local == kRunNone)) {
      me.run_local_.store(kRunLocal);  // [LOCAL-I1]
      // [LOCAL-I4] after the push's seq_cst publish of the local size.
      if (rescuer_parked_.load(std::memory_order_seq_cst)) wake_rescuer();
      return;
    }
    // Full, or rescued during this run ([LOCAL-I5]): the whole local queue
    // (empty when rescued), then these two, to the shared queue in order
    // (lock order: mu_, then a local queue's mutex); the run's later posts
    // follow them there, so the run's posts keep their order ([SLOT-I1]).
    me.run_local_.store(kRunSpilled);
    Wake wake(*this);  // [READY-I5]
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    me.local_.drain_to(items_);
    if (first != T{}) push_locked(first, wake);
    push_locked(item, wake);
  }

  // Carrier `c`'s next item into `out`: every shared_every-th time the
  // shared queue's oldest if any ([LOCAL-I3]); else its slot's (within the
  // streak, [SLOT-I3]); else its local queue's oldest; else the shared
  // queue's oldest; else a slot item stolen after a vain poll ([SLOT-I2]);
  // else it parks until one is pushed. Returns false once stop() was called
  // and the shared queue, c's slot, c's local queue and every other local
  // queue are empty (while stopping it steals from those, [READY-I3]).
  bool pop(unsigned c, T& out) {
    Carrier& me = carriers_[c];
    me.filled_this_run_.store(false);  // [SLOT-I1] c's previous run has returned
    me.run_local_.store(kRunNone);
    if (hand_off_) {
      if (shared_turn(me, out)) return took(me);
      if (take_own_slot(me, out)) return took(me);
      me.streak_.store(0);
      if (me.local_.pop(out)) return took(me);  // [LOCAL-I1] the oldest
    }
    return pop_wait(c, out);
  }

  // pop()'s slow half, out of line so that its fast half (a hand-off, a local
  // item) stays small enough to inline into the carrier's loop.
  [[gnu::noinline]] bool pop_wait(unsigned c, T& out) {
    Carrier& me = carriers_[c];
    for (;;) {
      bool stopping = false;
      {
        Wake wake(*this);  // [READY-I5]
        BasicLockGuard<typename Sync::mutex> lock(mu_);
        if (take_locked(out, wake)) return took(me);
        stopping = stopping_.load();
      }
      if (stopping) {
        // [READY-I3] the drain: other carriers' local queues are anyone's now.
        if (hand_off_ && steal_local(c, out)) return stole(me);
        return false;  // stopped and drained
      }
      // [SLOT-I2] steal only after a vain poll of the shared queue: a run's
      // fresh hand-off is its carrier's first (a carrier that has just run out
      // of work takes it within microseconds, with no cache line crossing
      // cores), and a poll that saw the shared queue filled goes to take it,
      // so no push that counted on this poller is left behind while it runs
      // another carrier's work. Local queues are left to their owners and the
      // rescuer ([LOCAL-I2]).
      if (!poll() && hand_off_ && steal(c, out)) return stole(me);
      Wake wake(*this);  // [READY-I5]
      BasicLockGuard<typename Sync::mutex> lock(mu_);
      // [READY-I1] the re-check under the mutex, after this carrier stopped
      // counting as a poller (poll() decremented polling_ before returning).
      parked_.store(parked_.load() + 1);
      while (items_.empty() && !stopping_.load()) cv_.wait(mu_);
      parked_.store(parked_.load() - 1);
      if (take_locked(out, wake)) return took(me);
      // stopping: the next round steals or returns
    }
  }

  // [READY-I3] No carrier parks from now on; every parked one is woken.
  void stop() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    stopping_.store(true);
    cv_.notify_all();
  }

  // The rescuer's look ([SLOT-I2], [LOCAL-I2]): every slot item that was in
  // its slot at the previous look too, with no pop() by its owner since, and
  // every local queue that still holds an item it held at the previous look,
  // go to the shared queue (with push()'s wake-up). Returns true while
  // hand-offs go on (a slot filled now, or filled since the previous look) or
  // a local queue holds items: look again after the rescue interval; false:
  // call wait_for_slots().
  bool rescue() {
    bool busy = false;
    for (unsigned i = 0; i < carrier_count_; ++i) {
      Carrier& c = carriers_[i];
      // [LOCAL-I2] relaxed hints: rescue_to() decides again under the queue's
      // mutex. Read before the look at the slot: local items are the older.
      const std::size_t pushed = c.local_.pushed();
      const bool queued = c.local_.size_hint() > 0;
      if (queued && c.local_.taken() < c.seen_pushed_.load()) {
        Wake wake(*this);  // [READY-I5]
        BasicLockGuard<typename Sync::mutex> lock(mu_);
        if (c.local_.rescue_to(items_, c.seen_pushed_.load()) > 0) pushed_locked(wake);
      }
      c.seen_pushed_.store(pushed);
      // relaxed: hints; the exchange below decides [SLOT-I2].
      const unsigned runs = c.runs_.load(std::memory_order_relaxed);
      const unsigned fills = c.fills_.load(std::memory_order_relaxed);
      const bool filled = holds_item(c.slot_.load(std::memory_order_relaxed));
      if (filled && c.seen_filled_.load() && runs == c.seen_runs_.load()) {
        // Under mu_, the take and the push together: an owner that finds its
        // slot empty (or marked) and then takes the mutex sees the item queued.
        Wake wake(*this);  // [READY-I5]
        BasicLockGuard<typename Sync::mutex> lock(mu_);
        // relaxed: the compare-exchange below decides and acquires.
        T held = c.slot_.load(std::memory_order_relaxed);
        // acquire: pairs with the fill's seq_cst store in push_from. The mark
        // sends the run's later posts after this one ([SLOT-I1]).
        if (holds_item(held) &&
            c.slot_.compare_exchange_strong(held, rescued_mark(), std::memory_order_acquire,
                                            std::memory_order_relaxed))
          push_locked(held, wake);
      }
      busy = busy || queued || filled || fills != c.seen_fills_.load();
      c.seen_filled_.store(filled);
      c.seen_runs_.store(runs);
      c.seen_fills_.store(fills);
    }
    return busy;
  }

  // Parks the rescuer until a slot is filled or a local queue gets an item
  // ([SLOT-I4], [LOCAL-I4]); returns false once close_rescuer() was called.
  bool wait_for_slots() {
    BasicLockGuard<typename Sync::mutex> lock(rescue_mu_);
    // seq_cst: [SLOT-I4]'s and [LOCAL-I4]'s announcement, before the re-check
    // of every slot and local queue.
    rescuer_parked_.store(true, std::memory_order_seq_cst);
    // relaxed: a fill's wake_rescuer clears it under rescue_mu_, held here.
    while (rescuer_parked_.load(std::memory_order_relaxed) && !rescue_closed_.load()) {
      if (any_rescuable()) {
        rescuer_parked_.store(false, std::memory_order_relaxed);  // under rescue_mu_
        break;
      }
      rescue_cv_.wait(rescue_mu_);
    }
    return !rescue_closed_.load();
  }

  // Ends wait_for_slots() for good (the pool's destructor, after its carriers
  // returned).
  void close_rescuer() {
    BasicLockGuard<typename Sync::mutex> lock(rescue_mu_);
    rescue_closed_.store(true);
    rescue_cv_.notify_all();
  }

  // Items in the shared queue now (a snapshot).
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }
  // Carriers polling now (a snapshot, for tests and the model: [READY-I4]).
  unsigned polling() const { return polling_.load(std::memory_order_relaxed); }
  unsigned max_pollers() const { return max_pollers_; }
  unsigned carriers() const { return carrier_count_; }
  bool hand_off() const { return hand_off_; }

 private:
  // [READY-I5] The wake-ups a critical section on mu_ decided (hand_on_locked),
  // made by Wake's destructor, after the lock guard declared below it has
  // released mu_. A carrier woken while its waker still holds mu_ blocks on
  // mu_ at once; on a busy machine the wakee, placed on the waker's core,
  // preempts it first, so each wake-up cost four context switches instead of
  // one (perf record -e context-switches, BM_CafTs_InFlight/threads:2 at load
  // 4). Declare it before the lock guard.
  class Wake : public BasicDeferredWake<Sync> {
   public:
    explicit Wake(BasicReadyQueue& q) noexcept : BasicDeferredWake<Sync>(q.cv_, q.wakes_) {}
  };

  // One carrier's slot and counters. The owner-only and rescuer-only fields
  // are Sync::var, so the model reports a touch by anyone else as a race.
  struct alignas(64) Carrier {
    typename Sync::template atomic<T> slot_;              // [SLOT-I1] the hand-off (null: empty)
    typename Sync::template atomic<unsigned> runs_{0};    // items taken by pop(); owner writes
    typename Sync::template atomic<unsigned> fills_{0};   // slot fills; owner writes
    typename Sync::template var<bool> filled_this_run_;   // owner only
    typename Sync::template var<unsigned> streak_;        // owner only [SLOT-I3]
    typename Sync::template var<bool> seen_filled_;       // rescuer only
    typename Sync::template var<unsigned> seen_runs_;     // rescuer only
    typename Sync::template var<unsigned> seen_fills_;    // rescuer only
    typename Sync::template var<unsigned> ticks_;         // owner only: pops since the last shared turn [LOCAL-I3]
    typename Sync::template var<unsigned> run_local_;     // owner only: kRunNone/Local/Spilled
    typename Sync::template var<std::size_t> seen_pushed_;  // rescuer only [LOCAL-I2]
    LocalQueue local_;  // [LOCAL-I1] the run's later posts; the rescuer moves them [LOCAL-I2]
  };

  // Where a run's posts stand in its local queue: none yet, some there, or
  // following its earlier posts in the shared queue (the local queue was
  // full, or rescued: [SLOT-I1], [LOCAL-I5]).
  static constexpr unsigned kRunNone = 0;
  static constexpr unsigned kRunLocal = 1;
  static constexpr unsigned kRunSpilled = 2;

  void push_locked(T item, Wake& wake) TURNSTILE_REQUIRES(mu_) {
    items_.push_back(item);
    pushed_locked(wake);
  }

  // After items were appended to items_: the size hint, and a wake-up.
  void pushed_locked(Wake& wake) TURNSTILE_REQUIRES(mu_) {
    // relaxed: a hint for pollers (they re-check under mu_); written under mu_ only.
    size_.store(items_.size(), std::memory_order_relaxed);
    hand_on_locked(wake);  // [READY-I1] items_ holds what was just pushed
  }

  bool take_locked(T& out, Wake& wake) TURNSTILE_REQUIRES(mu_) {
    if (items_.empty()) return false;
    out = items_.front();  // [RT-2.2] the oldest
    items_.pop_front();
    size_.store(items_.size(), std::memory_order_relaxed);  // hint, as in push()
    // [READY-I2] work left that this carrier cannot take now: hand it on.
    hand_on_locked(wake);
    return true;
  }

  // Decides to wake a parked carrier when nobody polls and the shared queue
  // holds work: after a push ([READY-I1]) or a take that leaves more
  // ([READY-I2]). The wake-up itself is made once mu_ is released ([READY-I5]).
  void hand_on_locked(Wake& wake) TURNSTILE_REQUIRES(mu_) {
    // [READY-I1] relaxed polling_ is enough: a poller's decrement is sequenced
    // before its re-check under mu_, so when that re-check ran before this
    // push, the decrement happens before this load (through mu_) and is seen.
    if (parked_.load() > 0 && polling_.load(std::memory_order_relaxed) == 0 && !items_.empty())
      wake.add();
  }

  // The owner's take of its slot, within the streak [SLOT-I3].
  bool take_own_slot(Carrier& me, T& out) {
    // relaxed: the owner filled the slot itself, so there is nothing to
    // acquire; the exchange alone decides against a thief or the rescuer [SLOT-I2].
    const T mine = me.slot_.exchange(T{}, std::memory_order_relaxed);
    if (!holds_item(mine)) return false;  // empty, or the rescuer's mark (now cleared)
    const unsigned streak = me.streak_.load();
    if (streak < slot_streak_) {
      me.streak_.store(streak + 1);
      out = mine;
      return true;
    }
    return streak_used_up(me, mine, out);
  }

  // [SLOT-I3] the streak is used up: `mine` goes behind the shared queue's
  // items, if any, else behind this carrier's local items, if any.
  [[gnu::noinline]] bool streak_used_up(Carrier& me, T mine, T& out) {
    Wake wake(*this);  // [READY-I5]
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    if (!items_.empty()) {
      items_.push_back(mine);
      take_locked(out, wake);
      me.streak_.store(0);
    } else if (me.local_.size_hint() > 0 && me.local_.push(mine)) {
      me.streak_.store(0);
      // false: thieves took every item, this one too; pop() looks further.
      return me.local_.pop(out);
    } else {
      out = mine;  // nothing waits behind the slot: a new streak begins
      me.streak_.store(1);
    }
    return true;
  }

  // [LOCAL-I3] Every shared_every-th pop of a carrier with slots looks at the
  // shared queue first: a carrier fed by its own posts (slot and local queue)
  // still takes items queued from outside. The slot's item, if any, goes
  // behind the local queue's items (it must be empty before the next run).
  bool shared_turn(Carrier& me, T& out) {
    // A countdown, not a modulo: no division on every pop.
    const unsigned ticks = me.ticks_.load() + 1;
    if (ticks < shared_every_) {
      me.ticks_.store(ticks);
      return false;
    }
    me.ticks_.store(0);
    // relaxed: a hint; a stale zero only skips this turn (the next pop that
    // finds nothing else takes the mutex and sees the item).
    if (size_.load(std::memory_order_relaxed) == 0) return false;
    return shared_first(me, out);
  }

  [[gnu::noinline]] bool shared_first(Carrier& me, T& out) {
    Wake wake(*this);  // [READY-I5]
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    if (items_.empty()) return false;
    // relaxed: the owner filled the slot itself [SLOT-I2].
    const T mine = me.slot_.exchange(T{}, std::memory_order_relaxed);
    const bool kept = !holds_item(mine) || me.local_.push(mine);
    if (!kept) items_.push_back(mine);  // the local queue is full: the shared one, behind
    me.streak_.store(0);
    return take_locked(out, wake);
  }

  // [READY-I3] While the pool stops: a batch from another carrier's local
  // queue, the oldest half, the first run now, the rest queued in order in
  // this carrier's own local queue (empty here: only its owner, this carrier,
  // adds to it).
  bool steal_local(unsigned c, T& out) {
    Carrier& me = carriers_[c];
    for (unsigned i = 1; i < carrier_count_; ++i) {
      Carrier& victim = carriers_[(c + i) % carrier_count_];
      T batch[kStealMax];  // NOLINT(modernize-avoid-c-arrays): a few pointers, filled below
      const std::size_t n = victim.local_.steal_half(batch, kStealMax);
      if (n == 0) continue;
      out = batch[0];
      for (std::size_t k = 1; k < n; ++k) me.local_.push(batch[k]);  // fits: kStealMax <= half
      return true;
    }
    return false;
  }

  // [SLOT-I1] What the rescuer leaves in a slot it emptied, until the owner's
  // next pop() clears it: the run's later posts then follow the rescued item
  // to the shared queue instead of overtaking it from the local queue. Never
  // run, never dereferenced: no item has this address (items are pointers to
  // aligned objects).
  static T rescued_mark() noexcept {
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast,performance-no-int-to-ptr): a sentinel, only compared
    return reinterpret_cast<T>(std::uintptr_t{1});
  }
  // cppcheck-suppress constParameter ; T is the item pointer type, compared only
  static bool holds_item(T v) noexcept { return v != T{} && v != rescued_mark(); }

  // [READY-I1] [READY-I2] A steal returns without pop()'s re-check under
  // mu_: a push that counted on this carrier as a poller (and woke nobody)
  // may be waiting in the shared queue. Under mu_, as take_locked() does,
  // hand it on to a parked carrier when nobody polls.
  void hand_on() {
    Wake wake(*this);  // [READY-I5]
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    hand_on_locked(wake);
  }

  // [SLOT-I2] another carrier's hand-off, left while this one polled in vain.
  bool steal(unsigned c, T& out) {
    for (unsigned i = 1; i < carrier_count_; ++i) {
      Carrier& victim = carriers_[(c + i) % carrier_count_];
      T item = victim.slot_.load(std::memory_order_relaxed);  // the CAS decides
      if (!holds_item(item)) continue;  // empty, or the rescuer's mark: left for its owner
      // acquire: pairs with the fill's seq_cst store in push_from.
      if (victim.slot_.compare_exchange_strong(item, T{}, std::memory_order_acquire,
                                               std::memory_order_relaxed)) {
        out = item;
        return true;
      }
    }
    return false;
  }

  bool stole(Carrier& me) {
    hand_on();
    return took(me);
  }

  bool took(Carrier& me) {
    // relaxed: the rescuer's hint that c popped since its last look; only c writes.
    me.runs_.store(me.runs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }

  // seq_cst loads: [SLOT-I4]'s and [LOCAL-I4]'s re-check, after the
  // announcement.
  bool any_rescuable() const {
    for (unsigned i = 0; i < carrier_count_; ++i) {
      if (holds_item(carriers_[i].slot_.load(std::memory_order_seq_cst))) return true;
      if (carriers_[i].local_.size() > 0) return true;
    }
    return false;
  }

  void wake_rescuer() {
    {
      BasicLockGuard<typename Sync::mutex> lock(rescue_mu_);
      rescuer_parked_.store(false, std::memory_order_relaxed);  // under rescue_mu_
    }
    // [READY-I5] after the unlock, so the rescuer does not wake into a held
    // rescue_mu_. Safe for the condition variable's life: only carriers call
    // this (push_from), and the pool joins them before it closes the rescuer.
    rescue_cv_.notify_one();
  }

  // Polls size_ for up to spin_limit_ rounds; counted in polling_ meanwhile.
  // Returns at once when max_pollers_ carriers poll already ([READY-I4]).
  // Returns true when it saw the shared queue filled (local queues are looked
  // at after it, [LOCAL-I2]).
  bool poll() {
    if (spin_limit_ == 0) return false;
    // relaxed: see push(); the increment only suppresses wake-ups while this
    // carrier polls, and the decrement below is sequenced before the re-check.
    // [READY-I4] take a slot only while one is free: a carrier refused one
    // never counted, so its park is seen by every push ([READY-I1]).
    unsigned pollers = polling_.load(std::memory_order_relaxed);
    do {
      if (pollers >= max_pollers_) return false;
    } while (!polling_.compare_exchange_strong(pollers, pollers + 1, std::memory_order_relaxed,
                                               std::memory_order_relaxed));
    bool saw = false;
    for (unsigned i = 0; i < spin_limit_ && !saw; ++i) {
      saw = size_.load(std::memory_order_relaxed) > 0;  // hint: re-checked under mu_
      if (!saw) Sync::pause();
    }
    // Before the re-check under mu_ [READY-I1] (relaxed: that mutex orders it
    // against every push that reads polling_).
    polling_.fetch_sub(1, std::memory_order_relaxed);
    return saw;
  }

  const unsigned spin_limit_;
  const unsigned max_pollers_;  // [READY-I4] at least 1
  const unsigned carrier_count_;
  const bool hand_off_;
  const unsigned slot_streak_;  // [SLOT-I3] at least 1
  const unsigned shared_every_;  // [LOCAL-I3] at least 1
  // NOLINTNEXTLINE(modernize-avoid-c-arrays): carriers hold atomics (not movable), counted at construction
  const std::unique_ptr<Carrier[]> carriers_;
  mutable typename Sync::mutex mu_;
  typename Sync::condition_variable cv_;
  std::deque<T> items_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<std::size_t> parked_ TURNSTILE_GUARDED_BY(mu_);  // parking or parked
  typename Sync::template var<bool> stopping_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template atomic<unsigned> polling_{0};  // carriers inside poll()
  typename Sync::template atomic<std::size_t> size_{0};  // items_.size(), a hint
  BasicWakeCount<Sync> wakes_;  // [READY-I5] wake-ups between mu_'s unlock and their notify
  // The rescuer's park [SLOT-I4].
  typename Sync::mutex rescue_mu_;
  typename Sync::condition_variable rescue_cv_;
  typename Sync::template atomic<bool> rescuer_parked_{false};  // written under rescue_mu_
  typename Sync::template var<bool> rescue_closed_ TURNSTILE_GUARDED_BY(rescue_mu_);
};

}  // namespace turnstile::detail
