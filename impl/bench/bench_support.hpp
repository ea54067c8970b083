// impl/bench/bench_support.hpp: helpers shared by the benchmark binaries.
//
// sink(v): forces the scalar `v` to be computed into a register (so a load
// really happens) and is a compiler memory barrier. Use it instead of
// benchmark::DoNotOptimize for scalars: with g++ 12 and Debian's Google
// Benchmark 1.7.1, DoNotOptimize(int&) uses the constraint "+m,r", and g++
// picks "m" without materialising the value, so the load being measured is
// silently dropped (an empty loop). DoNotOptimize is still right for class
// objects (it uses "+m" alone there).
//
// Allocation counting: alloc_counter.cpp replaces the global operator new (every
// form) with one that counts into a per-thread counter, so a benchmark can
// report allocations per iteration:
//
//   const auto a0 = turnstile_bench::thread_allocations();
//   for (auto _ : state) { ... }
//   turnstile_bench::report_allocations(state, a0);   // counter "allocs_per_iter"
//
// The counter is per thread (a plain thread_local increment, about one cycle,
// so counting does not distort the timings): it sees only the allocations made
// on the thread that runs the benchmark loop. Use it only for loops whose work
// stays on that thread (plain thread, sync_wait's private loop, ManualScheduler,
// Boost.Fiber on one thread).
//
// For work spread over a pool's carriers, process_allocations() sums every
// thread's count (each thread still writes only its own slot), and
//
//   const auto a0 = turnstile_bench::process_allocations();
//   for (auto _ : state) { ... kPerIter units ... }
//   turnstile_bench::report_process_allocations(state, a0, kPerIter, "allocs_per_turn");
//
// reports allocations per unit of work (per turn, per lane item). Read it after
// the work has finished on every thread (the carriers are idle or joined).
// run_in(state, mode, f): runs `f` on this plain thread (Mode::kThread) or as the
// body of a fiber (Mode::kFiber: sync_wait's private loop on this thread), after
// checking that the mode is the one asked for (SkipWithError otherwise).
//
// capture_loop(state): the timed loop of the capture benchmarks, one
// FiberContext::capture() and its drop per iteration.
//
// Flag: a one-shot flag a plain thread waits on, re-armed by the waiter; how
// the drivers wait for a round's end (lane_peers.hpp, runtime_bench.cpp). It
// parks on a condition variable at once. std::atomic::wait (libstdc++) first
// calls sched_yield a few times: beside busy processes, each yield hands the
// core to one of them for up to a time slice, so a waiter still yielding when
// its round ended saw the end a slice late. That charged a few ms to whichever
// peer finished its rounds sooner, more often the faster one. A waiter that
// polls first takes CPU from the threads it waits for on a busy machine
// (impl/bench/README.md, "The drivers' waits"). The setter notifies under the
// mutex: once the waiter holds it after the wake-up, the setter is done with
// the object, which the waiter may then destroy.
//
// process_cpu_ns(): the CPU time of every thread of the process (user + system,
// getrusage(RUSAGE_SELF)), in ns: a carrier that polls before parking, or a
// drain on a carrier, spends CPU that the loop thread's figure does not show.
// process_switches(): the context switches of every thread of the process so
// far (getrusage(RUSAGE_SELF)): voluntary (a wait, a park, a sleep) and
// involuntary (preempted).
#pragma once

#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/sync_wait.hpp"

namespace turnstile_bench {

template <class T>
  requires(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void*))
[[gnu::always_inline]] inline void sink(T v) noexcept {
  asm volatile("" : : "r"(v) : "memory");
}

class Flag {
 public:
  void set() noexcept {
    std::lock_guard lock(mu_);
    set_ = true;
    cv_.notify_one();
  }
  void wait_and_rearm() noexcept {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return set_; });
    set_ = false;  // the next set() belongs to a round the waiter has not posted yet
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;  // guarded by mu_
};

// operator new calls made by the calling thread so far.
std::uint64_t thread_allocations() noexcept;

inline void report_allocations(benchmark::State& state, std::uint64_t before) {
  state.counters["allocs_per_iter"] = benchmark::Counter(
      static_cast<double>(thread_allocations() - before), benchmark::Counter::kAvgIterations);
}

// operator new calls made by every thread of the process so far.
std::uint64_t process_allocations() noexcept;

inline void report_process_allocations(benchmark::State& state, std::uint64_t before,
                                       double per_iteration, const char* name) {
  const double iterations = static_cast<double>(state.iterations()) * per_iteration;
  if (iterations > 0)
    state.counters[name] = static_cast<double>(process_allocations() - before) / iterations;
}

enum class Mode { kThread, kFiber };

template <class F>
turnstile::Task<> body_task(F* f) {
  (*f)();
  co_return;
}

template <class F>
void run_in(benchmark::State& state, Mode mode, F f) {
  auto checked = [&] {
    if (turnstile::on_fiber() != (mode == Mode::kFiber)) {
      state.SkipWithError("not running in the requested mode");
      for (auto _ : state) {
      }
      return;
    }
    f();
  };
  if (mode == Mode::kFiber) {
    turnstile::sync_wait(body_task(&checked));
  } else {
    checked();
  }
}

inline double process_cpu_ns() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const auto ns = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_usec) * 1e3;
  };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

struct Switches {
  long voluntary = 0, involuntary = 0;
  long total() const noexcept { return voluntary + involuntary; }
};
inline Switches process_switches() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return {ru.ru_nvcsw, ru.ru_nivcsw};
}

inline void capture_loop(benchmark::State& state) {
  for (auto _ : state) {
    turnstile::FiberContext snapshot = turnstile::FiberContext::capture();
    benchmark::DoNotOptimize(snapshot);
  }
}

}  // namespace turnstile_bench
