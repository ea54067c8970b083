// scheduler.cpp: ThreadPool, ManualScheduler and the framework-context flag.
#include "turnstile/scheduler.hpp"

#include <algorithm>
#include <ctime>  // clock_gettime, CLOCK_MONOTONIC_COARSE (POSIX)
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "timer_queue.hpp"
#include "turnstile/errors.hpp"

namespace turnstile {

namespace {
// Depth of nested framework contexts on this thread. A plain counter is right
// here: it is only ever read and written by its own thread.
thread_local unsigned framework_depth = 0;
}  // namespace

// Not inlined on purpose: a caller inside a coroutine must not cache the
// thread-local's address across a suspension (it may resume on another thread).
[[gnu::noinline]] bool in_framework_context() noexcept { return framework_depth > 0; }

namespace detail {
[[gnu::noinline]] FrameworkContextScope::FrameworkContextScope() noexcept { ++framework_depth; }
[[gnu::noinline]] FrameworkContextScope::~FrameworkContextScope() { --framework_depth; }
}  // namespace detail

void Scheduler::block_until(detail::BlockingLatch& latch) { latch.wait(); }

// ---------------------------------------------------------------- ThreadPool

namespace {
// [READY-I4] ThreadPool::kAutoPollers: half the hardware's threads, at least one.
unsigned pollers_for(unsigned max_pollers) {
  if (max_pollers != ThreadPool::kAutoPollers) return max_pollers;
  return std::max(1u, std::thread::hardware_concurrency() / 2);
}

unsigned carriers_for(unsigned carriers) {
  return carriers != 0 ? carriers : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
}

// Which pool's carrier this thread is, and its index there: post() hands a
// carrier's first post of a run to its slot ([SLOT-I1]). Read and written by
// its own thread only; the accessors are out of line so that a coroutine
// calling post() never caches the thread-local's address across a suspension.
thread_local const ThreadPool* tl_pool = nullptr;
thread_local unsigned tl_carrier = 0;

[[gnu::noinline]] bool carrier_of(const ThreadPool* pool, unsigned& index) noexcept {
  if (tl_pool != pool) return false;
  index = tl_carrier;
  return true;
}
}  // namespace

ThreadPool::ThreadPool(unsigned carriers, unsigned spin_rounds, unsigned max_pollers, bool hand_off)
    : ready_(spin_rounds, pollers_for(max_pollers), carriers_for(carriers), hand_off),
      timers_(std::make_shared<detail::TimerQueue>(detail::TimerQueue::Serving::kOwnThread)) {
  carriers = ready_.carriers();  // carriers_for(carriers), resolved once
  threads_.reserve(carriers);
  for (unsigned i = 0; i < carriers; ++i) threads_.emplace_back([this, i] { carrier_loop(i); });
  // [SLOT-I2] the rescuer: only a second carrier can run what a held carrier's
  // slot holds.
  if (hand_off && carriers > 1) rescuer_ = std::thread([this] { rescuer_loop(); });
  // [RT-8.2] one timer thread serves the pool's one timer queue, started by the
  // queue at the first timer armed on the pool (none for a pool that arms none).
}

ThreadPool::~ThreadPool() {
  if (on_carrier()) {
    std::fputs("turnstile: a ThreadPool was destroyed from one of its own carriers [RT-2.3]\n",
               stderr);
    std::abort();
  }
  // [RT-8.5] timers first: nothing is posted by the timer thread once it is
  // joined, what is still armed is dropped, and arms made by the drain below
  // are dropped at once.
  timers_->stop();
  timers_->join_server();
  timers_->drop_all();
  ready_.stop();  // [RT-2.3] the carriers drain what is queued, then return
  for (auto& t : threads_) t.join();
  // After the carriers: a long item of the drain may still need a rescue.
  ready_.close_rescuer();
  if (rescuer_.joinable()) rescuer_.join();
}

bool ThreadPool::on_carrier() const noexcept {
  unsigned index = 0;
  return carrier_of(this, index);  // set by carrier_loop for its whole life
}

void ThreadPool::post(Runnable& item) {
  unsigned carrier = 0;
  if (carrier_of(this, carrier))
    ready_.push_from(carrier, &item);  // [SLOT-I1] a post of the running item
  else
    ready_.push(&item);  // [RT-2.2] FIFO: carriers take from the front
}

namespace {
using Clock = Scheduler::Clock;

#if defined(__linux__) && defined(CLOCK_MONOTONIC_COARSE)
Clock::duration from_timespec(const timespec& ts) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(ts.tv_sec) +
                                                     std::chrono::nanoseconds(ts.tv_nsec));
}
Clock::time_point read_coarse() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return Clock::time_point(from_timespec(ts));
}
// [RT-8.1] Twice the coarse clock's resolution (a reading lags the tick it
// shows by under one resolution; the second is room for a tick in flight), or
// zero (coarse_now() is now()) when the clock cannot stand in for now(): no
// resolution, one over 10 ms, or no reading of three that falls between
// now() - error and the now() read right after it (another time base than
// steady_clock's).
Clock::duration measure_coarse_error() {
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return Clock::duration::zero();
  const Clock::duration error = 2 * from_timespec(res);
  if (error <= Clock::duration::zero() || error > std::chrono::milliseconds(20))
    return Clock::duration::zero();
  for (int i = 0; i < 3; ++i) {
    const auto coarse = read_coarse();
    const auto fine = Clock::now();
    if (coarse <= fine && fine - coarse <= error) return error;
  }
  return Clock::duration::zero();
}
Clock::duration coarse_clock_error() {
  static const Clock::duration error = measure_coarse_error();  // once per process
  return error;
}
#else
Clock::time_point read_coarse() noexcept { return Clock::now(); }  // never read: no error
Clock::duration coarse_clock_error() { return Clock::duration::zero(); }
#endif
}  // namespace

