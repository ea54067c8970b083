// turnstile/timer_handle.hpp: TimerHandle and the shared record of one armed
// timer. The contract (clocks, ordering, where callbacks run, cancellation,
// destruction) is in turnstile/timer.hpp; Scheduler::call_at returns a
// TimerHandle. This header exists so scheduler.hpp can name both without
// including fiber.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>

#include "turnstile/sync.hpp"

namespace turnstile {

class Runnable;
class Scheduler;

namespace detail {
template <class Sync>
class BasicTimerQueue;

// One armed timer: a deadline, and the item posted to `target` when it is due.
// Shared by the queue that holds it (until it is due, cancelled or dropped)
// and by whoever armed it (a TimerHandle, a sleeping fiber's awaiter). A
// template over Sync (turnstile/sync.hpp) so that model/timer_queue_model.cpp
// checks this very protocol; the product's is TimerEntry (StdSync), and its
// queue's code, try_fire() and cancel() are in detail/timer_core.hpp.
template <class Sync>
struct BasicTimerEntry {
  enum State : int {
    kArmed,      // in a queue (its heap or its run)
    kDue,        // taken from its queue and posted to `target`, not run yet
    kFired,      // its callback started (call_at) [RT-8.4]
    kCancelled,  // cancel() won: the callback never runs
    kDropped,    // its queue went away first (scheduler destroyed) [RT-8.5]
  };
  static constexpr std::size_t kNoSlot = std::numeric_limits<std::size_t>::max();

  BasicTimerEntry() = default;
  BasicTimerEntry(const BasicTimerEntry&) = delete;
  BasicTimerEntry& operator=(const BasicTimerEntry&) = delete;
  virtual ~BasicTimerEntry() = default;

  // Called once by the queue when the entry is due, just before it posts the
  // returned item to `target`. `self` is the queue's reference: an entry that
  // owns its item keeps it until the item has run; one whose item lives
  // elsewhere (a sleeping fiber's awaiter) drops it.
  virtual Runnable& make_due(std::shared_ptr<BasicTimerEntry> self) noexcept = 0;
  // Called once the entry can never fire (cancelled or dropped), by the one
  // thread that made it so, outside any queue lock: frees what firing needed
  // (a callback and its captures) without waiting for the last handle.
  virtual void discard() noexcept {}

  // The one fire/cancel protocol of every timer ([RT-8.4], [TIMER-I1],
  // detail/timer_core.hpp). The posted item's side: kDue -> kFired. False:
  // cancel() won, so the item does nothing (its owner may be gone: touch
  // nothing but this entry).
  bool try_fire() noexcept;
  // What cancel() found.
  enum class Cancel {
    removed,     // still armed: taken out of its queue, never due (discarded)
    posted,      // due, its item not run: that item will do nothing (discarded)
    earlier,     // cancelled before, or dropped with its queue [RT-8.5]
    fired,       // try_fire() won: the callback started, it may be running now
    never_armed  // in no queue and never due
  };
  // The owner's side, from any thread: the entry never fires after a result
  // other than `fired` (and `never_armed`, where it was not armed at all).
  Cancel cancel() noexcept;

  std::chrono::steady_clock::time_point deadline{};  // on the arming scheduler's clock [RT-8.1]
  Scheduler* target = nullptr;                       // where the item is posted [RT-8.2]
  // Set by the queue while it holds the entry: guarded by the queue's mutex.
  std::uint64_t seq = 0;                             // arming order: ties [RT-8.3]
  std::size_t slot = kNoSlot;                        // index in the queue's heap, or kInRun
  // In the queue's run (entries armed in deadline order, detail/timer_core.hpp):
  // the next entry, owned, and the previous one.
  static constexpr std::size_t kInRun = kNoSlot - 1;
  std::shared_ptr<BasicTimerEntry> run_next;
  BasicTimerEntry* run_prev = nullptr;
  std::weak_ptr<BasicTimerQueue<Sync>> queue;        // written by the queue's arm(), under its mutex
  const BasicTimerQueue<Sync>* armed_on = nullptr;   // the queue `queue` refers to (same writes)
  // Only kDue -> kFired (the posted item) races kDue -> kCancelled (cancel());
  // both are compare-exchanges with acq_rel on success and acquire on failure:
  // the loser reads the winner's state, nothing else rides on it. The other
  // transitions happen under the queue's mutex.
  typename Sync::template atomic<int> state{kArmed};
};

// The product's timer entry (every Scheduler's arm_timer takes one).
using TimerEntry = BasicTimerEntry<StdSync>;
extern template struct BasicTimerEntry<StdSync>;  // instantiated in timer_queue.cpp
// The product's timer queue (private: impl/src/timer_queue.hpp).
class TimerQueue;
}  // namespace detail

// A cancellable one-shot timer armed by Scheduler::call_at. Copyable: copies
// refer to the same timer. [RT-8.4]
class TimerHandle {
 public:
  TimerHandle() = default;  // empty: refers to no timer
  explicit TimerHandle(std::shared_ptr<detail::TimerEntry> entry) noexcept
      : entry_(std::move(entry)) {}

  // Returns true when the callback has not started and never will: cancelled
  // now or before, or dropped with its scheduler. Returns false when it has
  // started (it may still be running on another thread) or the handle is empty.
  // Safe against a concurrent fire and from any thread. [RT-8.4]
  bool cancel() noexcept;
  // True when the timer is armed or due and neither ran nor was cancelled.
  bool pending() const noexcept;
  explicit operator bool() const noexcept { return entry_ != nullptr; }

 private:
  std::shared_ptr<detail::TimerEntry> entry_;
};

}  // namespace turnstile
