// timer.cpp: RearmableTimer, TimerHandle, call_at, the process-wide default
// timer thread and sleep_for / sleep_until.
#include "turnstile/timer.hpp"

#include <type_traits>
#include <utility>

#include "timer_queue.hpp"
#include "turnstile/detail/block_cache.hpp"
#include "turnstile/detail/never_destroyed.hpp"

namespace turnstile {

namespace detail {

static_assert(std::is_same_v<TimerQueue::Clock, Scheduler::Clock>, "one clock type [RT-8.1]");

void post_due(std::vector<TimerEntryRef>& due) {
  for (auto& e : due) {
    Scheduler* target = e->target;
    Runnable& item = e->make_due(e);
    target->post(item);  // [RT-8.2] posted, never run here
  }
  due.clear();
}

// The fire/cancel protocol (TimerEntry::try_fire, cancel) is the timer core's:
// detail/timer_core.hpp, instantiated in timer_queue.cpp.

// ------------------------------------------------------------ RearmableTimer

// Its entry: posted when due, calls the owner back unless disarm() won.
class RearmableTimer::Entry final : public TimerEntry, public Runnable {
 public:
  explicit Entry(RearmableTimer* owner) noexcept : owner_(owner) {}
  Runnable& make_due(std::shared_ptr<TimerEntry> self) noexcept override {
    self_ = std::move(self);  // alive until run() [RT-8.2]
    return *this;
  }
  void run() noexcept override {
    const std::shared_ptr<TimerEntry> keep = std::exchange(self_, nullptr);
    // Disarmed while posted: the owner may be gone, touch nothing but this entry.
    if (!try_fire()) return;
    owner_->on_fire_();  // the owner waits for it before it goes (disarm() false)
  }

 private:
  RearmableTimer* const owner_;
  std::shared_ptr<TimerEntry> self_;  // set when posted, taken by run()
};

RearmableTimer::RearmableTimer(Scheduler& target, std::function<void()> on_fire)
    : target_(target), on_fire_(std::move(on_fire)) {}

RearmableTimer::~RearmableTimer() = default;

void RearmableTimer::arm(Scheduler::Clock::time_point deadline) {
  // [RT-1.7] the entry from this thread's block cache: an activation's watchdog
  // arms one per activation, and its last reference may drop on another carrier.
  if (!entry_ || !reusable_) entry_ = std::allocate_shared<Entry>(detail::BlockAllocator<Entry>{}, this);
  reusable_ = false;
  // Not in any queue (new, or taken out by a remove() under the queue's mutex,
  // which the arm below takes again): plain writes, published by that arm.
  entry_->state.store(TimerEntry::kArmed, std::memory_order_relaxed);
  entry_->deadline = deadline;
  entry_->target = &target_;  // [RT-8.2] its callback runs as an item of the target
  target_.arm_timer(entry_);
}

bool RearmableTimer::disarm() noexcept {
  switch (entry_->cancel()) {
    case TimerEntry::Cancel::removed:
      reusable_ = true;  // out of its queue, never posted: armed again next time
      return true;
    case TimerEntry::Cancel::fired:
      return false;  // its callback runs now: the owner waits for it
    default:
      // Posted and now cancelled (its item does nothing), or dropped with its
      // scheduler: it never calls back. A fresh entry is armed next time.
      entry_.reset();
      return true;
  }
}

namespace {
// call_at's entry: its item runs the callback unless cancel() won. [RT-8.4]
class CallAtEntry final : public TimerEntry, public Runnable {
 public:
  explicit CallAtEntry(std::function<void()> fn) : fn_(std::move(fn)) {}
  Runnable& make_due(std::shared_ptr<TimerEntry> self) noexcept override {
    self_ = std::move(self);  // alive until run() [RT-8.2]
    return *this;
  }
  void discard() noexcept override { std::function<void()>().swap(fn_); }
  void run() noexcept override {
    // Released as run() returns: the entry (and this item) may be freed then.
    const std::shared_ptr<TimerEntry> keep = std::exchange(self_, nullptr);
    (void)keep;
    if (!try_fire()) return;  // cancelled after it was posted: do nothing [RT-8.4]
    try {
      fn_();
    } catch (...) {
      report_unhandled(std::current_exception(), "a timer callback");
    }
  }

 private:
  std::function<void()> fn_;
  std::shared_ptr<TimerEntry> self_;  // set when posted, taken by run()
};

// The process-wide timer queue of the default Scheduler::arm_timer, served by a
// thread of its own started at its first arm (as a pool's). Never destroyed,
// its thread never joined (a scheduler may arm a timer during static
// destruction).
TimerQueue& default_timer_queue() {
  static NeverDestroyed<std::shared_ptr<TimerQueue>> holder(
      [] { return std::make_shared<TimerQueue>(TimerQueue::Serving::kOwnThread); });
  return *holder.value;
}
}  // namespace

void SleepAwaiter::await_suspend(std::coroutine_handle<> h) {
  auto e = std::make_shared<SleepEntry>();
  e->resume.arm(h);  // throws FrameworkContextError outside a fiber [RT-4.4]
  Scheduler& s = *e->resume.fiber()->scheduler;
  e->target = &s;    // [RT-8.2] resumes on the fiber's own scheduler
  e->deadline = relative_ ? s.now() + delay_ : until_;
  e->self = e;
  entry_ = e.get();
  s.arm_timer(std::move(e));
}

void SleepAwaiter::await_resume() noexcept {
  if (entry_ != nullptr) {
    SleepEntry* e = std::exchange(entry_, nullptr);
    e->self.reset();  // the timer's last reference: frees it
  }
}

}  // namespace detail

// ---------------------------------------------------------------- the public side

bool TimerHandle::cancel() noexcept {
  if (!entry_) return false;
  const auto r = entry_->cancel();
  return r != detail::TimerEntry::Cancel::fired && r != detail::TimerEntry::Cancel::never_armed;
}

bool TimerHandle::pending() const noexcept {
  if (!entry_) return false;
  const int s = entry_->state.load(std::memory_order_acquire);  // pairs as in cancel()
  return s == detail::TimerEntry::kArmed || s == detail::TimerEntry::kDue;
}

TimerHandle Scheduler::call_at(Clock::time_point deadline, std::function<void()> fn) {
  auto e = std::make_shared<detail::CallAtEntry>(std::move(fn));
  e->deadline = deadline;
  e->target = this;  // [RT-8.2] the callback is posted here
  TimerHandle handle(e);
  arm_timer(std::move(e));
  return handle;
}

TimerHandle Scheduler::call_after(Clock::duration delay, std::function<void()> fn) {
  return call_at(now() + delay, std::move(fn));
}

void Scheduler::arm_timer(std::shared_ptr<detail::TimerEntry> entry) {
  detail::default_timer_queue().arm(std::move(entry));
}

}  // namespace turnstile