Scheduler::Clock::time_point ThreadPool::coarse_now() const {
  return coarse_clock_error() > Clock::duration::zero() ? read_coarse() : now();
}

Scheduler::Clock::duration ThreadPool::coarse_error() const { return coarse_clock_error(); }

void ThreadPool::arm_timer(std::shared_ptr<detail::TimerEntry> entry) {
  timers_->arm(std::move(entry));  // false: destroying, dropped [RT-8.5]
}

void ThreadPool::carrier_loop(unsigned index) {
  tl_pool = this;
  tl_carrier = index;
  Runnable* item = nullptr;
  while (ready_.pop(index, item)) {  // false: stopping and drained [RT-2.3]
    detail::FrameworkContextScope in_item;
    item->run();
  }
  tl_pool = nullptr;
}

// [SLOT-I2] [LOCAL-I2] One look per rescue interval while hand-offs happen or
// a local queue holds items; parked (costing nothing) while neither does. The
// sleep is the product's pacing, not a test's ordering: whatever the
// interval, a slot or local item is taken exactly once.
void ThreadPool::rescuer_loop() {
  for (;;) {
    while (ready_.rescue()) std::this_thread::sleep_for(kRescueInterval);
    if (!ready_.wait_for_slots()) return;  // closed: the pool is being destroyed
  }
}

// ----------------------------------------------------------- ManualScheduler

ManualScheduler::ManualScheduler() : timers_(std::make_shared<detail::TimerQueue>()) {}

// Items still queued are not run: a ManualScheduler runs only what it is told
// to. A suspended coroutine whose resume was queued here is leaked, not
// destroyed behind its owner's back; tests drive to idle before destroying.
// Armed timers are dropped likewise [RT-8.5].
ManualScheduler::~ManualScheduler() {
  timers_->stop();
  timers_->drop_all();
}

void ManualScheduler::arm_timer(std::shared_ptr<detail::TimerEntry> entry) {
  timers_->arm(std::move(entry));  // fires only in advance() [RT-8.3]
}

