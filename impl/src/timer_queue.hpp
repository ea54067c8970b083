// timer_queue.hpp (private): the timer queue behind every scheduler's timers,
// armed entries ordered by (deadline, arming order) [RT-8.3]. One per ThreadPool
// (served by its timer thread), per ManualScheduler (served by advance()), per
// sync_wait loop (served by the loop's deadline wait), and one process-wide
// (the default Scheduler::arm_timer). Implemented in timer_queue.cpp.
//
// Two stores, one order. An entry due no earlier than the last one the run
// holds joins the run, a list in (deadline, arming order) order: appended in
// O(1) and unlinked in O(1) when cancelled. Any other entry goes to a min-heap.
// The earliest entry is the earlier of the run's head and the heap's top, so
// take_due() hands out one merged order. Timers armed a fixed delay after
// "now" (every activation's watchdog: slow_turn after a turn starts) arrive
// in deadline order and all land in the run: a thousand activations cost no
// heap sifts to create and destroy, where a heap of a thousand paid about ten
// levels of cache misses per cancel (impl/bench/README.md, "The timer queue's
// run").
//
// Its serving thread, for a queue that has one of its own (a ThreadPool's:
// TimerQueue(Serving::kOwnThread)), is started by the first arm(), not by the
// constructor: a pool that never arms a timer has no timer thread, and the one
// that starts finds its first deadline already armed instead of sleeping on an
// empty queue and being woken by it (one voluntary context switch per pool; see
// impl/bench/README.md, "The timer thread starts at the first timer").
//
// Thread safety: every member is guarded by mu_ but the serving thread's
// (server_mu_); so are the fields of an entry the queue holds (slot, seq,
// run_next, run_prev).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/timer_handle.hpp"

namespace turnstile::detail {

using TimerEntryRef = std::shared_ptr<TimerEntry>;

class TimerQueue : public std::enable_shared_from_this<TimerQueue> {
 public:
  using Clock = std::chrono::steady_clock;  // Scheduler::Clock (checked in timer.cpp)

  // Who serves the queue: its owner (wait_due() or take_due() on a thread of
  // its own choosing), or a thread the queue starts at its first arm().
  enum class Serving { kByOwner, kOwnThread };

  explicit TimerQueue(Serving serving = Serving::kByOwner) noexcept : own_thread_(serving == Serving::kOwnThread) {}
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;
  ~TimerQueue();  // drops what is still armed [RT-8.5]

  // Adds `e` (owned by a shared_ptr; e->deadline and e->target set). Returns
  // false, with the entry dropped, once stop() was called. Wakes a waiter of
  // wait_due() when `e` is the new earliest deadline. A kOwnThread queue first
  // starts its serving thread if none was started yet and join_server() was not
  // called; if that start throws (std::system_error), arm() throws it with
  // nothing armed, and the next arm() tries again.
  bool arm(TimerEntryRef e);
  // Takes `e` out of the heap if it is still there: it is then cancelled and
  // never due. False when it is not armed here (due, dropped, or never armed).
  bool remove(TimerEntry& e);
  // Moves every entry due at `now` (deadline <= now) to `out`, earliest first,
  // ties in arming order, each marked due [RT-8.3].
  void take_due(Clock::time_point now, std::vector<TimerEntryRef>& out);
  // Blocks until an entry is due on Clock::now() and takes the due ones (true),
  // or until stop() (false). For the one thread that serves this queue.
  bool wait_due(std::vector<TimerEntryRef>& out);
  // Refuses later arms and wakes wait_due().
  void stop();
  // kOwnThread: after stop(), joins the serving thread if one was started, and
  // keeps any later arm() from starting one. Call it once, from the owner,
  // never from the serving thread.
  void join_server();
  // Drops every armed entry: never posted, callbacks destroyed unrun [RT-8.5].
  void drop_all();
  std::optional<Clock::time_point> next_deadline() const;
  std::size_t size() const;

  // Test seam ([RT-2.3]; impl/tests/windows/timer_wake_window_test.cpp). When
  // set, every arm() that wakes the serving thread calls it on the arming
  // thread, with this queue, in the window between releasing mu_ and making
  // that wake-up, so that a window test can hold the window open (block in
  // it) while the timer fires and the owner destroys the pool. An exception
  // it throws leaves arm() without the wake-up: a test that found the queue
  // gone must not let a wrong implementation touch it. Set it before the
  // arming threads start (their start orders the store before their loads).
  // Null outside those tests: one relaxed load on the wake path only.
  using WakeSeam = void (*)(TimerQueue& queue);
  static void set_wake_seam(WakeSeam seam) noexcept;

 private:
  static bool before(const TimerEntry& a, const TimerEntry& b) noexcept;
  // The earliest armed entry (the run's head or the heap's top), or null.
  TimerEntry* earliest() const TURNSTILE_REQUIRES(mu_);
  // Takes `e`, armed here, out of the run or the heap, and returns the
  // queue's reference to it.
  TimerEntryRef take_out(TimerEntry& e) TURNSTILE_REQUIRES(mu_);
  void append_run(TimerEntryRef e) TURNSTILE_REQUIRES(mu_);
  TimerEntryRef unlink_run(TimerEntry& e) TURNSTILE_REQUIRES(mu_);
  void place(std::size_t i, TimerEntryRef e) TURNSTILE_REQUIRES(mu_);
  void sift_up(std::size_t i) TURNSTILE_REQUIRES(mu_);
  void sift_down(std::size_t i) TURNSTILE_REQUIRES(mu_);
  TimerEntryRef pop_at(std::size_t i) TURNSTILE_REQUIRES(mu_);
  void take_due_locked(Clock::time_point now, std::vector<TimerEntryRef>& out) TURNSTILE_REQUIRES(mu_);
  void start_server() TURNSTILE_EXCLUDES(server_mu_);

  mutable Mutex mu_;
  std::condition_variable cv_;  // wait_due()'s wake-up
  std::vector<TimerEntryRef> heap_ TURNSTILE_GUARDED_BY(mu_);  // heap_[i]->slot == i
  // The run: head owned here, each entry owning the next (run_next); every
  // entry in it has slot == kInRun and is not before its predecessor.
  TimerEntryRef run_head_ TURNSTILE_GUARDED_BY(mu_);
  TimerEntry* run_tail_ TURNSTILE_GUARDED_BY(mu_) = nullptr;
  std::size_t run_size_ TURNSTILE_GUARDED_BY(mu_) = 0;
  std::uint64_t next_seq_ TURNSTILE_GUARDED_BY(mu_) = 0;
  bool stopped_ TURNSTILE_GUARDED_BY(mu_) = false;
  // What the serving thread's last sleep in wait_due() waits until (max: no
  // deadline); arm() wakes it only for an earlier one.
  Clock::time_point waiting_until_ TURNSTILE_GUARDED_BY(mu_) = Clock::time_point::max();
  static std::atomic<WakeSeam> wake_seam_;  // set_wake_seam(); null in production

  const bool own_thread_;  // Serving::kOwnThread
  // Set once the serving thread was started, or can no longer be (join_server):
  // arm()'s test before it takes server_mu_ (it guards no data of its own).
  std::atomic<bool> server_settled_{false};
  Mutex server_mu_;
  std::thread server_ TURNSTILE_GUARDED_BY(server_mu_);
  bool server_closed_ TURNSTILE_GUARDED_BY(server_mu_) = false;  // join_server() was called
};

// Posts each due entry's item to its target [RT-8.2]; call without any lock
// (timer.cpp, beside the entries' items).
void post_due(std::vector<TimerEntryRef>& due);

}  // namespace turnstile::detail
