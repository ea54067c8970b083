// turnstile/detail/loop_inbox.hpp: the inbox of an event loop run by one
// thread: sync_wait(task)'s private loop (impl/src/sync_wait.cpp) [RT-6.1].
//
// Items are posted from any thread (a ThreadPool carrier completing what a
// fiber of the loop waits for, a timer firing) and taken by the loop's thread
// in post order. The inbox also counts the loop's live fibers (started on it
// and not finished: the loop ends once none is left and no item is queued) and
// takes pokes (a timer armed on the loop: it re-reads its next deadline).
//
// Where a continuation resumes: nothing runs inside the inbox. take() returns
// the item to the loop's thread, which runs it.
//
// Invariants (model/loop_inbox_model.cpp checks each; mutants in
// checks/mutants/runtime/):
//  - [INBOX-I1] No lost wake-up. take() sleeps only after it has found, under
//    mu_, no item, a live fiber and no poke, and has marked itself waiting in
//    the same critical section; a post, the last fiber's finish or a poke,
//    each made under mu_, sees the mark and wakes it (the first one clears the
//    mark: one wake-up per sleep).
//  - [INBOX-I2] A wake-up is made outside the mutex, so the loop's thread does
//    not wake into a mutex its waker still holds (on a busy machine it is woken
//    on the waker's core, preempts the waker there and blocks at once: two more
//    switches a wake-up, as the ready queue's [READY-I5] and the timer queue's
//    wake-up found). The inbox is not destroyed under a waker: a wake-up is
//    counted under mu_ and uncounted after its notify, and the destructor waits
//    for the count to reach zero. A carrier may still be in its notify when the
//    item it posted has run the loop's last fiber to its end and sync_wait has
//    returned. (Both halves are detail/deferred_wake.hpp, shared with the
//    ready queue.)
//  - [INBOX-I3] Items are taken in post order (per poster, and in mu_'s order
//    across posters), each exactly once.
//
// Thread safety: post(), fiber_started(), fiber_finished() and poke() from any
// thread; take() from the loop's thread only. Destroy it on the loop's thread,
// after take() returned `done` (no thread posts to a loop it knows has ended).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>

#include "turnstile/detail/deferred_wake.hpp"
#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/sync.hpp"

namespace turnstile::detail {

template <class Sync, class T>
class BasicLoopInbox {
 public:
  using Clock = std::chrono::steady_clock;

  // What take() found.
  enum class Taken {
    item,   // the oldest item, now the caller's
    done,   // no item queued and no live fiber: the loop ends
    poked,  // a poke, or the deadline passed: the loop re-reads its timers
  };

  BasicLoopInbox() = default;
  BasicLoopInbox(const BasicLoopInbox&) = delete;
  BasicLoopInbox& operator=(const BasicLoopInbox&) = delete;
  // [INBOX-I2] Waits until every wake-up decided under mu_ has been made.
  ~BasicLoopInbox() { wakes_.wait_until_made(); }

  // Appends `item` [INBOX-I3] and wakes the loop's thread if it waits.
  void post(T item) {
    Wake wake(*this);  // [INBOX-I2] made once the lock below is released
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    items_.push_back(item);
    decide(wake);  // [INBOX-I1]
  }

  void fiber_started() noexcept {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    live_.store(live_.load() + 1);
  }

  // The last fiber's finish wakes the loop's thread: it ends [RT-6.1].
  void fiber_finished() noexcept {
    Wake wake(*this);  // [INBOX-I2]
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    const std::size_t left = live_.load() - 1;
    live_.store(left);
    if (left == 0) decide(wake);  // [INBOX-I1] only zero ends the wait
  }

  // The loop re-reads its timers at its next take().
  void poke() noexcept {
    Wake wake(*this);  // [INBOX-I2]
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    poked_.store(true);
    decide(wake);  // [INBOX-I1]
  }

  // The loop's thread: the oldest item (into `out`), else `done` when no fiber
  // is live, else `poked` once poked or `deadline` (if any) has passed, in
  // that order, looked at under mu_ whatever woke it; waits for one of those.
  // A poke is consumed by any take that returns.
  Taken take(T& out, const std::optional<Clock::time_point>& deadline) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    bool expired = false;
    for (;;) {
      if (!items_.empty()) {
        out = items_.front();  // [INBOX-I3]
        items_.pop_front();
        poked_.store(false);  // the loop re-reads its timers before every take
        return Taken::item;
      }
      if (live_.load() == 0) return Taken::done;
      if (poked_.load() || expired) {
        poked_.store(false);
        return Taken::poked;
      }
      waiting_.store(true);  // [INBOX-I1] marked under mu_, with the checks above
      if (deadline) {
        expired = cv_.wait_until(mu_, *deadline);
      } else {
        cv_.wait(mu_);
      }
      waiting_.store(false);
    }
  }

 private:
  // [INBOX-I2] The wake-up a critical section on mu_ decided, made once that
  // critical section has ended (declare it before the lock guard).
  class Wake : public BasicDeferredWake<Sync> {
   public:
    explicit Wake(BasicLoopInbox& inbox) noexcept : BasicDeferredWake<Sync>(inbox.cv_, inbox.wakes_) {}
  };

  // [INBOX-I1] Wakes the loop's thread if it waits, once per sleep: the first
  // waker clears the mark.
  void decide(Wake& wake) TURNSTILE_REQUIRES(mu_) {
    if (!waiting_.load()) return;
    waiting_.store(false);
    wake.add();
  }

  typename Sync::mutex mu_;
  typename Sync::condition_variable cv_;
  std::deque<T> items_ TURNSTILE_GUARDED_BY(mu_);  // plain: every access under mu_
  typename Sync::template var<std::size_t> live_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<bool> poked_ TURNSTILE_GUARDED_BY(mu_);
  typename Sync::template var<bool> waiting_ TURNSTILE_GUARDED_BY(mu_);  // take() sleeps
  BasicWakeCount<Sync> wakes_;  // [INBOX-I2] wake-ups between mu_'s unlock and their notify
};

}  // namespace turnstile::detail
