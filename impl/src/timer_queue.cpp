// timer_queue.cpp: the timer queue behind every scheduler's timers: a run of
// entries armed in deadline order, and an indexed min-heap for the others, both
// by (deadline, arming order).
#include "timer_queue.hpp"

#include <utility>

namespace turnstile::detail {

// ---------------------------------------------------------------- TimerQueue

std::atomic<TimerQueue::WakeSeam> TimerQueue::wake_seam_{nullptr};

TimerQueue::~TimerQueue() { drop_all(); }

void TimerQueue::set_wake_seam(WakeSeam seam) noexcept {
  wake_seam_.store(seam, std::memory_order_relaxed);  // ordered by the arming threads' start
}

bool TimerQueue::before(const TimerEntry& a, const TimerEntry& b) noexcept {
  // [RT-8.3] deadline order, ties in arming order
  return a.deadline != b.deadline ? a.deadline < b.deadline : a.seq < b.seq;
}

void TimerQueue::place(std::size_t i, TimerEntryRef e) {
  e->slot = i;
  heap_[i] = std::move(e);
}

void TimerQueue::sift_up(std::size_t i) {
  TimerEntryRef e = std::move(heap_[i]);
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!before(*e, *heap_[parent])) break;
    place(i, std::move(heap_[parent]));
    i = parent;
  }
  place(i, std::move(e));
}

