// turnstile/detail/local_queue.hpp: one carrier's local run queue (issue 28).
// A bounded FIFO ring the carrier fills with what its running item posts
// (after the hand-off slot's one item) and takes from its front. Nobody else
// takes from it while the pool runs: the pool's rescuer moves it whole to the
// shared queue once items in it have waited a rescue interval
// (rescue_to()), and an idle carrier of a stopping pool steals the oldest
// half (steal_half()).
//
// Why: with one shared queue, every post a run makes and every take by the
// other carrier meet on one mutex and one cache line (perf of
// BM_Base_LaneRunMany/carriers:2: about a fifth of the time in that mutex,
// two carriers four times slower than one). Here the owner's push and pop
// take a lock nobody else holds while it is busy. And work that its owner
// takes within a rescue interval stays with it: a thief stealing at once
// moved each fresh item, and the objects it touches, across cores
// (BM_CafTs_CreateCall/threads:2, impl/bench/README.md).
//
// Guarantees
//  - [LOCAL-I1] FIFO, batches included. push() appends; pop(), steal_half(),
//    drain_to() and rescue_to() take from the front, oldest first. So items
//    pushed by the owner are taken out of this queue in push order, whoever
//    takes them; a thief or the rescuer that takes a batch holds its items in
//    that order.
//  - [LOCAL-I2] Each item is taken once: every take removes what it returns
//    under the queue's mutex.
//  - [LOCAL-I5] A rescue seals the owner's run: once rescue_to() moved the
//    queue's items, push_run() refuses every later push of the run that was
//    under way (a run's first push_run(), with first_of_run, reopens the
//    queue), so the run's later posts follow the rescued ones to the shared
//    queue instead of overtaking them from here.
//  - size() is published with a seq_cst store under the mutex at every change,
//    so a reader outside the mutex that loads it seq_cst sees a push that is
//    before its load in the seq_cst order (the ready queue's [LOCAL-I4]
//    rescuer wake-up pairs on this).
//
// Ordering: a push and the take that returns the item synchronise through
// the mutex: what the pusher wrote before the push happens before what the
// taker does with the item (the model checks this with a Sync::var payload).
//
// Thread safety: push(), push_run(), pop() and drain_to() only from the
// owning carrier; steal_half(), rescue_to() and the hints from any thread.
// Nothing runs inside a call. Template over Sync (turnstile/sync.hpp);
// model/ready_queue_model.cpp checks it inside BasicReadyQueue with Relacy
// (RelacySync), capacity 4.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/sync.hpp"

namespace turnstile::detail {

template <class Sync, class T, std::size_t Capacity>
class BasicLocalQueue {
  static_assert(Capacity >= 2, "a batch steal leaves the owner at least one slot of room");
  static_assert(std::is_trivially_copyable_v<T>, "items are handles (pointers)");

 public:
  static constexpr std::size_t kCapacity = Capacity;

  BasicLocalQueue() = default;
  BasicLocalQueue(const BasicLocalQueue&) = delete;
  BasicLocalQueue& operator=(const BasicLocalQueue&) = delete;

  // Owner, between runs. Appends `item`; false when the queue is full
  // (nothing changed). A seal is neither checked nor lifted.
  bool push(T item) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    return append(nullptr, item);
  }

