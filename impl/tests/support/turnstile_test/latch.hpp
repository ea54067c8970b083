// turnstile_test/latch.hpp: latches that order real threads in tests without sleeps.
//
// - Gate: one-shot. wait() blocks the calling thread until some thread calls open();
//   open() happens-before every wait() that returns (the mutex pairs them).
// - CountDown: wait() blocks until count_down() was called `n` times.
//
// Both block a thread: call wait() from a plain thread or from a carrier that may be
// held (never from a ManualScheduler item the same thread must run later). Thread
// safe; no spurious wake-ups reach the caller.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace turnstile_test {

class Gate {
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

class CountDown {
 public:
  explicit CountDown(std::size_t n) : left_(n) {}
  void count_down() {
    std::lock_guard lock(mu_);
    if (left_ > 0 && --left_ == 0) cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t left_;
};

}  // namespace turnstile_test
