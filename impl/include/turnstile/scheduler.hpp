// turnstile/scheduler.hpp: where posted work runs.
//
// A Scheduler runs posted items. It never runs an item inside post() ([RT-2.1]):
// whatever posts keeps its own stack and context, which is what lets every
// completion primitive resume its waiters outside the completing call.
//
//   ThreadPool       N carrier threads, one FIFO ready queue. Items posted from
//                    one thread start in the order posted.
//   ManualScheduler  runs nothing by itself. The caller picks which ready item
//                    runs next (run_next(i)), so tests, property suites and the
//                    conformance oracle choose interleavings deterministically.
//
// Every item runs inside a *framework execution context*
// (in_framework_context() is true during it); blocking bridges such as
// sync_wait refuse to run there ([RT-6.2]).
//
// Time ([RT-8.1] to [RT-8.5], turnstile/timer.hpp): every scheduler has a clock,
// now(), and a timer: call_at(deadline, fn) posts fn to it once the deadline has
// passed on that clock. A ThreadPool keeps one timer queue served by one timer
// thread; a ManualScheduler's clock is virtual and moves only in advance().
//
// Thread safety: post(), now(), call_at() may be called from any thread,
// including from inside an item. ManualScheduler's run_* must be called from
// one plain thread at a time, never from inside an item; advance() from any
// thread (it only posts).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "turnstile/detail/ready_queue.hpp"
#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/sync.hpp"
#include "turnstile/timer_handle.hpp"

namespace turnstile {

class Scheduler;

// An intrusive unit of posted work. The item must stay alive until run() has
// been called; run() is called exactly once, by the scheduler it was posted to.
class Runnable {
 public:
  virtual void run() noexcept = 0;

 protected:
  ~Runnable() = default;
};

namespace detail {
class BlockingLatch;
}

class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;

  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  virtual ~Scheduler() = default;

  // Queues `item` to run later on this scheduler; never runs it inline [RT-2.1].
  virtual void post(Runnable& item) = 0;

  // Posts a callable (one heap allocation for the wrapper).
  template <class F>
  void post_fn(F&& f) {
    struct Fn final : Runnable {
      explicit Fn(F&& fn) : fn_(std::forward<F>(fn)) {}
      void run() noexcept override {
        std::unique_ptr<Fn> self(this);
        fn_();
      }
      std::decay_t<F> fn_;
    };
    post(*new Fn(std::forward<F>(f)));
  }

  // Blocks the calling plain thread until `latch` is set. The default waits; a
  // scheduler that needs a driver (ManualScheduler) runs its items meanwhile.
  virtual void block_until(detail::BlockingLatch& latch);

  // Called when a fiber that starts on this scheduler is created, and when it
  // finishes (on its last step, wherever it runs). sync_wait's private loop
  // uses them to run until every fiber it started has finished.
  virtual void fiber_started() noexcept {}
  virtual void fiber_finished() noexcept {}

  // This scheduler's clock [RT-8.1]: steady_clock, virtual on a ManualScheduler,
  // the underlying scheduler's on a Strand. Timers and sleeps armed here are
  // measured against it.
  virtual Clock::time_point now() const { return Clock::now(); }
  // now() as a callable, e.g. for ActivationOptions::clock. The scheduler must
  // outlive it.
  std::function<Clock::time_point()> clock() const {
    return [this] { return now(); };
  }
  // A cheaper reading of now(), for a measurement made on every turn that
  // tolerates a small error (the slow-turn watch, [TURN-4.2]) [RT-8.1]: on
  // now()'s clock, never later than now() read at the same instant, and at
  // most coarse_error() earlier. The default is exact: now(), error zero (so a
  // scheduler that overrides now() alone stays exact). A ThreadPool reads
  // CLOCK_MONOTONIC_COARSE where steady_clock is CLOCK_MONOTONIC (Linux): about
  // 3 ns against 25 for now() on a VM's kvm-clock; its error is twice the
  // kernel tick (2 to 8 ms), or zero (exact) where that clock is missing or
  // does not agree with steady_clock. A Strand forwards both to its underlying
  // scheduler.
  virtual Clock::time_point coarse_now() const { return now(); }
  virtual Clock::duration coarse_error() const { return Clock::duration::zero(); }

  // Arms a one-shot timer: once now() has passed `deadline` (reached it, on a
  // ManualScheduler: in an advance()), `fn` is posted to this scheduler and
  // runs as one of its items, never inside call_at nor inside the timer
  // machinery ([RT-8.2]). An exception escaping `fn` goes to the unhandled-
  // exception handler. The handle cancels it ([RT-8.4]).
  TimerHandle call_at(Clock::time_point deadline, std::function<void()> fn);
  // call_at(now() + delay, fn).
  TimerHandle call_after(Clock::duration delay, std::function<void()> fn);

