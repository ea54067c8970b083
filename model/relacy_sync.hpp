// model/relacy_sync.hpp: RelacySync, the model build's Sync policy.
//
// turnstile's concurrent cores are templates over a `Sync` policy
// (impl/include/turnstile/sync.hpp). The product instantiates them with StdSync
// (std::atomic, std::mutex, plain T); the models instantiate the very same
// templates with RelacySync, whose members have StdSync's shape but are backed
// by Relacy's rl::atomic, rl::var and rl::mutex. Relacy then explores thread
// interleavings and the C++11 memory model's allowed reads for the product's own
// algorithm, and reports data races on every Sync::var access, use of freed
// memory, leaks, deadlocks and failed RL_ASSERTs.
//
// Include order (Relacy redefines new/delete/malloc/free/assert and the
// memory_order_* names as macros): this header includes the standard headers the
// product needs, then <relacy/relacy.hpp>, then removes the memory_order_* macros
// (the product spells std::memory_order_acquire etc.; Relacy's macros would turn
// that into `std::mo_acquire, $`). Include the product's headers between
// "product_headers_begin.hpp" and "product_headers_end.hpp", which hide the
// new/delete macros from them (the product writes `= delete` and `delete this`;
// allocations stay tracked because Relacy also replaces the global operator
// new/delete).
//
// Fidelity notes (also in model/README.md):
//  - Every operation carries its caller's source location (std::source_location
//    default argument; under clang 14 + libstdc++ 12, which lack it, the same
//    from clang's builtins), so Relacy's histories name the product's lines.
//  - compare_exchange with a failure order stronger than Relacy accepts for the
//    given success order (C++17 allows e.g. success=release, failure=acquire;
//    Relacy implements the C++11 rule "failure no stronger than success") is
//    modelled as the CAS with the strongest failure order Relacy accepts followed,
//    on failure only, by an atomic_thread_fence(failure order). For acquire that
//    gives the failed read its acquire edge; it is slightly stronger than the
//    real operation (the fence also upgrades earlier relaxed loads of the same
//    thread), i.e. it can hide, never invent, a missing-acquire bug on such a path.
//  - Default-constructed atomic<T> and var<T> hold T{} (std::atomic<T> value-
//    initialises since C++20; StdSync::var initialises value_{}), so the initial
//    store is recorded as a write by the constructing thread.
#pragma once

// Standard headers first: Relacy's macros would break them.
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <source_location>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "turnstile/source_location.hpp"  // standard headers only: safe before Relacy
#include "turnstile/detail/thread_annotations.hpp"  // <mutex> only: safe before Relacy

#include <relacy/relacy.hpp>

// The product, this policy and the harnesses spell std::memory_order_*; Relacy's
// macros of the same names would append `, $`. Raw rl:: calls use rl::mo_*.
#undef memory_order_relaxed
#undef memory_order_consume
#undef memory_order_acquire
#undef memory_order_release
#undef memory_order_acq_rel
#undef memory_order_seq_cst

namespace turnstile::model {

// The product's SourceLocation (std::source_location, or its stand-in where clang
// 14 with libstdc++ 12 lacks it): every operation records where it was called.
using turnstile::SourceLocation;

inline rl::debug_info here(const SourceLocation& loc) noexcept {
  return rl::debug_info(loc.function_name(), loc.file_name(), static_cast<unsigned>(loc.line()));
}

inline rl::memory_order to_rl(std::memory_order mo) noexcept {
  switch (mo) {
    case std::memory_order::relaxed: return rl::mo_relaxed;
    case std::memory_order::consume: return rl::mo_consume;
    case std::memory_order::acquire: return rl::mo_acquire;
    case std::memory_order::release: return rl::mo_release;
    case std::memory_order::acq_rel: return rl::mo_acq_rel;
    case std::memory_order::seq_cst: return rl::mo_seq_cst;
  }
  return rl::mo_seq_cst;
}

// Strength of a failure (load) order: relaxed < consume < acquire < seq_cst.
inline int load_strength(rl::memory_order mo) noexcept {
  switch (mo) {
    case rl::mo_relaxed: return 0;
    case rl::mo_consume: return 1;
    case rl::mo_acquire: return 2;
    case rl::mo_seq_cst: return 3;
    default: return 0;  // release / acq_rel are not load orders
  }
}

// The strongest failure order Relacy accepts with `success` (the C++11 rule).
inline rl::memory_order strongest_failure_for(rl::memory_order success) noexcept {
  switch (success) {
    case rl::mo_relaxed: return rl::mo_relaxed;
    case rl::mo_consume: return rl::mo_consume;
    case rl::mo_acquire: return rl::mo_acquire;
    case rl::mo_release: return rl::mo_relaxed;
    case rl::mo_acq_rel: return rl::mo_acquire;
    case rl::mo_seq_cst: return rl::mo_seq_cst;
  }
  return rl::mo_relaxed;
}

// std's derivation of a failure order from a single success order.
inline std::memory_order failure_of(std::memory_order success) noexcept {
  switch (success) {
    case std::memory_order::acq_rel: return std::memory_order::acquire;
    case std::memory_order::release: return std::memory_order::relaxed;
    default: return success;
  }
}

}  // namespace turnstile::model

