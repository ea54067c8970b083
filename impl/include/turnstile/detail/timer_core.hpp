// turnstile/detail/timer_core.hpp: the timer queue behind every scheduler's
// timers, and the fire/cancel protocol of its entries, as templates over Sync
// (turnstile/sync.hpp). The product instantiates them with StdSync
// (TimerEntry in timer_handle.hpp; TimerQueue, impl/src/timer_queue.hpp, adds
// a ThreadPool's serving thread); model/timer_queue_model.cpp instantiates the
// very same code with RelacySync.
//
// One queue per ThreadPool (served by its timer thread), per ManualScheduler
// (served by advance()), per sync_wait loop (served by the loop's deadline
// wait), and one process-wide (the default Scheduler::arm_timer). Armed
// entries are ordered by (deadline, arming order) [RT-8.3].
//
// Two stores, one order. An entry due no earlier than the last one the run
// holds joins the run, a list in (deadline, arming order) order: appended in
// O(1) and unlinked in O(1) when cancelled. Any other entry goes to a min-heap.
// The earliest entry is the earlier of the run's head and the heap's top, so
// take_due() hands out one merged order. Timers armed a fixed delay after
// "now" (every activation's watchdog) arrive in deadline order and all land in
// the run (impl/bench/README.md, "The timer queue's run").
//
// Invariants (checked by model/timer_queue_model.cpp):
//  - [TIMER-I1] Exactly one of fire and cancel wins. An entry leaves the queue
//    once, by remove() (cancel: it never becomes due), take_due() (due: its
//    item is posted) or drop_all() (dropped), each under mu_; a due entry's
//    posted item and a cancel() then race on one compare-exchange from kDue.
//    Whoever loses does nothing more: discard() runs once, by the thread that
//    made the entry unable to fire, and never for an entry that fired.
//  - [TIMER-I2] No lost wake-up. The serving thread publishes how long it
//    sleeps (waiting_until_) and sleeps in one step under mu_; an arm that
//    makes an earlier deadline the earliest decides under mu_ to wake it.
//  - [TIMER-I3] The queue outlives a wake-up made after the unlock: a waker
//    holds its own reference to the queue from its decision to its notify
//    ([RT-2.3]), so the owner may destroy the queue meanwhile.
//
// Thread safety: every member is guarded by mu_; so are the fields of an entry
// the queue holds (slot, seq, run_next, run_prev, queue, armed_on). Where a
// continuation resumes: nowhere here; take_due()/wait_due() hand due entries
// to their caller, who posts them (post_due, timer.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/sync.hpp"
#include "turnstile/timer_handle.hpp"

namespace turnstile::detail {

template <class Sync>
using BasicTimerEntryRef = std::shared_ptr<BasicTimerEntry<Sync>>;

template <class Sync>
class BasicTimerQueue : public std::enable_shared_from_this<BasicTimerQueue<Sync>> {
 public:
  using Clock = std::chrono::steady_clock;  // Scheduler::Clock (checked in timer.cpp)
  using Entry = BasicTimerEntry<Sync>;
  using EntryRef = BasicTimerEntryRef<Sync>;

  BasicTimerQueue() = default;
  BasicTimerQueue(const BasicTimerQueue&) = delete;
  BasicTimerQueue& operator=(const BasicTimerQueue&) = delete;
  ~BasicTimerQueue() { drop_all(); }  // drops what is still armed [RT-8.5]

  // Adds `e` (owned by a shared_ptr; e->deadline and e->target set). Returns
  // false, with the entry dropped, once stop() was called. Wakes a waiter of
  // wait_due() when `e` is the new earliest deadline and it sleeps past it
  // ([TIMER-I2]); that wake-up is made after mu_ is released ([TIMER-I3]).
  bool arm(EntryRef e);
  // Takes `e` out of the queue if it is still there: it is then cancelled and
  // never due. False when it is not armed here (due, dropped, or never armed).
  bool remove(Entry& e);
  // Moves every entry due at `now` (deadline <= now) to `out`, earliest first,
  // ties in arming order, each marked due [RT-8.3].
  void take_due(Clock::time_point now, std::vector<EntryRef>& out);
  // Blocks until an entry is due on Clock::now() and takes the due ones (true),
  // or until stop() (false). For the one thread that serves this queue.
  bool wait_due(std::vector<EntryRef>& out);
  // Refuses later arms and wakes wait_due().
  void stop();
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
  // Null outside those tests: one relaxed load on the wake path only. (A
  // std::atomic in both builds: the model holds its window through Sync.)
  using WakeSeam = void (*)(BasicTimerQueue& queue);
  static void set_wake_seam(WakeSeam seam) noexcept {
    wake_seam_.store(seam, std::memory_order_relaxed);  // ordered by the arming threads' start
  }

