// turnstile/detail/local_queue.hpp: one carrier's local run queue (issue 28).
// A bounded FIFO ring the carrier fills with what its running item posts
// (after the hand-off slot's one item), takes from its front, and that an idle
// carrier steals from in batches: the oldest half at once.
//
// Why: with one shared queue, every post a run makes and every take by the
// other carrier meet on one mutex and one cache line (perf of
// BM_Base_LaneRunMany/carriers:2: about a fifth of the time in that mutex,
// two carriers four times slower than one). Here the owner's push and pop
// take a lock nobody else holds while it is busy, and a thief pays for the
// cross-core transfer once per batch instead of once per item.
//
// Guarantees
//  - [LOCAL-I1] FIFO, batches included. push() appends; pop() and steal_half()
//    take from the front, and steal_half() takes the oldest items in order. So
//    items pushed by the owner are taken out of this queue in push order,
//    whoever takes them; a thief that takes a batch holds its items in that
//    order.
//  - [LOCAL-I2] Each item is taken once: pop(), steal_half() and drain_to()
//    remove what they return under the queue's mutex.
//  - size() is published with a seq_cst store under the mutex at every change,
//    so a reader outside the mutex that loads it seq_cst sees a push that is
//    before its load in the seq_cst order (the ready queue's [LOCAL-I4]
//    wake-up pairs on this).
//
// Ordering: push() and the take that returns the item synchronise through
// the mutex: what the pusher wrote before push() happens before what the
// taker does with the item (the model checks this with a Sync::var payload).
//
// Thread safety: push(), pop() and drain_to() only from the owning carrier;
// steal_half() and size() from any thread. Nothing runs inside a call.
// Template over Sync (turnstile/sync.hpp); model/ready_queue_model.cpp checks
// it inside BasicReadyQueue with Relacy (RelacySync), capacity 4.
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

  // Owner. Appends `item`; false when the queue is full (nothing changed).
  bool push(T item) { return push2(nullptr, item); }

  // Owner. Appends `first` (when not null) and then `item`; false when they do
  // not both fit (nothing changed). One lock for a hand-off's two posts.
  bool push2(T first, T item) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    std::size_t n = count_.load();
    const bool two = first != nullptr;  // items are pointers (BasicReadyQueue)
    if (Capacity - n < (two ? 2U : 1U)) return false;
    const std::size_t head = head_.load();
    if (two) ring_[(head + n++) % Capacity].store(first);
    ring_[(head + n++) % Capacity].store(item);
    publish(n);
    return true;
  }

  // Owner. The oldest item into `out`; false when empty.
  bool pop(T& out) {
    if (size_.load(std::memory_order_relaxed) == 0) return false;  // owner: only it adds
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    return take_front(1, [&out](T item) { out = item; }) == 1;  // 0: a thief took the rest
  }

  // Any thread. Moves the oldest ceil(n/2) items (at most `max`) into out[0..],
  // oldest first ([LOCAL-I1]); returns how many.
  std::size_t steal_half(T* out, std::size_t max) {
    // seq_cst (a plain load on x86): a thief that was woken for, or re-checked
    // under [LOCAL-I4], a push that this load follows in the seq_cst order
    // sees it here too; decided again below, under the mutex.
    if (size_.load(std::memory_order_seq_cst) == 0) return 0;
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

  // Items queued now. seq_cst: the ready queue's park re-check reads it
  // against a push's publish ([LOCAL-I4] there).
  std::size_t size() const { return size_.load(std::memory_order_seq_cst); }
  // The same, as a hint (a poll's look, a skipped lock).
  std::size_t size_hint() const { return size_.load(std::memory_order_relaxed); }

 private:
  // The one take of pop(), steal_half() and drain_to(): removes the oldest
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
    publish(count - n);  // [LOCAL-I2] removed under the mutex
    return n;
  }

  void publish(std::size_t n) TURNSTILE_REQUIRES(mu_) {
    count_.store(n);
    // seq_cst: the store half of [LOCAL-I4]'s pair (a push, then the pusher's
    // load of the parked count; a parker's increment, then its load of this).
    size_.store(n, std::memory_order_seq_cst);
  }

  mutable typename Sync::mutex mu_;
  // Each slot a Sync::var: the model checks every slot access for a race (a
  // take outside the mutex, a push over a slot a thief still reads).
  std::array<typename Sync::template var<T>, Capacity> ring_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<std::size_t> head_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<std::size_t> count_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template atomic<std::size_t> size_{0};  // count_, readable outside mu_
};

}  // namespace turnstile::detail