// `= delete` below must not meet Relacy's `delete` macro.
#pragma push_macro("delete")
#undef delete

namespace turnstile {

struct RelacySync {
  // Sync::atomic<T>: std::atomic's operations used by the cores, each taking an
  // explicit std::memory_order.
  template <class T>
  class atomic {
   public:
    atomic() { impl_.store(T{}, rl::mo_relaxed, RL_INFO); }
    // Not explicit, like std::atomic(T): `atomic<T> a{v}` and `a{v}` members work.
    atomic(T v, model::SourceLocation loc = model::SourceLocation::current()) {
      impl_.store(v, rl::mo_relaxed, model::here(loc));
    }
    atomic(const atomic&) = delete;
    atomic& operator=(const atomic&) = delete;

    T load(std::memory_order mo = std::memory_order::seq_cst,
           model::SourceLocation loc = model::SourceLocation::current()) const {
      return impl_.load(model::to_rl(mo), model::here(loc));
    }
    void store(T v, std::memory_order mo = std::memory_order::seq_cst,
               model::SourceLocation loc = model::SourceLocation::current()) {
      impl_.store(v, model::to_rl(mo), model::here(loc));
    }
    T exchange(T v, std::memory_order mo = std::memory_order::seq_cst,
               model::SourceLocation loc = model::SourceLocation::current()) {
      return impl_.exchange(v, model::to_rl(mo), model::here(loc));
    }
    template <class D>
    T fetch_add(D d, std::memory_order mo = std::memory_order::seq_cst,
                model::SourceLocation loc = model::SourceLocation::current()) {
      return impl_.fetch_add(d, model::to_rl(mo), model::here(loc));
    }
    template <class D>
    T fetch_sub(D d, std::memory_order mo = std::memory_order::seq_cst,
                model::SourceLocation loc = model::SourceLocation::current()) {
      return impl_.fetch_sub(d, model::to_rl(mo), model::here(loc));
    }

    bool compare_exchange_weak(T& expected, T desired, std::memory_order success,
                               std::memory_order failure,
                               model::SourceLocation loc = model::SourceLocation::current()) {
      return cas(true, expected, desired, success, failure, loc);
    }
    bool compare_exchange_weak(T& expected, T desired,
                               std::memory_order mo = std::memory_order::seq_cst,
                               model::SourceLocation loc = model::SourceLocation::current()) {
      return cas(true, expected, desired, mo, model::failure_of(mo), loc);
    }
    bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                                 std::memory_order failure,
                                 model::SourceLocation loc = model::SourceLocation::current()) {
      return cas(false, expected, desired, success, failure, loc);
    }
    bool compare_exchange_strong(T& expected, T desired,
                                 std::memory_order mo = std::memory_order::seq_cst,
                                 model::SourceLocation loc = model::SourceLocation::current()) {
      return cas(false, expected, desired, mo, model::failure_of(mo), loc);
    }