 private:
  using Lock = BasicLockGuard<typename Sync::mutex>;

  static bool before(const Entry& a, const Entry& b) noexcept {
    // [RT-8.3] deadline order, ties in arming order
    return a.deadline != b.deadline ? a.deadline < b.deadline : a.seq < b.seq;
  }
  // The earliest armed entry (the run's head or the heap's top), or null.
  Entry* earliest() const TURNSTILE_REQUIRES(mu_);
  // Takes `e`, armed here, out of the run or the heap, and returns the
  // queue's reference to it.
  EntryRef take_out(Entry& e) TURNSTILE_REQUIRES(mu_) {
    return e.slot == Entry::kInRun ? unlink_run(e) : pop_at(e.slot);
  }
  void append_run(EntryRef e) TURNSTILE_REQUIRES(mu_);
  EntryRef unlink_run(Entry& e) TURNSTILE_REQUIRES(mu_);
  void place(std::size_t i, EntryRef e) TURNSTILE_REQUIRES(mu_) {
    e->slot = i;
    heap_[i] = std::move(e);
  }
  void sift_up(std::size_t i) TURNSTILE_REQUIRES(mu_);
  void sift_down(std::size_t i) TURNSTILE_REQUIRES(mu_);
  EntryRef pop_at(std::size_t i) TURNSTILE_REQUIRES(mu_);
  void take_due_locked(Clock::time_point now, std::vector<EntryRef>& out) TURNSTILE_REQUIRES(mu_);
  // Inserts `e` (not stopped); true when the serving thread is to be woken.
  bool insert(EntryRef e) TURNSTILE_REQUIRES(mu_);

  mutable typename Sync::mutex mu_;
  typename Sync::condition_variable cv_;  // wait_due()'s wake-up
  std::vector<EntryRef> heap_ TURNSTILE_GUARDED_BY(mu_);  // heap_[i]->slot == i
  // The run: head owned here, each entry owning the next (run_next); every
  // entry in it has slot == kInRun and is not before its predecessor.
  EntryRef run_head_ TURNSTILE_GUARDED_BY(mu_);
  Entry* run_tail_ TURNSTILE_GUARDED_BY(mu_) = nullptr;
  std::size_t run_size_ TURNSTILE_GUARDED_BY(mu_) = 0;
  std::uint64_t next_seq_ TURNSTILE_GUARDED_BY(mu_) = 0;
  typename Sync::template var<bool> stopped_ TURNSTILE_GUARDED_BY(mu_);
  // What the serving thread's last sleep in wait_due() waits until (max: no
  // deadline, also before its first sleep); arm() wakes it only for an
  // earlier one [TIMER-I2]. Ticks since the clock's epoch: a Sync::var the
  // model can print.
  typename Sync::template var<Clock::rep> waiting_until_ TURNSTILE_GUARDED_BY(mu_){
      Clock::time_point::max().time_since_epoch().count()};
  inline static std::atomic<WakeSeam> wake_seam_{nullptr};  // set_wake_seam(); null in production
};

// ------------------------------------------------ the fire/cancel protocol

template <class Sync>
bool BasicTimerEntry<Sync>::try_fire() noexcept {
  int expected = kDue;
  // acq_rel / acquire: pairs with the compare-exchange in cancel(); exactly
  // one of them leaves kDue [TIMER-I1].
  return state.compare_exchange_strong(expected, kFired, std::memory_order_acq_rel,
                                       std::memory_order_acquire);
}

template <class Sync>
typename BasicTimerEntry<Sync>::Cancel BasicTimerEntry<Sync>::cancel() noexcept {
  if (auto q = queue.lock(); q && q->remove(*this)) return Cancel::removed;  // never due [TIMER-I1]
  int s = kDue;
  // acq_rel / acquire: pairs with try_fire()'s compare-exchange [TIMER-I1].
  if (state.compare_exchange_strong(s, kCancelled, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
    discard();  // its posted item will not touch the callback
    return Cancel::posted;  // posted, not run: its item will do nothing [RT-8.4]
  }
  if (s == kCancelled || s == kDropped) return Cancel::earlier;
  return s == kFired ? Cancel::fired : Cancel::never_armed;
}

// ------------------------------------------------------------- the queue

template <class Sync>
auto BasicTimerQueue<Sync>::earliest() const -> Entry* {
  Entry* top = heap_.empty() ? nullptr : heap_.front().get();
  Entry* head = run_head_.get();
  if (top == nullptr) return head;
  if (head == nullptr) return top;
  return before(*head, *top) ? head : top;  // [RT-8.3] one order over both stores
}

template <class Sync>
void BasicTimerQueue<Sync>::sift_up(std::size_t i) {
  EntryRef e = std::move(heap_[i]);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!before(*e, *heap_[parent])) break;
    place(i, std::move(heap_[parent]));
    i = parent;
  }
  place(i, std::move(e));
}

