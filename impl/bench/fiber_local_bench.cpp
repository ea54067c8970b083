// impl/bench/fiber_local_bench.cpp: FiberLocal / FiberContext costs and their
// peer baselines, measured in one binary so ci/bench can divide one by the other.
//
// Every turnstile benchmark runs twice: `thread` on a plain thread (the
// per-thread fallback slot, [FL-5.2]) and `fiber` inside a fiber (sync_wait of a
// task that runs the loop, so the slot is reached through current_fiber(),
// [FL-5.1]). Chains are built on the plain thread, captured, and installed in
// the loop's context with FiberContext::run, so both modes read the same chain.
//
//   BM_FL_Get/<mode>/depth:D     get() of a key bound D frames down (D-1 other
//                                keys bound after it, so the walk visits D frames)
//   BM_FL_Miss/<mode>/depth:8    try_get() of an unbound key over 8 frames
//   BM_FL_Where/<mode>           where(v, plain body) + restore, on an 8-frame chain;
//                                counter allocs_per_iter (expected 1: the frame)
//   BM_FL_WhereTask/fiber        co_await where(v, Task body): frame + coroutine frames
//   BM_FL_Capture/<mode>/bindings:N  capture() + drop of the snapshot ([FL-5.3]:
//                                should not depend on N)
//   BM_FL_Run/<mode>             ctx.run(plain body) on an 8-frame snapshot
// Baselines:
//   BM_Base_ThreadLocalRead         a thread_local int read (reloaded every iteration)
//   BM_Base_ThreadLocalReadNoinline the same read through a non-inlined accessor
//   BM_Base_ThreadLocalSwap         save / set / restore of a thread_local pointer
//   BM_Base_BoostFssGet/<where>     boost::fibers::fiber_specific_ptr<int>::get(),
//                                   on the main context and inside a boost fiber
//   BM_Base_BoostFssRebind          scoped rebind through fiber_specific_ptr
//                                   (release, reset(new), restore)
//   BM_Base_SharedPtrCopy           copy + drop of a std::shared_ptr (capture's peer)
#include <benchmark/benchmark.h>

#include <array>
#include <boost/fiber/all.hpp>
#include <cstdint>
#include <memory>

#include "bench_support.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/sync_wait.hpp"

namespace {

using turnstile::FiberContext;
using turnstile::FiberLocal;
using turnstile::Task;
using turnstile_bench::capture_loop;
using turnstile_bench::Mode;
using turnstile_bench::report_allocations;
using turnstile_bench::run_in;
using turnstile_bench::sink;
using turnstile_bench::thread_allocations;

FiberLocal<int> g_target("target");
std::array<FiberLocal<int>, 64> g_others;  // the "other keys" bound in between

// A snapshot with `n` bindings of the other keys (keys reused modulo 64 when n > 64).
FiberContext bind_others(int i, int n) {
  if (i == n) return FiberContext::capture();
  return g_others[static_cast<std::size_t>(i) % g_others.size()].where(
      i, [=] { return bind_others(i + 1, n); });
}
// g_target bound first, then depth-1 other keys on top: a hit walks `depth` frames.
FiberContext chain_with_target(int depth) {
  return g_target.where(42, [=] { return bind_others(0, depth - 1); });
}

// --------------------------------------------------------------- turnstile

void BM_FL_Get(benchmark::State& state, Mode mode) {
  const FiberContext ctx = chain_with_target(static_cast<int>(state.range(0)));
  run_in(state, mode, [&] {
    ctx.run([&] {
      if (g_target.get() != 42) state.SkipWithError("wrong binding");
      for (auto _ : state) {
        int v = g_target.get();  // the value is read, as in the baselines
        sink(v);
      }
    });
  });
}

void BM_FL_Miss(benchmark::State& state, Mode mode) {
  const FiberContext ctx = bind_others(0, static_cast<int>(state.range(0)));
  run_in(state, mode, [&] {
    ctx.run([&] {
      for (auto _ : state) sink(g_target.try_get());
    });
  });
}

void BM_FL_Where(benchmark::State& state, Mode mode) {
  const FiberContext ctx = bind_others(0, 8);
  run_in(state, mode, [&] {
    ctx.run([&] {
      int i = 0;
      const auto a0 = thread_allocations();
      for (auto _ : state) {
        int r = g_target.where(++i, [] { return 1; });
        sink(r);
      }
      report_allocations(state, a0);
      if (g_target.is_bound()) state.SkipWithError("where did not restore");
    });
  });
}

Task<int> one() { co_return 1; }
Task<> where_task_loop(benchmark::State& state) {
  int i = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    int r = co_await g_target.where(++i, [] { return one(); });
    sink(r);
  }
  report_allocations(state, a0);
}
void BM_FL_WhereTask(benchmark::State& state) {
  const FiberContext ctx = bind_others(0, 8);
  turnstile::sync_wait(ctx.run([&] { return where_task_loop(state); }));
}

