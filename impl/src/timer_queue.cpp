// timer_queue.cpp: the timer queue behind every scheduler's timers, an
// indexed min-heap by (deadline, arming order).
#include "timer_queue.hpp"

#include <utility>

namespace turnstile::detail {

// ---------------------------------------------------------------- TimerQueue

TimerQueue::~TimerQueue() { drop_all(); }

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
  {
    LockGuard lock(mu_);
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
      heap_.push_back(nullptr);
      place(heap_.size() - 1, std::move(e));
      sift_up(heap_.size() - 1);
      // Only when the serving thread sleeps past this deadline: a turn's watchdog
      // armed behind earlier ones wakes nobody. It re-reads the heap under mu_
      // before it sleeps again, so nothing is missed.
      if (heap_.front().get() == added && added->deadline < waiting_until_) cv_.notify_one();
      return true;
    }
    e->state.store(TimerEntry::kDropped, std::memory_order_relaxed);  // under mu_ [RT-8.5]
  }
  e->discard();  // outside the lock, as remove() does
  return false;
}

bool TimerQueue::remove(TimerEntry& e) {
  TimerEntryRef out;
  {
    LockGuard lock(mu_);
    if (e.slot == TimerEntry::kNoSlot || e.slot >= heap_.size() || heap_[e.slot].get() != &e)
      return false;
    out = pop_at(e.slot);
    out->state.store(TimerEntry::kCancelled, std::memory_order_relaxed);  // under mu_ [RT-8.4]
  }
  out->discard();  // outside the lock: a callback's destructor may arm timers
  return true;
}

void TimerQueue::take_due_locked(Clock::time_point now, std::vector<TimerEntryRef>& out) {
  while (!heap_.empty() && heap_.front()->deadline <= now) {  // [RT-8.2] never early
    TimerEntryRef e = pop_at(0);  // [RT-8.3] the earliest, ties by arming order
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
    if (heap_.empty()) {
      waiting_until_ = Clock::time_point::max();
      cv_.wait(lock.native());
      continue;
    }
    const Clock::time_point next = heap_.front()->deadline;
    if (next <= Clock::now()) {
      take_due_locked(Clock::now(), out);
      return true;
    }
    waiting_until_ = next;
    cv_.wait_until(lock.native(), next);  // woken early by arm() of an earlier deadline, or stop()
  }
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
  if (heap_.empty()) return std::nullopt;
  return heap_.front()->deadline;
}

std::size_t TimerQueue::size() const {
  LockGuard lock(mu_);
  return heap_.size();
}

}  // namespace turnstile::detail