template <class Sync>
void BasicTimerQueue<Sync>::sift_down(std::size_t i) {
  EntryRef e = std::move(heap_[i]);
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && before(*heap_[child + 1], *heap_[child])) ++child;
    if (!before(*heap_[child], *e)) break;
    place(i, std::move(heap_[child]));
    i = child;
  }
  place(i, std::move(e));
}

template <class Sync>
void BasicTimerQueue<Sync>::append_run(EntryRef e) {
  e->slot = Entry::kInRun;
  e->run_prev = run_tail_;
  Entry* added = e.get();
  if (run_tail_ != nullptr) run_tail_->run_next = std::move(e); else run_head_ = std::move(e);
  run_tail_ = added;
  ++run_size_;
}

template <class Sync>
auto BasicTimerQueue<Sync>::unlink_run(Entry& e) -> EntryRef {
  EntryRef next = std::move(e.run_next);
  Entry* const prev = e.run_prev;
  EntryRef& link = prev != nullptr ? prev->run_next : run_head_;  // the reference to `e`
  EntryRef out = std::move(link);
  link = std::move(next);
  if (link != nullptr) link->run_prev = prev; else run_tail_ = prev;
  e.run_prev = nullptr;
  e.slot = Entry::kNoSlot;
  --run_size_;
  return out;
}

template <class Sync>
auto BasicTimerQueue<Sync>::pop_at(std::size_t i) -> EntryRef {
  EntryRef out = std::move(heap_[i]);
  out->slot = Entry::kNoSlot;
  EntryRef last = std::move(heap_.back());
  heap_.pop_back();
  if (i < heap_.size()) {
    Entry* moved = last.get();
    place(i, std::move(last));
    sift_up(i);
    sift_down(moved->slot);  // a no-op when it moved up
  }
  return out;
}

template <class Sync>
bool BasicTimerQueue<Sync>::insert(EntryRef e) {
  e->seq = next_seq_++;
  const Entry* added = e.get();
  if (run_tail_ == nullptr || !before(*e, *run_tail_)) {
    append_run(std::move(e));  // due no earlier than the run's last: O(1)
  } else {
    heap_.push_back(nullptr);
    place(heap_.size() - 1, std::move(e));
    sift_up(heap_.size() - 1);
  }
  // [TIMER-I2] Only when the serving thread sleeps past this deadline: a
  // turn's watchdog armed behind earlier ones wakes nobody. It re-reads the
  // queue under mu_ before it sleeps again, so nothing is missed.
  return earliest() == added && added->deadline.time_since_epoch().count() < waiting_until_.load();
}

template <class Sync>
bool BasicTimerQueue<Sync>::arm(EntryRef e) {
  std::shared_ptr<BasicTimerQueue> keep;  // a waker's reference, released after the lock
  EntryRef dropped;  // refused once stopped: discarded after the lock
  bool wake = false;
  {
    Lock lock(mu_);
    // Written once per queue: an entry re-armed on the same queue (an
    // activation's watchdog) keeps its reference and costs no reference-count
    // traffic. (A queue lives as long as its scheduler, which outlives the
    // entries armed on it, so the address names one queue.)
    if (e->armed_on != this) {
      e->queue = this->weak_from_this();
      e->armed_on = this;
    }
    if (stopped_.load()) {
      e->state.store(Entry::kDropped, std::memory_order_relaxed);  // under mu_ [RT-8.5]
      dropped = std::move(e);
    } else {
      // Decided under mu_, made after its release, as the carriers' wake-ups
      // are ([READY-I5]): the serving thread does not wake into a mutex its
      // waker still holds (on a busy machine it is woken on the waker's core,
      // preempts it there and blocks at once: two more switches a wake-up).
      // wait_due() publishes waiting_until_ and sleeps in one step under mu_,
      // so a wake-up decided against a sleeping thread reaches it; one that
      // finds it awake costs a spurious wake-up at most. [TIMER-I3] The queue
      // outlives the notify: once mu_ is released, the serving thread may fire
      // this timer (woken by another arm, by its own timeout or spuriously),
      // its callback may end the owner's wait, and the owner may destroy the
      // queue (a pool joins its serving thread) while this thread, not one of
      // the pool's, is still here; so a waker takes a reference first
      // ([RT-2.3], as for post(); held open by timer_wake_window_test.cpp and
      // the model's waker-outlives-owner). Only a wake-up pays for it. A queue
      // no longer owned (an arm from a callback its destructor drops) has
      // nobody to wake: the serving thread holds a reference while it serves.
      wake = insert(std::move(e));
      if (wake) {
        keep = this->weak_from_this().lock();  // [TIMER-I3] [RT-2.3]
        wake = keep != nullptr;
      }
    }
  }
  if (dropped != nullptr) {
    dropped->discard();  // outside the lock, as remove() does
    return false;
  }
  if (wake) {
    // Relaxed: the seam is set before the arming threads start.
    if (const WakeSeam seam = wake_seam_.load(std::memory_order_relaxed)) seam(*this);
    cv_.notify_one();
  }
  return true;  // `keep` may be the last reference: the queue is destroyed here
}