  // For scheduler implementations and the runtime: queue `entry` so that, once
  // it is due, entry->make_due()'s item is posted to entry->target. The default
  // uses one process-wide timer thread (never destroyed); a scheduler relying
  // on it must outlive the timers armed on it. ThreadPool, ManualScheduler,
  // Strand and sync_wait's loop override it ([RT-8.5]).
  virtual void arm_timer(std::shared_ptr<detail::TimerEntry> entry);
};

// N carrier threads sharing one FIFO queue, and one timer thread serving one
// timer queue (ordered by deadline) for every timer armed on the pool or on a
// Strand over it ([RT-8.2]), started by the first timer armed (an activation's
// first turn arms its watchdog; a pool that arms no timer has no timer thread).
// Destruction first stops the timer thread and drops the timers still armed
// (their callbacks are destroyed without running; a fiber sleeping on one is
// never resumed and its frame is leaked) [RT-8.5];
// then it stops accepting new carriers' sleep, runs every item already queued
// (and any they post), and joins the carriers. Timers armed during that drain
// are dropped at once. Destroying a pool from one of its own carriers is a
// contract violation and stops the process with a message.
//
// Idle carriers (detail/ready_queue.hpp): a carrier that finds the queue empty
// polls it for up to `spin_rounds` rounds of the CPU's pause instruction
// (kDefaultSpinRounds: about 20 us on the 2-core VM the benchmarks run on,
// where a pause takes about 20 ns; less on CPUs with a short pause) before it
// parks on a condition variable; post() wakes a parked carrier only
// when no carrier is polling, and a carrier that takes an item and leaves more
// behind wakes one [READY-I1] [READY-I2]. So a hand-off between carriers (a
// call, the turn it starts, the resume it posts back) costs no futex wake-up
// while the pool is busy, and an idle pool parks every carrier. spin_rounds 0:
// park at once. At most `max_pollers` carriers poll at once [READY-I4]; the
// others park as soon as they find the queue empty, so on a machine shared
// with other work idle carriers need not spin on more cores than it spares.
// The default is kUnlimitedPollers (every idle carrier polls): on 2 cores a
// cap of one measured within noise of it either way (impl/bench/README.md,
// "The polling cap"), so the cap is the caller's choice: kAutoPollers is half
// the hardware's threads (at least one), or give a number.
//
// The hand-off slot (hand_off, on by default; [RT-2.2], [SLOT-I1]..[SLOT-I4]):
// the first item an item posts while it runs on a carrier (typically the
// fiber it just made ready: a turn's settle resuming its caller) is kept in
// that carrier's slot and runs next on the same carrier, once the running
// item returns, instead of waking another carrier. Later posts of the same
// run go to the carrier's local queue (detail/local_queue.hpp; [LOCAL-I1]..
// [LOCAL-I5]), in post order, after the slot's item: the carrier takes them
// next (the shared queue when the local one is full). A carrier runs at most
// kDefaultSlotStreak slot items in a row while the shared queue has work, and
// takes the shared queue's oldest every sixteenth pop. An item that holds its
// carrier does not strand its hand-off or its local queue: a carrier that
// polled in vain steals the hand-off, and the pool's rescuer thread (one per
// pool of two or more carriers, awake only while hand-offs happen or a local
// queue holds items) moves the hand-off, and a local queue whose items have
// waited a whole rescue interval, to the shared queue after one to two rescue
// intervals (kRescueInterval). So a run's fan-out of short CPU chunks runs on
// its own carrier (64 chunks of 10 us: 1.8x the time of hand_off false,
// BM_RT_FanOut in impl/bench/runtime_bench.cpp): a pool meant for such
// fan-outs is built with hand_off false.
// hand_off false: every post goes to the shared queue (the behaviour before).
class ThreadPool final : public Scheduler {
 public:
  // 1024 (about 20 us). Stop 47 chose 4096: beside 4 busy processes the
  // shorter poll then parked the carriers of a pipelined exchange between
  // every burst, 7.3 to 7.6 context switches per 1,000 requests against 3.7
  // to 4.6 (CAF: 7.8 to 12.2). Since every wake-up is made after the unlock
  // ([READY-I5], the timer queue's and sync_wait's too), 1024 no longer
  // costs more switches than CAF and takes less time: 64 calls in flight on 2
  // carriers at load 4, ten runs from stop 49 to stop 50, 0.58 to 0.84 of
  // CAF's time per request (4096: 0.66 to 0.72) at 0.11 to 0.95 of its
  // switches; the other rows moved within their noise, quiet ones not at all
  // (impl/bench/README.md, "The poll's length on a busy machine"). The price
  // when idle: a carrier spends up to that poll's CPU once per burst. Pass
  // spin_rounds to choose otherwise.
  static constexpr unsigned kDefaultSpinRounds = 1024;
  static constexpr unsigned kAutoPollers = 0;        // max(1, hardware_concurrency / 2)
  static constexpr unsigned kUnlimitedPollers = ~0u;  // every idle carrier polls (the default)

