// turnstile/detail/deferred_wake.hpp: wake-ups decided under a mutex and made
// after its unlock, counted so that the object owning the condition variable
// is not destroyed under a waker. One piece behind the ready queue's wake-ups
// ([READY-I5], ready_queue.hpp) and sync_wait's loop inbox's ([INBOX-I2],
// loop_inbox.hpp); the models of both check it through their owner
// (model/ready_queue_model.cpp, suite destroy-after-wake; model/loop_inbox_model.cpp,
// suite last-finish), each holding a waker's notify open until the owner is
// deleted.
//
// Why after the unlock: a thread woken while its waker still holds the mutex
// blocks on that mutex at once. On a busy machine Linux places the woken thread
// on its waker's core, where it preempts the waker first: one wake-up then
// costs four context switches instead of one or two (impl/bench/README.md,
// "Wake-ups after the unlock").
//
// Why counted: once the mutex is released, the thread that was woken (or any
// other) may see what the critical section wrote, finish, and let the owner
// destroy the condition variable while the waker has not yet made its
// notify_one(). So, for [READY-I5] and [INBOX-I2] alike:
//   - a wake-up is counted under the owner's mutex, in the critical
//     section that decided it (BasicDeferredWake::add), before anything it
//     wrote can be seen;
//   - it is uncounted after its notify, as the waker's last touch of
//     the owner (release);
//   - the owner's destructor returns only once the count is zero
//     (BasicWakeCount::wait_until_made, acquire), yielding the core meanwhile:
//     a waker preempted inside its notify, on a busy machine by the very thread
//     it woke, gets it back.
//
// Use: declare the BasicDeferredWake before the lock guard, so that its
// destructor runs after the unlock:
//
//   BasicDeferredWake<Sync> wake(cv_, wakes_);
//   BasicLockGuard<typename Sync::mutex> lock(mu_);
//   ... if (someone_sleeps) wake.add();
//
// Preconditions: add() only under the owner's mutex, and the thread that
// called it does not wait on the owner's condition variable before its
// BasicDeferredWake is destroyed (its notify would then wait with it).
// wait_until_made() only once no critical section that may call add() can
// start: the owner is being destroyed by the thread that saw its last work end.
//
// Sync provides atomic<unsigned> (load, fetch_add, fetch_sub with memory
// orders), condition_variable::notify_one() and yield() (turnstile/sync.hpp:
// StdSync; model/relacy_sync.hpp: RelacySync).
//
// Thread safety: a BasicDeferredWake belongs to one thread (one critical
// section); BasicWakeCount is shared by every waker and the owner.
#pragma once

#include <atomic>

#include "turnstile/sync.hpp"

namespace turnstile::detail {

template <class Sync>
class BasicDeferredWake;

// The wakers of one owner (critical sections that decided one wake-up or more)
// still between its mutex's unlock and their last notify.
template <class Sync>
class BasicWakeCount {
 public:
  BasicWakeCount() = default;
  BasicWakeCount(const BasicWakeCount&) = delete;
  BasicWakeCount& operator=(const BasicWakeCount&) = delete;

  // For the owner's destructor: returns once every waker counted has made its
  // wake-ups; after it no waker touches the owner again.
  void wait_until_made() noexcept {
    // acquire: pairs with the release decrement that ends a wake-up
    // (~BasicDeferredWake).
    while (in_flight_.load(std::memory_order_acquire) != 0) Sync::yield();
  }

 private:
  friend class BasicDeferredWake<Sync>;
  typename Sync::template atomic<unsigned> in_flight_{0};
};

// The wake-ups one critical section decided: add() under the mutex, one
// notify_one() each from the destructor, after the unlock.
template <class Sync>
class BasicDeferredWake {
 public:
  BasicDeferredWake(typename Sync::condition_variable& cv, BasicWakeCount<Sync>& count) noexcept
      : cv_(cv), count_(count) {}
  BasicDeferredWake(const BasicDeferredWake&) = delete;
  BasicDeferredWake& operator=(const BasicDeferredWake&) = delete;

  // Under the owner's mutex: one more notify_one() once it is released.
  void add() noexcept {
    // relaxed: counted under the mutex, which whoever ends the
    // owner's use takes before it can see what this critical section wrote;
    // the destructor's acquire load then reads this increment or the
    // decrement below.
    if (due_++ == 0) count_.in_flight_.fetch_add(1, std::memory_order_relaxed);
  }

  ~BasicDeferredWake() {
    if (due_ == 0) return;
    for (unsigned i = 0; i < due_; ++i) cv_.notify_one();
    // release: pairs with wait_until_made()'s acquire load; the
    // last touch of the owner by this thread.
    count_.in_flight_.fetch_sub(1, std::memory_order_release);
  }

 private:
  typename Sync::condition_variable& cv_;
  BasicWakeCount<Sync>& count_;
  unsigned due_ = 0;
};

}  // namespace turnstile::detail
