// lane_support.hpp: helpers for the state lane's unit suite.
//
// - Latch: a one-shot flag a plain thread or a carrier can block on (mutex +
//   condition variable), to order real threads without sleeps.
// - Lcg / drive_random(): deterministic schedule choices for a ManualScheduler.
// - LatePostScheduler: a scheduler whose post() hands the item to a fresh
//   thread and returns only once that thread has run it, as if the posting
//   thread had been preempted right after queueing. It makes "the completer is
//   still inside its call when the waiter has already run" deterministic.
// - ErrorHandlerGuard / UnhandledGuard: restore handlers on exit.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "turnstile/turnstile.hpp"

namespace lt {

namespace ts = turnstile;

class Latch {
 public:
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  bool is_open() const {
    std::lock_guard lock(mu_);
    return open_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Deterministic choices (no std distributions: their output differs between
// standard libraries).
class Lcg {
 public:
  explicit Lcg(std::uint64_t seed) : s_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  std::size_t below(std::size_t n) {
    s_ = s_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((s_ >> 33) % n);
  }

 private:
  std::uint64_t s_;
};

// Runs `ms` until idle, each next item picked by `rng`.
inline void drive_random(ts::ManualScheduler& ms, Lcg& rng) {
  while (const std::size_t n = ms.ready()) ms.run_next(rng.below(n));
}

class LatePostScheduler final : public ts::Scheduler {
 public:
  void post(ts::Runnable& item) override {
    std::thread t([&item] {
      ts::detail::FrameworkContextScope in_item;
      item.run();
    });
    t.join();
  }
};

// Returns the message of the exception `e`, or "" for a non-standard one.
inline std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return {};
  }
}

class UnhandledGuard {
 public:
  explicit UnhandledGuard(ts::UnhandledExceptionHandler h)
      : previous_(ts::set_unhandled_exception_handler(std::move(h))) {}
  ~UnhandledGuard() { ts::set_unhandled_exception_handler(std::move(previous_)); }
  UnhandledGuard(const UnhandledGuard&) = delete;
  UnhandledGuard& operator=(const UnhandledGuard&) = delete;

 private:
  ts::UnhandledExceptionHandler previous_;
};

}  // namespace lt