template <class Sync>
bool BasicTimerQueue<Sync>::remove(Entry& e) {
  EntryRef out;
  {
    Lock lock(mu_);
    const bool in_run = e.slot == Entry::kInRun && e.armed_on == this;
    if (!in_run && (e.slot >= heap_.size() || heap_[e.slot].get() != &e)) return false;
    out = take_out(e);
    out->state.store(Entry::kCancelled, std::memory_order_relaxed);  // under mu_ [RT-8.4] [TIMER-I1]
  }
  out->discard();  // outside the lock: a callback's destructor may arm timers
  return true;
}

template <class Sync>
void BasicTimerQueue<Sync>::take_due_locked(Clock::time_point now, std::vector<EntryRef>& out) {
  for (Entry* first = earliest(); first != nullptr && first->deadline <= now;  // [RT-8.2] never early
       first = earliest()) {
    EntryRef e = take_out(*first);  // [RT-8.3] the earliest, ties by arming order
    // Relaxed: a canceller reads it after taking mu_ (remove() failed), and the
    // posted item's runner after the target's queue published the item.
    e->state.store(Entry::kDue, std::memory_order_relaxed);  // [TIMER-I1]
    out.push_back(std::move(e));
  }
}

template <class Sync>
void BasicTimerQueue<Sync>::take_due(Clock::time_point now, std::vector<EntryRef>& out) {
  Lock lock(mu_);
  take_due_locked(now, out);
}

template <class Sync>
bool BasicTimerQueue<Sync>::wait_due(std::vector<EntryRef>& out) {
  Lock lock(mu_);
  for (;;) {
    if (stopped_.load()) return false;
    const Entry* first = earliest();
    if (first == nullptr) {
      waiting_until_.store(Clock::time_point::max().time_since_epoch().count());  // [TIMER-I2] with the sleep
      cv_.wait(mu_);
      continue;
    }
    const Clock::time_point next = first->deadline;
    if (next <= Clock::now()) {
      take_due_locked(Clock::now(), out);
      return true;
    }
    waiting_until_.store(next.time_since_epoch().count());  // [TIMER-I2] woken early by arm() or stop()
    cv_.wait_until(mu_, next);
  }
}

template <class Sync>
void BasicTimerQueue<Sync>::stop() {
  Lock lock(mu_);
  stopped_.store(true);
  cv_.notify_all();
}

template <class Sync>
void BasicTimerQueue<Sync>::drop_all() {
  std::vector<EntryRef> dropped;
  {
    Lock lock(mu_);
    dropped.swap(heap_);
    while (run_head_ != nullptr) dropped.push_back(unlink_run(*run_head_));
    for (const auto& e : dropped) {
      e->slot = Entry::kNoSlot;
      e->state.store(Entry::kDropped, std::memory_order_relaxed);  // under mu_ [RT-8.5] [TIMER-I1]
    }
  }
  // Outside the lock: destroying a callback may arm or cancel timers here.
  for (auto& e : dropped) e->discard();
}

template <class Sync>
auto BasicTimerQueue<Sync>::next_deadline() const -> std::optional<Clock::time_point> {
  Lock lock(mu_);
  const Entry* first = earliest();
  if (first == nullptr) return std::nullopt;
  return first->deadline;
}

template <class Sync>
std::size_t BasicTimerQueue<Sync>::size() const {
  Lock lock(mu_);
  return heap_.size() + run_size_;
}

extern template class BasicTimerQueue<StdSync>;  // instantiated in timer_queue.cpp

}  // namespace turnstile::detail
