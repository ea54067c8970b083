// test_support.hpp: small helpers shared by the runtime's unit suites.
//
// - TestFrame / make_frame(): distinct binding frames, so a fiber's context slot
//   (detail::current_context()) can hold a recognisable head without FiberLocal.
// - FallbackContextGuard: restores the calling thread's fallback context slot.
// - HandlerGuard: restores the unhandled-exception handler.
// - Gate, CountDown: one-shot / counting latches (mutex + condition variable) to
//   order real threads without sleeps.
// - LeakCheckDisabled: for the one test that must abandon a suspended fiber.
// - drive(): runs a ManualScheduler with a chosen sequence of run_next indices.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "turnstile/turnstile.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace tt {

namespace ts = turnstile;

// A binding frame with nothing in it but its identity. Counts live instances so
// tests can check that fibers release the context heads they hold.
class TestFrame final : public ts::detail::Frame {
 public:
  TestFrame() : ts::detail::Frame(&kKey, nullptr) { live.fetch_add(1); }
  ~TestFrame() override { live.fetch_sub(1); }
  static inline std::atomic<int> live{0};

 private:
  static inline const int kKey = 0;
};

inline ts::detail::FrameRef make_frame() {
  return ts::detail::FrameRef::adopt(new TestFrame());
}

// The head of the current context slot (the fiber's, or the thread's fallback).
inline const ts::detail::Frame* context_head() { return ts::detail::current_context().get(); }
inline void set_context(const ts::detail::FrameRef& r) { ts::detail::current_context() = r; }

// Restores the calling plain thread's fallback context slot on exit.
class FallbackContextGuard {
 public:
  FallbackContextGuard() : saved_(ts::detail::current_context()) {}
  ~FallbackContextGuard() { ts::detail::current_context() = std::move(saved_); }
  FallbackContextGuard(const FallbackContextGuard&) = delete;
  FallbackContextGuard& operator=(const FallbackContextGuard&) = delete;

 private:
  ts::detail::FrameRef saved_;
};

// Installs an unhandled-exception handler and restores the previous one on exit.
class HandlerGuard {
 public:
  explicit HandlerGuard(ts::UnhandledExceptionHandler h)
      : previous_(ts::set_unhandled_exception_handler(std::move(h))) {}
  ~HandlerGuard() { ts::set_unhandled_exception_handler(std::move(previous_)); }
  HandlerGuard(const HandlerGuard&) = delete;
  HandlerGuard& operator=(const HandlerGuard&) = delete;

 private:
  ts::UnhandledExceptionHandler previous_;
};

// One-shot gate: wait() blocks until open().
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

// Counting latch: wait() blocks until count_down() was called `n` times.
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

// Allocations made by this thread while alive are not reported as leaks.
class LeakCheckDisabled {
 public:
#if defined(__SANITIZE_ADDRESS__)
  LeakCheckDisabled() { __lsan_disable(); }
  ~LeakCheckDisabled() { __lsan_enable(); }
#else
  LeakCheckDisabled() {}   // user-provided: a guard object is not an unused variable
  ~LeakCheckDisabled() {}  // NOLINT(modernize-use-equals-default)
#endif
  LeakCheckDisabled(const LeakCheckDisabled&) = delete;
  LeakCheckDisabled& operator=(const LeakCheckDisabled&) = delete;
};

// A small deterministic generator for schedule choices (no std::random
// distributions, whose output differs between standard libraries).
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

// Runs `ms` until idle, picking each next item with `rng`; returns the choices.
inline std::vector<std::size_t> run_random(ts::ManualScheduler& ms, Lcg& rng) {
  std::vector<std::size_t> choices;
  while (const std::size_t n = ms.ready()) {
    const std::size_t i = rng.below(n);
    choices.push_back(i);
    ms.run_next(i);
  }
  return choices;
}

// Replays a recorded sequence of run_next indices.
inline void replay(ts::ManualScheduler& ms, const std::vector<std::size_t>& choices) {
  for (std::size_t i : choices) ms.run_next(i);
}

// The calling thread's id, read afresh at every call. std::this_thread::get_id()
// is pthread_self(), which glibc declares __attribute__((const)); inside a
// coroutine clang -O2 reuses a value read before a co_await that resumed on
// another carrier (measured: clang 14; GCC 12 does not). A call through a
// volatile function pointer cannot be folded.
inline std::thread::id carrier_thread_id() {
  static std::thread::id (*volatile read)() = [] { return std::this_thread::get_id(); };
  return read();
}

}  // namespace tt