  static constexpr std::chrono::microseconds kRescueInterval{1000};  // [SLOT-I2] [LOCAL-I2]

  // carriers == 0 means min(hardware_concurrency, 4) (at least 1).
  explicit ThreadPool(unsigned carriers = 0) : ThreadPool(carriers, kDefaultSpinRounds) {}
  ThreadPool(unsigned carriers, unsigned spin_rounds) : ThreadPool(carriers, spin_rounds, kUnlimitedPollers) {}
  ThreadPool(unsigned carriers, unsigned spin_rounds, unsigned max_pollers, bool hand_off = true);
  ~ThreadPool() override;

  void post(Runnable& item) override;
  void arm_timer(std::shared_ptr<detail::TimerEntry> entry) override;
  // [RT-8.1] CLOCK_MONOTONIC_COARSE, when it agrees with steady_clock (see
  // Scheduler::coarse_now()).
  Clock::time_point coarse_now() const override;
  Clock::duration coarse_error() const override;
  unsigned carriers() const noexcept { return static_cast<unsigned>(threads_.size()); }
  // Whether posts from a carrier use its hand-off slot ([SLOT-I1]).
  bool hand_off() const noexcept { return ready_.hand_off(); }
  // True when the calling thread is one of this pool's carriers.
  bool on_carrier() const noexcept;

 private:
  void carrier_loop(unsigned index);
  void rescuer_loop();

  detail::BasicReadyQueue<StdSync, Runnable*> ready_;  // [RT-2.2] its own mutex
  std::vector<std::thread> threads_;
  std::thread rescuer_;  // [SLOT-I2] with hand_off and two or more carriers
  // Its own mutex; fired by its own thread only, started at the first arm [RT-8.2].
  std::shared_ptr<detail::TimerQueue> timers_;
};

// Deterministic scheduler: ready items wait until the caller runs them, and
// time is virtual: now() starts at Clock::time_point{} (zero) and moves only in
// advance(), so tests of time never sleep ([RT-8.1], [RT-8.3]). Destroying it
// drops the timers still armed, like the items still queued [RT-8.5].
class ManualScheduler final : public Scheduler {
 public:
  ManualScheduler();
  ~ManualScheduler() override;

  void post(Runnable& item) override;
  void arm_timer(std::shared_ptr<detail::TimerEntry> entry) override;

  // The virtual clock [RT-8.1].
  Clock::time_point now() const override;
  // Moves the virtual clock forward by `d` (d >= 0) and posts every timer now
  // due, in deadline order, ties in arming order; runs nothing ([RT-8.3]).
  // Nothing fires until advance is called, even a timer armed for a deadline
  // already passed (advance(0ns) fires it). Returns how many fired.
  std::size_t advance(Clock::duration d);
  // advance(tp - now()) when tp is later than now(), else advance(0ns).
  std::size_t advance_to(Clock::time_point tp);
  // Timers still waiting in this scheduler's queue for an advance: armed, and
  // not yet posted by an advance, cancelled or dropped. A timer whose deadline
  // has already passed (armed for a past instant, or left behind when time was
  // not advanced) counts until the next advance posts it ([RT-8.3]); a posted
  // callback or sleep no longer counts, whether or not its item has run yet.
  std::size_t timers() const;
  // The earliest armed deadline, if any.
  std::optional<Clock::time_point> next_deadline() const;

  // Number of items ready to run.
  std::size_t ready() const;
  // Runs the i-th ready item (0 = oldest). Throws std::out_of_range if i >=
  // ready(), FrameworkContextError if called from inside an item.
  void run_next(std::size_t i = 0);
  // Runs the oldest item until none is ready; returns how many ran.
  std::size_t run_until_idle();
  // Items run so far (a step counter for traces and schedules).
  std::size_t steps() const noexcept { return steps_; }

  // Runs items until none is ready and no timer is armed: whenever nothing is
  // ready and a timer is armed, it first moves the clock to the earliest
  // deadline (advance_to(*next_deadline()), which posts every timer due then).
  // Returns how many items ran. Fibers still suspended then wait for something
  // no item and no timer will ever do: fibers() counts them.
  std::size_t run_until_quiescent();