Scheduler::Clock::time_point ManualScheduler::now() const {
  // [RT-8.1] virtual: moves only in advance(). acquire: pairs with its release store.
  return Clock::time_point(Clock::duration(now_.load(std::memory_order_acquire)));
}

std::size_t ManualScheduler::advance(Clock::duration d) {
  if (d < Clock::duration::zero())
    throw std::invalid_argument("ManualScheduler::advance: a negative duration [RT-8.3]");
  Clock::time_point to;
  {
    detail::LockGuard lock(mu_);
    to = Clock::time_point(Clock::duration(now_.load(std::memory_order_relaxed))) + d;  // under mu_
    now_.store(to.time_since_epoch().count(), std::memory_order_release);  // pairs with now()
  }
  std::vector<detail::TimerEntryRef> due;
  timers_->take_due(to, due);  // [RT-8.3] deadline order, ties in arming order
  const std::size_t n = due.size();
  detail::post_due(due);  // posted, not run [RT-8.2]
  return n;
}

std::size_t ManualScheduler::advance_to(Clock::time_point tp) {
  const Clock::time_point at = now();
  return advance(tp > at ? tp - at : Clock::duration::zero());
}

std::size_t ManualScheduler::timers() const { return timers_->size(); }

std::optional<Scheduler::Clock::time_point> ManualScheduler::next_deadline() const {
  return timers_->next_deadline();
}

void ManualScheduler::post(Runnable& item) {
  detail::LockGuard lock(mu_);
  ready_.push_back(&item);
}

std::size_t ManualScheduler::ready() const {
  detail::LockGuard lock(mu_);
  return ready_.size();
}

void ManualScheduler::run_next(std::size_t i) {
  if (in_framework_context())
    throw FrameworkContextError(
        "ManualScheduler::run_next called from inside a posted item; drive it from a plain "
        "thread [RT-2.4]");
  Runnable* item = nullptr;
  {
    detail::LockGuard lock(mu_);
    if (i >= ready_.size())
      throw std::out_of_range("ManualScheduler::run_next(" + std::to_string(i) + "): only " +
                              std::to_string(ready_.size()) + " item(s) ready");
    item = ready_[i];
    ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(i));
    ++steps_;
  }
  detail::FrameworkContextScope in_item;
  item->run();
}

std::size_t ManualScheduler::choose_next() {
  return chooser_ == nullptr ? 0 : chooser_->choose(ready());
}

std::size_t ManualScheduler::run_until_idle() {
  std::size_t n = 0;
  while (ready() > 0) {
    run_next(choose_next());
    ++n;
  }
  return n;
}

std::size_t ManualScheduler::run_until_quiescent() {
  std::size_t n = 0;
  for (;;) {
    if (ready() == 0) {
      const auto next = next_deadline();
      if (!next) return n;  // nothing ready, nothing armed: quiescent
      advance_to(*next);    // [RT-8.3] posts what is due, in deadline order
      continue;
    }
    run_next(choose_next());
    ++n;
  }
}

ManualScheduler::Chooser* ManualScheduler::set_chooser(Chooser* chooser) noexcept {
  return std::exchange(chooser_, chooser);
}

std::size_t ManualScheduler::fibers() const noexcept {
  return live_fibers_.load(std::memory_order_acquire);  // pairs with fiber_finished's acq_rel
}

void ManualScheduler::fiber_started() noexcept {
  live_fibers_.fetch_add(1, std::memory_order_relaxed);  // ordered by the post of its start
}

void ManualScheduler::fiber_finished() noexcept {
  live_fibers_.fetch_sub(1, std::memory_order_acq_rel);  // pairs with fibers()
}

void ManualScheduler::block_until(detail::BlockingLatch& latch) {
  while (!latch.is_set()) {
    if (ready() == 0)
      throw FrameworkContextError(
          "sync_wait on a ManualScheduler: nothing is ready and the task has not completed, so "
          "it can never complete [RT-6.3]");
    run_next(choose_next());
  }
}

Scheduler& default_scheduler() {
  static ThreadPool pool;
  return pool;
}

}  // namespace turnstile
