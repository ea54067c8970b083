// turnstile/sync.hpp: the one seam between turnstile's concurrent cores and the
// primitives they run on.
//
// Every concurrent core of turnstile (the completion word of Event/Promise, the
// binding-frame reference count, the lane's queue and state word, the
// activation's serial chain, the wait graph of turns) is a template over a
// `Sync` policy and reaches atomics, mutexes and shared plain data only through
// it:
//
//   Sync::atomic<T>  load/store/exchange/compare_exchange_{weak,strong}/fetch_add/
//                    fetch_sub, each taking an explicit std::memory_order;
//   Sync::var<T>     shared plain (non-atomic) data: load()/store(); the model
//                    build checks every access for data races;
//   Sync::mutex      lock()/unlock() (BasicLockable), a clang thread-safety
//                    capability in both builds: the cores hold it through
//                    detail::BasicLockGuard and mark what it guards.
//   Sync::condition_variable
//                    wait(mu) (mu held: released while waiting, held again on
//                    return; may wake spuriously), wait_until(mu, deadline)
//                    (the same, true when it timed out; the model build may
//                    time it out at any point, and reports a spurious wake-up
//                    as a timeout), notify_one(), notify_all();
//   Sync::pause()    one round of a bounded polling loop (the CPU's spin-wait
//                    hint; the model build makes it a scheduling point);
//   Sync::yield()    gives the core to another thread (the model build: a
//                    scheduling point).
//
// The product instantiates cores with `StdSync` (std::atomic, std::mutex and a
// plain T). `model/relacy_sync.hpp` instantiates the very same templates with
// Relacy's rl::atomic, rl::mutex and rl::var, so the model checker explores the
// product's own algorithm, not a copy of it ("one algorithm, two builds").
//
// Thread safety: as the underlying primitive. Nothing here allocates.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "turnstile/detail/thread_annotations.hpp"

namespace turnstile {

struct StdSync {
  template <class T>
  using atomic = std::atomic<T>;

  using mutex = detail::Mutex;  // std::mutex, annotated for -Wthread-safety

  class condition_variable {
   public:
    // `mu` is held on entry and on return (std::condition_variable::wait).
    void wait(mutex& mu) TURNSTILE_REQUIRES(mu) {
      std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
      cv_.wait(lock);
      lock.release();  // still held: the caller unlocks it
    }
    // As wait(mu), until `deadline` at the latest; true when it timed out.
    template <class Clock, class Duration>
    bool wait_until(mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
        TURNSTILE_REQUIRES(mu) {
      std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
      const bool timed_out = cv_.wait_until(lock, deadline) == std::cv_status::timeout;
      lock.release();  // still held: the caller unlocks it
      return timed_out;
    }
    void notify_one() noexcept { cv_.notify_one(); }
    void notify_all() noexcept { cv_.notify_all(); }

   private:
    std::condition_variable cv_;
  };

  // Gives the core away: a thread that waits for another to finish a short
  // step (which may have been preempted, on a busy machine by the very thread
  // that now waits) lets it run.
  static void yield() noexcept { std::this_thread::yield(); }

  // The spin-wait hint: lets the sibling hyperthread run and saves power while
  // a carrier polls.
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#else
    std::this_thread::yield();
#endif
  }

  // Plain shared data. In the product this is the value itself; in the model it
  // is an rl::var<T>, so an unsynchronised access is reported as a data race.
  template <class T>
  class var {
   public:
    var() = default;
    explicit var(T v) : value_(std::move(v)) {}
    T load() const { return value_; }
    void store(T v) { value_ = std::move(v); }

   private:
    T value_{};
  };
};

}  // namespace turnstile