void BM_FL_Capture(benchmark::State& state, Mode mode) {
  const FiberContext ctx = bind_others(0, static_cast<int>(state.range(0)));
  run_in(state, mode, [&] {
    ctx.run([&] {
      const auto a0 = thread_allocations();
      capture_loop(state);
      report_allocations(state, a0);
    });
  });
}

void BM_FL_Run(benchmark::State& state, Mode mode) {
  const FiberContext snapshot = chain_with_target(8);
  run_in(state, mode, [&] {
    const auto a0 = thread_allocations();
    for (auto _ : state) {
      int r = snapshot.run([] { return 1; });
      sink(r);
    }
    report_allocations(state, a0);
  });
}

// --------------------------------------------------------------- baselines

thread_local int tl_value = 42;
thread_local const int* tl_slot = nullptr;

void BM_Base_ThreadLocalRead(benchmark::State& state) {
  // The address escapes, so tl_value is not folded to the constant 42, and
  // sink's memory clobber forces a fresh load each iteration: nothing is hoisted.
  sink(&tl_value);
  for (auto _ : state) {
    int v = tl_value;
    sink(v);
  }
}

// noipa: neither inlined nor analysed as pure, so each call really happens
// (the same constraint FiberLocal's slot accessor lives under, [FL-5.1]).
[[gnu::noipa]] const int& tl_value_noinline() { return tl_value; }
void BM_Base_ThreadLocalReadNoinline(benchmark::State& state) {
  for (auto _ : state) {
    int v = tl_value_noinline();
    sink(v);
  }
}

// The mutable thread-keyed idiom FiberLocal replaces: save, set, run, restore.
void BM_Base_ThreadLocalSwap(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    const int* saved = tl_slot;
    int v = ++i;
    tl_slot = &v;
    benchmark::ClobberMemory();
    int r = 1;
    tl_slot = saved;
    sink(r);
  }
}

// fiber_specific_ptr works on the thread's main context too (Boost.Fiber gives
// every thread a main context on first use); both placements are measured.
void BM_Base_BoostFssGet(benchmark::State& state, bool in_boost_fiber) {
  boost::fibers::fiber_specific_ptr<int> fsp;
  auto loop = [&] {
    fsp.reset(new int(42));
    for (auto _ : state) sink(fsp.get());
    fsp.reset(nullptr);
  };
  if (in_boost_fiber) {
    boost::fibers::fiber f(loop);
    f.join();
  } else {
    loop();
  }
}

// Scoped rebinding with fiber_specific_ptr: what `where` costs a Boost.Fiber user.
void BM_Base_BoostFssRebind(benchmark::State& state) {
  boost::fibers::fiber_specific_ptr<int> fsp;
  fsp.reset(new int(0));
  int i = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    int* saved = fsp.release();
    fsp.reset(new int(++i));
    int r = *fsp.get();
    fsp.reset(saved);
    sink(r);
  }
  report_allocations(state, a0);
}

void BM_Base_SharedPtrCopy(benchmark::State& state) {
  const auto held = std::make_shared<int>(42);
  for (auto _ : state) {
    std::shared_ptr<int> copy = held;
    benchmark::DoNotOptimize(copy);
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_FL_Get, thread, Mode::kThread)->ArgName("depth")->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_CAPTURE(BM_FL_Get, fiber, Mode::kFiber)->ArgName("depth")->Arg(1)->Arg(8)->Arg(64);
BENCHMARK_CAPTURE(BM_FL_Miss, thread, Mode::kThread)->ArgName("depth")->Arg(8);
BENCHMARK_CAPTURE(BM_FL_Miss, fiber, Mode::kFiber)->ArgName("depth")->Arg(8);
BENCHMARK_CAPTURE(BM_FL_Where, thread, Mode::kThread);
BENCHMARK_CAPTURE(BM_FL_Where, fiber, Mode::kFiber);
BENCHMARK(BM_FL_WhereTask)->Name("BM_FL_WhereTask/fiber");
BENCHMARK_CAPTURE(BM_FL_Capture, thread, Mode::kThread)
    ->ArgName("bindings")->Arg(1)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_CAPTURE(BM_FL_Capture, fiber, Mode::kFiber)
    ->ArgName("bindings")->Arg(1)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_CAPTURE(BM_FL_Run, thread, Mode::kThread);
BENCHMARK_CAPTURE(BM_FL_Run, fiber, Mode::kFiber);

BENCHMARK(BM_Base_ThreadLocalRead);
BENCHMARK(BM_Base_ThreadLocalReadNoinline);
BENCHMARK(BM_Base_ThreadLocalSwap);
BENCHMARK_CAPTURE(BM_Base_BoostFssGet, main_context, false);
BENCHMARK_CAPTURE(BM_Base_BoostFssGet, boost_fiber, true);
BENCHMARK(BM_Base_BoostFssRebind);
BENCHMARK(BM_Base_SharedPtrCopy);

BENCHMARK_MAIN();
