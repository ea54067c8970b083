// turnstile/timer.hpp: time in the runtime: sleep_for, sleep_until, and the
// cancellable timers of Scheduler::call_at.
//
//   co_await sleep_for(200ms);                        // this fiber, later
//   TimerHandle h = s.call_after(5s, [] { warn(); }); // a callback, later
//   if (h.cancel()) { /* warn() never runs */ }
//
// Clocks ([RT-8.1]): every scheduler has one, Scheduler::now(). ThreadPool (and
// the default): std::chrono::steady_clock. ManualScheduler: a virtual clock that
// starts at Clock::time_point{} and moves only in advance(d), so a test of time
// never sleeps. Strand: its underlying scheduler's. A deadline is a time_point
// on the clock of the scheduler the timer is armed on; sleep_for(d) is
// sleep_until(now() + d) on the sleeping fiber's scheduler.
//
// Guarantees
//   - Nothing fires early: a timer fires once its scheduler's now() has reached
//     its deadline (a ManualScheduler: in the advance() that reaches it). On a
//     ThreadPool it fires as soon as the timer thread sees it due; latency is
//     not bounded ([RT-8.2]).
//   - Firing posts, never runs inline ([RT-2.1], [RT-8.2]): a due sleep posts the
//     fiber's resumption to the scheduler the fiber runs on (a turn's Strand,
//     say); a due call_at posts its callback to the scheduler call_at was called
//     on. Neither runs inside call_at, sleep_*, advance() or the timer thread.
//   - One queue per scheduler ([RT-8.2]): a ThreadPool keeps one queue by
//     deadline, served by one timer thread, for every timer armed on it or on a
//     Strand over it; never a thread per timer. The first timer armed on the
//     pool starts that thread (a call_at or sleep that starts it may throw
//     std::system_error, with nothing armed).
//   - Order ([RT-8.3]): ManualScheduler::advance posts what became due in
//     deadline order, ties in arming order. On a ThreadPool the timer thread
//     posts in the same order; items then run as the pool's queue runs them.
//   - Cancellation ([RT-8.4]): TimerHandle::cancel() returns true when the
//     callback has not started and never will; false when it has started (it
//     may still be running on another thread: cancel does not wait for it) or
//     the handle is empty. A timer already due but whose posted item has not run
//     yet can still be cancelled: the item then does nothing. Sleeps are not
//     cancellable.
//   - Destruction ([RT-8.5]): destroying a ThreadPool, ManualScheduler or
//     sync_wait loop drops its armed timers: a call_at callback is destroyed
//     without running (cancel() then returns true); a fiber sleeping on one is
//     never resumed and its frame is leaked, not freed behind its owner's back,
//     as with a ManualScheduler's queued items. Neither crashes nor leaks the
//     queue. Timers already due were posted and run as posted items do.
//
// Where a continuation resumes: after a sleep, the fiber resumes in a step
// posted to its own scheduler, on whichever thread runs that scheduler's items
// (a carrier; a ManualScheduler's driver inside run_next). A call_at callback
// runs likewise as an item of its scheduler, inside a framework context.
//
// Thread safety: call_at, call_after, now() and TimerHandle from any thread;
// sleep_for / sleep_until only from a fiber: a sleep outside one throws
// FrameworkContextError ([RT-4.4]). Memory order: see TimerEntry::state
// (timer_handle.hpp); every other timer field is guarded by its queue's mutex,
// and a posted item is published to its runner by the target's queue.
#pragma once

#include <chrono>
#include <coroutine>
#include <functional>
#include <memory>

#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/timer_handle.hpp"

namespace turnstile {

namespace detail {
// A sleep's timer: its item is the sleeping fiber's resumption. It keeps itself
// alive (self) until the fiber resumes, so the awaiter can stay trivially
// destructible (GCC 12 and co_await operands, see README).
struct SleepEntry final : TimerEntry {
  Runnable& make_due(std::shared_ptr<TimerEntry>) noexcept override { return resume; }
  FiberResume resume;
  std::shared_ptr<TimerEntry> self;  // dropped by the awaiter once resumed
};

// A timer its one owner arms again and again (an activation's slow-turn
// watchdog, detail/slow_turn_watch.hpp): at most one arming at a time, each on
// the fire/cancel protocol of every timer (TimerEntry::try_fire / cancel).
// When an arming is due, `on_fire` runs as an item of `target` ([RT-8.2]),
// unless disarm() won. The entry is reused after a disarm that took it out of
// its queue; a fresh one replaces it otherwise.
// Thread safety: arm() and disarm() are serialised by the owner (its lock);
// on_fire runs on `target`, concurrently with them.
class RearmableTimer {
 public:
  RearmableTimer(Scheduler& target, std::function<void()> on_fire);
  RearmableTimer(const RearmableTimer&) = delete;
  RearmableTimer& operator=(const RearmableTimer&) = delete;
  // Precondition: not armed, or the last disarm() returned true, or on_fire
  // has returned.
  ~RearmableTimer();
  // Arms it for `deadline` on the target's clock. Precondition: not armed.
  void arm(Scheduler::Clock::time_point deadline);
  // Cancels the arming [RT-8.4]. True: on_fire never runs for it. False:
  // on_fire has started (it may be running on another thread); the owner
  // waits for it to return before it frees what on_fire touches.
  bool disarm() noexcept;

 private:
  class Entry;
  Scheduler& target_;
  const std::function<void()> on_fire_;
  std::shared_ptr<Entry> entry_;
  bool reusable_ = false;  // entry_ was taken out of its queue unfired
};

class SleepAwaiter {
 public:
  SleepAwaiter(Scheduler::Clock::time_point until, Scheduler::Clock::duration delay,
               bool relative) noexcept
      : until_(until), delay_(delay), relative_(relative) {}
  bool await_ready() const noexcept { return false; }  // always through the timer [RT-8.2]
  // Arms the fiber's resumption on its scheduler's timer. Throws
  // FrameworkContextError outside a fiber [RT-4.4].
  void await_suspend(std::coroutine_handle<> h);
  void await_resume() noexcept;

 private:
  Scheduler::Clock::time_point until_;
  Scheduler::Clock::duration delay_;
  bool relative_;
  SleepEntry* entry_ = nullptr;  // owned by entry_->self while it sleeps
};
}  // namespace detail

// co_await sleep_for(d): suspends the fiber until its scheduler's now() has
// moved d past the moment it suspended; resumes on its own scheduler. [RT-8.2]
[[nodiscard]] inline detail::SleepAwaiter sleep_for(Scheduler::Clock::duration d) noexcept {
  return detail::SleepAwaiter({}, d, true);
}
// co_await sleep_until(tp): suspends the fiber until its scheduler's now() has
// reached tp (a deadline already passed is due at once, still posted). [RT-8.2]
[[nodiscard]] inline detail::SleepAwaiter sleep_until(Scheduler::Clock::time_point tp) noexcept {
  return detail::SleepAwaiter(tp, {}, false);
}

}  // namespace turnstile