   private:
    bool cas(bool weak, T& expected, T desired, std::memory_order success,
             std::memory_order failure, const model::SourceLocation& loc) {
      const rl::debug_info info = model::here(loc);
      const rl::memory_order s = model::to_rl(success);
      const rl::memory_order f = model::to_rl(failure);
      const rl::memory_order cap = model::strongest_failure_for(s);
      const bool emulate = model::load_strength(f) > model::load_strength(cap);
      const rl::memory_order native_f = emulate ? cap : f;
      const bool ok = weak ? impl_.compare_exchange_weak(expected, desired, s, info, native_f, info)
                           : impl_.compare_exchange_strong(expected, desired, s, info, native_f, info);
      // See the fidelity note at the top: the failed read gets its order from a fence.
      if (!ok && emulate)
        rl::atomic_thread_fence(f == rl::mo_consume ? rl::mo_acquire : f, info);
      return ok;
    }

    rl::atomic<T> impl_;
  };

  // Sync::var<T>: shared plain data. Every access is checked for data races.
  template <class T>
  class var {
   public:
    var() : impl_(T{}) {}
    explicit var(T v) : impl_(std::move(v)) {}
    var(const var&) = delete;
    var& operator=(const var&) = delete;

    T load(model::SourceLocation loc = model::SourceLocation::current()) const {
      return impl_(model::here(loc)).load();
    }
    void store(T v, model::SourceLocation loc = model::SourceLocation::current()) {
      impl_(model::here(loc)).store(std::move(v));
    }

   private:
    rl::var<T> impl_;
  };

  // Sync::mutex: BasicLockable, a capability to clang's thread-safety analysis
  // as StdSync's is, so the cores' annotations check the model build too.
  class TURNSTILE_CAPABILITY("mutex") mutex {
   public:
    mutex() = default;
    mutex(const mutex&) = delete;
    mutex& operator=(const mutex&) = delete;
    void lock(model::SourceLocation loc = model::SourceLocation::current()) TURNSTILE_ACQUIRE() {
      impl_.lock(model::here(loc));
    }
    void unlock(model::SourceLocation loc = model::SourceLocation::current()) TURNSTILE_RELEASE() {
      impl_.unlock(model::here(loc));
    }
    // For harness code that waits on an rl::condition_variable with this mutex.
    rl::mutex& native() noexcept { return impl_; }

   private:
    rl::mutex impl_;
  };

  // Sync::condition_variable: Relacy's, so a lost notify is a deadlock the
  // search reports (a spurious wake-up is explored by the random search only:
  // Relacy allows them under its random scheduler).
  class condition_variable {
   public:
    condition_variable() = default;
    condition_variable(const condition_variable&) = delete;
    condition_variable& operator=(const condition_variable&) = delete;
    void wait(mutex& mu, model::SourceLocation loc = model::SourceLocation::current())
        TURNSTILE_REQUIRES(mu) {
      impl_.wait(mu.native(), model::here(loc));
    }
    // Relacy times a timed wait out at any point of its choosing (the
    // deadline's value plays no part): every wake-up order is explored. True
    // when it timed out, and also after a spurious wake-up (Relacy reports
    // both as "not notified"): a core treats both alike (it looks again under
    // the mutex), so the model explores that path too.
    template <class Clock, class Duration>
    bool wait_until(mutex& mu, const std::chrono::time_point<Clock, Duration>&,
                    model::SourceLocation loc = model::SourceLocation::current())
        TURNSTILE_REQUIRES(mu) {
      return !impl_.wait_for(mu.native(), std::chrono::nanoseconds(0), model::here(loc));
    }
    void notify_one(model::SourceLocation loc = model::SourceLocation::current()) {
      impl_.notify_one(model::here(loc));
    }
    void notify_all(model::SourceLocation loc = model::SourceLocation::current()) {
      impl_.notify_all(model::here(loc));
    }

   private:
    rl::condition_variable impl_;
  };

  // Sync::pause(): one round of a polling loop is a scheduling point, so the
  // search interleaves other threads between a poller's reads.
  static void pause(model::SourceLocation loc = model::SourceLocation::current()) {
    rl::yield(1, model::here(loc));
  }
  // Sync::yield(): the same scheduling point.
  static void yield(model::SourceLocation loc = model::SourceLocation::current()) {
    rl::yield(1, model::here(loc));
  }
};

}  // namespace turnstile

#pragma pop_macro("delete")
