// turnstile/detail/ready_queue.hpp: the ThreadPool's ready queue. One FIFO
// shared by every carrier; an idle carrier polls it for a bounded while before
// it parks (at most max_pollers carriers at once), and a post wakes a parked
// carrier only when nobody is polling.
//
// Why (issue 28, impl/bench/caf_bench.cpp): a carrier that parks as soon as the
// queue is empty turns every hand-off between two carriers (a caller's
// `co_await act.call`, the turn it starts, the resume it posts back) into a
// futex wake-up and a context switch: 176,560 switches against CAF's 8,710 for
// the same pipelined run. A carrier that has just run out of work is the one
// most likely to be handed the next item within microseconds; it waits for it
// awake, and the poster saves the wake-up.
//
// Guarantees
//  - [RT-2.2] FIFO: pop() takes the oldest item; items pushed by one thread are
//    taken in push order, by whichever carriers take them.
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
//  - [READY-I3] [RT-2.3] stop() wakes every carrier; pop() keeps returning the
//    items queued (and any pushed while draining) and returns false only when
//    stopped and empty.
//  - Polling is bounded (spin_limit rounds of Sync::pause(), about 20 us on a
//    current x86 core with the ThreadPool's limit), so an idle pool parks and
//    costs nothing: no carrier polls for ever.
//  - [READY-I4] At most max_pollers carriers poll at once. A carrier that finds
//    every polling slot taken parks at once: one poller already catches the
//    next item, and a second would only take a core from a thread with work
//    (on a busy machine, from another process). A refused carrier is never
//    counted as polling, so it is woken like any parked carrier ([READY-I1]).
//
// Ordering: push() and pop() synchronise through the mutex: what a pusher wrote
// before push() happens before what the carrier that pops the item does next
// (the model checks this with a Sync::var payload). The two counters read
// outside the mutex (polling_, size_) are hints only: every decision they feed
// is re-made under the mutex ([READY-I1]).
//
// Where a popped item runs: on the calling carrier, after pop() returns
// (ThreadPool::carrier_loop). Nothing runs inside push() or pop().
//
// Thread safety: every member may be called from any thread.
// Template over Sync (turnstile/sync.hpp): model/ready_queue_model.cpp checks
// this very code with Relacy (RelacySync). The product instantiates
// BasicReadyQueue<StdSync, Runnable*> (turnstile/scheduler.hpp).
#pragma once

#include <cstddef>
#include <deque>

#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/sync.hpp"

namespace turnstile::detail {

template <class Sync, class T>
class BasicReadyQueue {
 public:
  // spin_limit: the rounds of Sync::pause() an idle carrier polls before it
  // parks (0: park at once, the behaviour before issue 28). max_pollers: how
  // many carriers may poll at once ([READY-I4]; 0 is taken as 1).
  explicit BasicReadyQueue(unsigned spin_limit, unsigned max_pollers = kUnlimitedPollers)
      : spin_limit_(spin_limit), max_pollers_(max_pollers == 0 ? 1 : max_pollers) {}
  static constexpr unsigned kUnlimitedPollers = ~0u;
  BasicReadyQueue(const BasicReadyQueue&) = delete;
  BasicReadyQueue& operator=(const BasicReadyQueue&) = delete;

  // Appends `item` ([RT-2.2]) and wakes a parked carrier unless one polls.
  void push(T item) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    items_.push_back(item);
    // relaxed: a hint for pollers (they re-check under mu_); written under mu_ only.
    size_.store(items_.size(), std::memory_order_relaxed);
    // [READY-I1] relaxed is enough: a poller's decrement is sequenced before its
    // re-check under mu_, so when that re-check ran before this push, the
    // decrement happens before this load (through mu_) and is seen.
    if (parked_.load() > 0 && polling_.load(std::memory_order_relaxed) == 0) {
      // Under the mutex: once the item is seen, its owner may destroy the pool
      // (this condition variable with it) before an unlocked notify ran.
      cv_.notify_one();
    }
  }

  // Takes the oldest item into `out` and returns true, waiting for one if the
  // queue is empty; returns false once stop() was called and the queue is empty.
  bool pop(T& out) {
    for (;;) {
      {
        BasicLockGuard<typename Sync::mutex> lock(mu_);
        if (take_locked(out)) return true;
        if (stopping_.load()) return false;  // [READY-I3] stopped and drained
      }
      poll();
      mu_.lock();
      // [READY-I1] the re-check under the mutex, after this carrier stopped
      // counting as a poller (poll() decremented polling_ before returning).
      while (items_.empty() && !stopping_.load()) {
        parked_.store(parked_.load() + 1);
        cv_.wait(mu_);
        parked_.store(parked_.load() - 1);
      }
      const bool took = take_locked(out);
      mu_.unlock();
      if (took) return true;
      // stopping and empty: the next round returns false
    }
  }

  // [READY-I3] No carrier parks from now on; every parked one is woken.
  void stop() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    stopping_.store(true);
    cv_.notify_all();
  }

  // Items queued now (a snapshot).
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }
  // Carriers polling now (a snapshot, for tests and the model: [READY-I4]).
  unsigned polling() const { return polling_.load(std::memory_order_relaxed); }
  unsigned max_pollers() const { return max_pollers_; }

 private:
  bool take_locked(T& out) TURNSTILE_REQUIRES(mu_) {
    if (items_.empty()) return false;
    out = items_.front();  // [RT-2.2] the oldest
    items_.pop_front();
    size_.store(items_.size(), std::memory_order_relaxed);  // hint, as in push()
    // [READY-I2] work left that this carrier cannot take now: hand it on.
    if (!items_.empty() && parked_.load() > 0 &&
        polling_.load(std::memory_order_relaxed) == 0)
      cv_.notify_one();
    return true;
  }

  // Polls size_ for up to spin_limit_ rounds; counted in polling_ meanwhile.
  // Returns at once when max_pollers_ carriers poll already ([READY-I4]).
  void poll() {
    if (spin_limit_ == 0) return;
    // relaxed: see push(); the increment only suppresses wake-ups while this
    // carrier polls, and the decrement below is sequenced before the re-check.
    // [READY-I4] take a slot only while one is free: a carrier refused one
    // never counted, so its park is seen by every push ([READY-I1]).
    unsigned pollers = polling_.load(std::memory_order_relaxed);
    do {
      if (pollers >= max_pollers_) return;
    } while (!polling_.compare_exchange_strong(pollers, pollers + 1, std::memory_order_relaxed,
                                               std::memory_order_relaxed));
    for (unsigned i = 0; i < spin_limit_; ++i) {
      if (size_.load(std::memory_order_relaxed) > 0) break;  // hint: re-checked under mu_
      Sync::pause();
    }
    polling_.fetch_sub(1, std::memory_order_relaxed);  // before the re-check [READY-I1]
  }

  const unsigned spin_limit_;
  const unsigned max_pollers_;  // [READY-I4] at least 1
  mutable typename Sync::mutex mu_;
  typename Sync::condition_variable cv_;
  std::deque<T> items_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<std::size_t> parked_ TURNSTILE_GUARDED_BY(mu_);  // carriers in cv_.wait
  typename Sync::template var<bool> stopping_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template atomic<unsigned> polling_{0};  // carriers inside poll()
  typename Sync::template atomic<std::size_t> size_{0};  // items_.size(), a hint
};

}  // namespace turnstile::detail
