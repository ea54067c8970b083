// trace_cost_bench: what an emission point costs while no TraceSink is
// installed ([TRACE-4.3]: one relaxed atomic load and a branch, no allocation).
//
// Measured, never asserted. FiberLocal<int> is traced (its reads and wheres
// carry an emission point); FiberLocal<Opaque> has the same layout and code
// path but a type the trace does not render, so the compiler drops its
// emission points: the difference between the two pairs is the sink-off cost.
//
//   cmake --preset bench && cmake --build --preset bench --target turnstile_trace_cost_bench
//   build/bench/checks/conformance/reference/turnstile_trace_cost_bench
#include <benchmark/benchmark.h>

#include "turnstile/trace.hpp"
#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;

struct Opaque {
  int v;
};

FiberLocal<int> traced_key("traced");
FiberLocal<Opaque> untraced_key("untraced");

void BM_EmissionPointOff(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(trace::on());
}
BENCHMARK(BM_EmissionPointOff);

void BM_ReadTracedType(benchmark::State& state) {
  traced_key.where(1, [&] {
    for (auto _ : state) benchmark::DoNotOptimize(traced_key.try_get());
  });
}
BENCHMARK(BM_ReadTracedType);

void BM_ReadUntracedType(benchmark::State& state) {
  untraced_key.where(Opaque{1}, [&] {
    for (auto _ : state) benchmark::DoNotOptimize(untraced_key.try_get());
  });
}
BENCHMARK(BM_ReadUntracedType);

void BM_WhereTracedType(benchmark::State& state) {
  for (auto _ : state) traced_key.where(1, [] { benchmark::ClobberMemory(); });
}
BENCHMARK(BM_WhereTracedType);

void BM_WhereUntracedType(benchmark::State& state) {
  for (auto _ : state) untraced_key.where(Opaque{1}, [] { benchmark::ClobberMemory(); });
}
BENCHMARK(BM_WhereUntracedType);

void BM_CaptureRunOff(benchmark::State& state) {
  traced_key.where(1, [&] {
    for (auto _ : state) {
      const FiberContext ctx = FiberContext::capture();
      ctx.run([] { benchmark::ClobberMemory(); });
    }
  });
}
BENCHMARK(BM_CaptureRunOff);

void BM_LaneRunRoundTripOff(benchmark::State& state) {
  ManualScheduler s;
  StateLane lane("bench", s);
  int total = 0;
  for (auto _ : state) {
    auto body = [&]() -> Task<> {
      auto work = [&] { return ++total; };
      benchmark::DoNotOptimize(co_await lane.run(work));
    };
    detach(s, body());
    s.run_until_idle();
  }
  auto closing = [&]() -> Task<> { co_await lane.close(); };
  detach(s, closing());
  s.run_until_idle();
}
BENCHMARK(BM_LaneRunRoundTripOff);

}  // namespace

BENCHMARK_MAIN();
