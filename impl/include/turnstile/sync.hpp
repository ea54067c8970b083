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
//
// The product instantiates cores with `StdSync` (std::atomic, std::mutex and a
// plain T). `model/relacy_sync.hpp` instantiates the very same templates with
// Relacy's rl::atomic, rl::mutex and rl::var, so the model checker explores the
// product's own algorithm, not a copy of it ("one algorithm, two builds").
//
// Thread safety: as the underlying primitive. Nothing here allocates.
#pragma once

#include <atomic>
#include <mutex>
#include <utility>

#include "turnstile/detail/thread_annotations.hpp"

namespace turnstile {

struct StdSync {
  template <class T>
  using atomic = std::atomic<T>;

  using mutex = detail::Mutex;  // std::mutex, annotated for -Wthread-safety

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