  // Owner, a running item's post. Appends `first` (when not null) and then
  // `item`; false when they do not both fit or, unless first_of_run (the
  // run's first push here), when a rescue sealed the queue ([LOCAL-I5]):
  // nothing changed then. One lock for a hand-off's two posts.
  bool push_run(T first, T item, bool first_of_run) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    if (first_of_run) {
      sealed_.store(false);  // [LOCAL-I5] a new run: what was rescued is behind it
    } else if (sealed_.load()) {
      return false;  // [LOCAL-I5] the run's earlier posts left for the shared queue
    }
    return append(first, item);
  }

  // Owner. The oldest item into `out`; false when empty.
  bool pop(T& out) {
    if (size_.load(std::memory_order_relaxed) == 0) return false;  // owner: only it adds
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    return take_front(1, [&out](T item) { out = item; }) == 1;  // 0: taken by a rescue or a thief
  }

  // Any thread, while the pool stops. Moves the oldest ceil(n/2) items (at
  // most `max`) into out[0..], oldest first ([LOCAL-I1]); returns how many.
  std::size_t steal_half(T* out, std::size_t max) {
    if (size_.load(std::memory_order_relaxed) == 0) return 0;  // hint: decided below
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    std::size_t take = (count_.load() + 1) / 2;
    if (take > max) take = max;
    return take_front(take, [&out](T item) { *out++ = item; });
  }

  // Owner, when a post does not fit: appends every item to `out` (push_back),
  // oldest first, with the queue's mutex held (so no thief sees a half-moved
  // queue), and leaves the queue empty.
  template <class Container>
  void drain_to(Container& out) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    take_front(count_.load(), [&out](T item) { out.push_back(item); });
  }

  // The rescuer. When some item pushed before `mark` (a pushed() reading from
  // an earlier look) is still here, moves every item to `out` (push_back,
  // oldest first) and seals the owner's run ([LOCAL-I5]); returns how many.
  template <class Container>
  std::size_t rescue_to(Container& out, std::size_t mark) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    // relaxed: written under mu_, held here, so exact.
    // Every item pushed before `mark` taken since: its owner keeps up.
    if (taken_.load(std::memory_order_relaxed) >= mark) return 0;
    const std::size_t n = take_front(count_.load(), [&out](T item) { out.push_back(item); });
    if (n > 0) sealed_.store(true);
    return n;
  }

  // Items queued now. seq_cst: the rescuer's park re-check reads it against
  // a push's publish ([LOCAL-I4] in the ready queue).
  std::size_t size() const { return size_.load(std::memory_order_seq_cst); }
  // The same, as a hint (a skipped lock, the rescuer's look).
  std::size_t size_hint() const { return size_.load(std::memory_order_relaxed); }
  // Items ever pushed, and ever taken (hints: the rescuer's "waited since my
  // last look", decided again under the mutex by rescue_to()).
  std::size_t pushed() const { return pushed_.load(std::memory_order_relaxed); }
  std::size_t taken() const { return taken_.load(std::memory_order_relaxed); }

 private:
  bool append(T first, T item) TURNSTILE_REQUIRES(mu_) {
    std::size_t n = count_.load();
    const bool two = first != nullptr;  // items are pointers (BasicReadyQueue)
    if (Capacity - n < (two ? 2U : 1U)) return false;
    const std::size_t head = head_.load();
    if (two) ring_[(head + n++) % Capacity].store(first);
    ring_[(head + n++) % Capacity].store(item);
    // relaxed: a hint for the rescuer; written under mu_ only.
    pushed_.store(pushed_.load(std::memory_order_relaxed) + (two ? 2U : 1U),
                  std::memory_order_relaxed);
    publish(n);
    return true;
  }

  // The one take of pop(), steal_half(), drain_to() and rescue_to(): removes the oldest
  // min(n, size) items, oldest first ([LOCAL-I1]), handing each to `sink`,
  // and publishes the new size; returns how many. Nothing is published when
  // nothing is taken.
  template <class Sink>
  std::size_t take_front(std::size_t n, Sink sink) TURNSTILE_REQUIRES(mu_) {
    const std::size_t count = count_.load();
    if (n > count) n = count;
    if (n == 0) return 0;
    std::size_t head = head_.load();
    for (std::size_t i = 0; i < n; ++i) {
      sink(ring_[head].load());
      head = (head + 1) % Capacity;
    }
    head_.store(head);
    // relaxed: a hint for the rescuer; written under mu_ only.
    taken_.store(taken_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    publish(count - n);  // [LOCAL-I2] removed under the mutex
    return n;
  }

  void publish(std::size_t n) TURNSTILE_REQUIRES(mu_) {
    count_.store(n);
    // seq_cst: the store half of [LOCAL-I4]'s pair (a push, then the pusher's
    // load of the rescuer's announcement; the announcement, then the
    // rescuer's load of this).
    size_.store(n, std::memory_order_seq_cst);
  }

  mutable typename Sync::mutex mu_;
  // Each slot a Sync::var: the model checks every slot access for a race (a
  // take outside the mutex, a push over a slot a thief still reads).
  std::array<typename Sync::template var<T>, Capacity> ring_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<std::size_t> head_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<std::size_t> count_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<bool> sealed_ TURNSTILE_GUARDED_BY(mu_);  // [LOCAL-I5]
  typename Sync::template atomic<std::size_t> size_{0};  // count_, readable outside mu_
  typename Sync::template atomic<std::size_t> pushed_{0};  // written under mu_; a hint outside
  typename Sync::template atomic<std::size_t> taken_{0};   // written under mu_; a hint outside
};

}  // namespace turnstile::detail
