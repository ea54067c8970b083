// test_support.hpp: small helpers shared by the runtime's unit suites.
//
// - TestFrame / make_frame(): distinct binding frames, so a fiber's context slot
//   (detail::current_context()) can hold a recognisable head without FiberLocal.
// - FallbackContextGuard: restores the calling thread's fallback context slot.
// - LeakCheckDisabled: for the one test that must abandon a suspended fiber.
// - carrier_thread_id(): the calling thread's id, never folded across a co_await.
// - Boom, Gate, CountDown, HandlerGuard, Lcg, run_random, replay: from the test-support
//   library (impl/tests/support/turnstile_test/).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/guards.hpp"
#include "turnstile_test/latch.hpp"
#include "turnstile_test/outcome.hpp"
#include "turnstile_test/manual_runs.hpp"

// AddressSanitizer (and its leak checker) is on: GCC says __SANITIZE_ADDRESS__,
// clang 14 only __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define TURNSTILE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TURNSTILE_TEST_ASAN 1
#endif
#endif
#if defined(TURNSTILE_TEST_ASAN)
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

using turnstile_test::Boom;
using turnstile_test::CountDown;
using turnstile_test::Gate;
using turnstile_test::HandlerGuard;
using turnstile_test::Lcg;
using turnstile_test::replay;
using turnstile_test::run_random;

// Allocations made by this thread while alive are not reported as leaks.
class LeakCheckDisabled {
 public:
#if defined(TURNSTILE_TEST_ASAN)
  LeakCheckDisabled() { __lsan_disable(); }
  ~LeakCheckDisabled() { __lsan_enable(); }
#else
  LeakCheckDisabled() {}   // user-provided: a guard object is not an unused variable
  ~LeakCheckDisabled() {}  // NOLINT(modernize-use-equals-default)
#endif
  LeakCheckDisabled(const LeakCheckDisabled&) = delete;
  LeakCheckDisabled& operator=(const LeakCheckDisabled&) = delete;
};

// The calling thread's id, read afresh at every call. std::this_thread::get_id()
// is pthread_self(), which glibc declares __attribute__((const)); inside a
// coroutine clang -O2 reuses a value read before a co_await that resumed on
// another carrier (measured: clang 14; GCC 12 does not). A call through a
// volatile function pointer cannot be folded.
inline std::thread::id carrier_thread_id() {
  static std::thread::id (*volatile read)() = [] { return std::this_thread::get_id(); };
  return read();
}

// The order items started in, written by the items themselves (one carrier,
// or several under the mutex): the ThreadPool order tests' record.
struct StartOrder {
  std::mutex mu;
  std::vector<int> ids;
  void add(int id) {
    std::lock_guard lock(mu);
    ids.push_back(id);
  }
  int position_of(int id) {
    std::lock_guard lock(mu);
    for (std::size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == id) return static_cast<int>(i);
    return -1;
  }
};

}  // namespace tt