  // Who picks the next item in the loops: run_until_idle(), run_until_quiescent()
  // and block_until() (sync_wait(manual, task)). With no chooser installed (the
  // default) they run the oldest item; with one, the index it returns. run_next(i)
  // called directly is never affected. The testing module's explorer installs one
  // for each run (turnstile/testing/explore.hpp, [EXP-1.2]).
  class Chooser {
   public:
    // Called before every item one of the loops runs, also when only one is
    // ready; returns the index (below `ready`, which is at least 1) of the item
    // to run. May throw: the exception leaves the loop before anything runs.
    virtual std::size_t choose(std::size_t ready) = 0;

   protected:
    ~Chooser() = default;
  };
  // Installs `chooser` (null: the oldest first again) and returns the previous
  // one. Call it from the driving thread, outside the loops; the chooser must
  // outlive its installation.
  Chooser* set_chooser(Chooser* chooser) noexcept;

  // Fibers whose home is this scheduler (started by detach, Scope::spawn or
  // sync_wait(manual, task) on it) that have not finished yet.
  std::size_t fibers() const noexcept;
  void fiber_started() noexcept override;
  void fiber_finished() noexcept override;

  // sync_wait(manual, task) drives this scheduler on the calling thread until
  // the task completes; if nothing is ready and the task is not done, it can
  // never complete, and FrameworkContextError says so instead of hanging.
  void block_until(detail::BlockingLatch& latch) override;

 private:
  std::size_t choose_next();

  mutable detail::Mutex mu_;
  std::deque<Runnable*> ready_ TURNSTILE_GUARDED_BY(mu_);
  std::size_t steps_ = 0;  // written under mu_ by the one driving thread, read by it
  // [RT-8.1] The virtual clock, in Clock ticks since zero: written by advance()
  // under mu_ (release), read by now() without the lock (acquire), so a
  // reader that sees a time also sees what advance() did before moving to it.
  std::atomic<Clock::rep> now_{0};
  std::shared_ptr<detail::TimerQueue> timers_;
  Chooser* chooser_ = nullptr;  // the driving thread's only
  // Started minus finished fibers homed here: incremented relaxed (a new fiber
  // is counted before its start is posted), decremented acq_rel by the fiber's
  // last step, paired with the acquire load in fibers(), so a driver that reads
  // zero also sees everything those fibers did.
  std::atomic<std::size_t> live_fibers_{0};
};

// The process-wide pool every constructor that takes an optional Scheduler
// falls back on (StateLane, Activation, Host, BindingTable):
//   - Size: a ThreadPool of min(std::thread::hardware_concurrency(), 4)
//     carriers, at least 1, plus its one timer thread once a timer is armed.
//   - Lifetime: a function-local static, created by the first call (the first
//     such constructor, or a direct call) and destroyed at static destruction,
//     after main returns: it drops its armed timers, runs every item still
//     queued, then joins its carriers ([RT-2.3], [RT-8.5]). A fiber still
//     suspended then is never resumed (its frame is leaked).
//   - Shared: every component that takes the default shares these carriers,
//     so CPU-heavy work in one delays the others' steps.
// Pass your own scheduler instead: in tests (a ManualScheduler: deterministic
// order, virtual time); to size or isolate the carriers of a component; to
// shut down at a point you choose (destroy your ThreadPool before main returns,
// after closing its lanes); and for an object with static storage created
// before the pool's first use, which static destruction would destroy after
// the pool its work runs on.
Scheduler& default_scheduler();

// True while the calling thread runs a posted item of any turnstile scheduler
// (a fiber step, a lane turn, a completion). [RT-6.2]
bool in_framework_context() noexcept;

namespace detail {
// Marks the calling thread as inside a framework context for its lifetime.
class FrameworkContextScope {
 public:
  FrameworkContextScope() noexcept;
  ~FrameworkContextScope();
  FrameworkContextScope(const FrameworkContextScope&) = delete;
  FrameworkContextScope& operator=(const FrameworkContextScope&) = delete;
};

// A one-shot flag a plain thread can block on (mutex + condition variable).
class BlockingLatch {
 public:
  void set() {
    LockGuard lock(mu_);
    set_ = true;
    cv_.notify_all();  // under the lock: the waiter may destroy us once it sees set_
  }
  bool is_set() const {
    LockGuard lock(mu_);
    return set_;
  }
  void wait() {
    UniqueLock lock(mu_);
    while (!set_) cv_.wait(lock.native());
  }

 private:
  mutable Mutex mu_;
  std::condition_variable cv_;
  bool set_ TURNSTILE_GUARDED_BY(mu_) = false;
};
}  // namespace detail

}  // namespace turnstile