void TimerQueue::sift_down(std::size_t i) {
  TimerEntryRef e = std::move(heap_[i]);
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

TimerEntry* TimerQueue::earliest() const {
  TimerEntry* top = heap_.empty() ? nullptr : heap_.front().get();
  TimerEntry* head = run_head_.get();
  if (top == nullptr) return head;
  if (head == nullptr) return top;
  return before(*head, *top) ? head : top;  // [RT-8.3] one order over both stores
}

void TimerQueue::append_run(TimerEntryRef e) {
  e->slot = TimerEntry::kInRun;
  e->run_prev = run_tail_;
  TimerEntry* added = e.get();
  if (run_tail_ != nullptr) run_tail_->run_next = std::move(e); else run_head_ = std::move(e);
  run_tail_ = added;
  ++run_size_;
}

TimerEntryRef TimerQueue::unlink_run(TimerEntry& e) {
  TimerEntryRef next = std::move(e.run_next);
  TimerEntry* const prev = e.run_prev;
  TimerEntryRef& link = prev != nullptr ? prev->run_next : run_head_;  // the reference to `e`
  TimerEntryRef out = std::move(link);
  link = std::move(next);
  if (link != nullptr) link->run_prev = prev; else run_tail_ = prev;
  e.run_prev = nullptr;
  e.slot = TimerEntry::kNoSlot;
  --run_size_;
  return out;
}

TimerEntryRef TimerQueue::take_out(TimerEntry& e) {
  return e.slot == TimerEntry::kInRun ? unlink_run(e) : pop_at(e.slot);
}

TimerEntryRef TimerQueue::pop_at(std::size_t i) {
  TimerEntryRef out = std::move(heap_[i]);
  out->slot = TimerEntry::kNoSlot;
  TimerEntryRef last = std::move(heap_.back());
  heap_.pop_back();
  if (i < heap_.size()) {
    TimerEntry* moved = last.get();
    place(i, std::move(last));
    sift_up(i);
    sift_down(moved->slot);  // a no-op when it moved up
  }
  return out;
}

bool TimerQueue::arm(TimerEntryRef e) {
  // Before the entry goes in, so that a start that throws arms nothing. Relaxed:
  // the flag guards no data (server_ is touched only under server_mu_, where
  // start_server() reads the flag again); a stale false costs that lock once.
  if (own_thread_ && !server_settled_.load(std::memory_order_relaxed)) start_server();
  std::shared_ptr<TimerQueue> keep;  // a waker's reference, released after `lock` (below)
  UniqueLock lock(mu_);
  // Written once per queue: an entry re-armed on the same queue (an
  // activation's watchdog) keeps its reference and costs no reference-count
  // traffic. (A queue lives as long as its scheduler, which outlives the
  // entries armed on it, so the address names one queue.)
  if (e->armed_on != this) {
    e->queue = weak_from_this();
    e->armed_on = this;
  }
  if (!stopped_) {
    e->seq = next_seq_++;
    const TimerEntry* added = e.get();
    if (run_tail_ == nullptr || !before(*e, *run_tail_)) {
      append_run(std::move(e));  // due no earlier than the run's last: O(1)
    } else {
      heap_.push_back(nullptr);
      place(heap_.size() - 1, std::move(e));
      sift_up(heap_.size() - 1);
    }
    // Only when the serving thread sleeps past this deadline: a turn's watchdog
    // armed behind earlier ones wakes nobody. It re-reads the queue under mu_
    // before it sleeps again, so nothing is missed.
    bool wake = earliest() == added && added->deadline < waiting_until_;
    // Decided under mu_, made after its release, as the carriers' wake-ups are
    // ([READY-I5]): the serving thread does not wake into a mutex its waker
    // still holds (on a busy machine it is woken on the waker's core, preempts
    // it there and blocks at once: two more switches a wake-up). wait_due()
    // publishes waiting_until_ and sleeps in one step under mu_, so a wake-up
    // decided against a sleeping thread reaches it; one that finds it awake
    // costs a spurious wake-up at most (it re-reads the queue under mu_ before
    // it sleeps again). The queue outlives the notify: once mu_ is released,
    // the serving thread may fire this timer (woken by another arm, by its own
    // timeout or spuriously), its callback may end the owner's wait, and the
    // owner may destroy the pool (joining the serving thread) while this
    // thread, not one of the pool's, is still here; so a waker takes a
    // reference first ([RT-2.3], as for post(); the window is held open by
    // timer_wake_window_test.cpp through the wake seam). Only a wake-up pays for it:
    // an arm behind the earliest wakes nobody. A queue no longer owned (an arm
    // from a callback its destructor drops) has nobody to wake: the serving
    // thread holds a reference while it serves.
    if (wake) {
      keep = weak_from_this().lock();  // [RT-2.3]
      wake = keep != nullptr;
    }
    lock.unlock();
    if (wake) {
      // Relaxed: the seam is set before the arming threads start.
      if (const WakeSeam seam = wake_seam_.load(std::memory_order_relaxed)) seam(*this);
      cv_.notify_one();
    }
    return true;  // `keep` may be the last reference: the queue is destroyed here
  }
  e->state.store(TimerEntry::kDropped, std::memory_order_relaxed);  // under mu_ [RT-8.5]
  lock.unlock();
  e->discard();  // outside the lock, as remove() does
  return false;
}

bool TimerQueue::remove(TimerEntry& e) {
  TimerEntryRef out;
  {
    LockGuard lock(mu_);
    const bool in_run = e.slot == TimerEntry::kInRun && e.armed_on == this;
    if (!in_run && (e.slot >= heap_.size() || heap_[e.slot].get() != &e)) return false;
    out = take_out(e);
    out->state.store(TimerEntry::kCancelled, std::memory_order_relaxed);  // under mu_ [RT-8.4]
  }
  out->discard();  // outside the lock: a callback's destructor may arm timers
  return true;
}

void TimerQueue::take_due_locked(Clock::time_point now, std::vector<TimerEntryRef>& out) {
  for (TimerEntry* first = earliest(); first != nullptr && first->deadline <= now;  // [RT-8.2] never early
       first = earliest()) {
    TimerEntryRef e = take_out(*first);  // [RT-8.3] the earliest, ties by arming order
    // Relaxed: a canceller reads it after taking mu_ (remove() failed), and the
    // posted item's runner after the target's queue published the item.
    e->state.store(TimerEntry::kDue, std::memory_order_relaxed);
    out.push_back(std::move(e));
  }
}

void TimerQueue::take_due(Clock::time_point now, std::vector<TimerEntryRef>& out) {
  LockGuard lock(mu_);
  take_due_locked(now, out);
}

bool TimerQueue::wait_due(std::vector<TimerEntryRef>& out) {
  UniqueLock lock(mu_);
  for (;;) {
    if (stopped_) return false;
    const TimerEntry* first = earliest();
    if (first == nullptr) {
      waiting_until_ = Clock::time_point::max();
      cv_.wait(lock.native());
      continue;
    }
    const Clock::time_point next = first->deadline;
    if (next <= Clock::now()) {
      take_due_locked(Clock::now(), out);
      return true;
    }
    waiting_until_ = next;
    cv_.wait_until(lock.native(), next);  // woken early by arm() of an earlier deadline, or stop()
  }
}

void TimerQueue::start_server() {
  LockGuard lock(server_mu_);
  if (server_settled_.load(std::memory_order_relaxed)) return;  // stored under server_mu_ only
  if (!server_closed_) {
    std::shared_ptr<TimerQueue> self = weak_from_this().lock();
    if (self == nullptr) return;  // no longer owned: an arm from a callback ~TimerQueue drops
    // [RT-8.2] the one thread that serves this queue; it only posts. Started
    // before its first entry is armed, it usually finds that entry already
    // there and sleeps once, until its deadline.
    server_ = std::thread([q = std::move(self)] {
      std::vector<TimerEntryRef> due;
      while (q->wait_due(due)) post_due(due);
    });
  }
  server_settled_.store(true, std::memory_order_relaxed);  // read by arm() and here
}

void TimerQueue::join_server() {
  std::thread server;
  {
    LockGuard lock(server_mu_);
    server_closed_ = true;  // a later start_server() starts nothing
    server_settled_.store(true, std::memory_order_relaxed);  // read by arm() and start_server()
    server = std::move(server_);
  }
  if (server.joinable()) server.join();  // wait_due() returns false once stop() was called
}

void TimerQueue::stop() {
  LockGuard lock(mu_);
  stopped_ = true;
  cv_.notify_all();
}

void TimerQueue::drop_all() {
  std::vector<TimerEntryRef> dropped;
  {
    LockGuard lock(mu_);
    dropped.swap(heap_);
    while (run_head_ != nullptr) dropped.push_back(unlink_run(*run_head_));
    for (const auto& e : dropped) {
      e->slot = TimerEntry::kNoSlot;
      e->state.store(TimerEntry::kDropped, std::memory_order_relaxed);  // under mu_ [RT-8.5]
    }
  }
  // Outside the lock: destroying a callback may arm or cancel timers here.
  for (auto& e : dropped) e->discard();
}

std::optional<TimerQueue::Clock::time_point> TimerQueue::next_deadline() const {
  LockGuard lock(mu_);
  const TimerEntry* first = earliest();
  if (first == nullptr) return std::nullopt;
  return first->deadline;
}

std::size_t TimerQueue::size() const {
  LockGuard lock(mu_);
  return heap_.size() + run_size_;
}

}  // namespace turnstile::detail
