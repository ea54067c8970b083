// impl/bench/turns_bench.cpp: Activation turns (issue #5), and a bare
// StateLane::run measured in the same run, so ci/bench can state a turn's
// overhead over a lane turn.
//
//   BM_Turn_RoundTrip/carriers:N     a fiber on ThreadPool(N) awaits act.call() of a
//                                    serial method whose body co_awaits nothing,
//                                    one turn in flight at a time
//   BM_Turn_Serial/yield:Y/carriers:N       kTurnBatch serial calls made at once,
//   BM_Turn_Interleaved/yield:Y/carriers:N  then awaited (turns/s); the body
//                                    co_awaits nothing (Y=0) or one yield() (Y=1)
//   BM_Turn_RoundTripManual          the round trip on a ManualScheduler this thread
//                                    drives: CPU cost and allocations of one turn
//   BM_Turn_ManyActivations/carriers:N  kManyActs activations, kPerAct serial calls
//                                    made at once into each (round robin), then
//                                    awaited: turns of different activations start
//                                    and settle on both carriers at once, so what
//                                    every turn shares across activations (the
//                                    process's wait graph, the block caches' depots)
//                                    is contended (turns/s)
// Counters: allocs_per_iter (ManualScheduler loops: this thread's operator new
// calls per iteration), allocs_per_turn / allocs_per_item (pool loops: every
// thread's calls, per turn or lane item, read once the carriers are joined).
// Baselines (same pool shape, same loops):
//   BM_Base_LaneRunRoundTrip/carriers:N  a fiber awaits lane.run(++n), one at a time
//   BM_Base_LaneRunManual                the same on a ManualScheduler (CPU, allocations)
//   BM_Base_LaneRunBatch/carriers:N      kTurnBatch lane.run() calls, then awaited
//   BM_Base_LaneRunMany/carriers:N       kManyActs lanes, kPerAct run() calls into
//                                        each, round robin, then awaited
// Every benchmark checks the state's counter at the end (a final serial turn reads
// it) and reports a lost turn with SkipWithError.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "turnstile/activation.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/sync_wait.hpp"

namespace {

using namespace turnstile;

constexpr int kTurnBatch = 64;  // calls in flight per iteration of the batch benchmarks
constexpr int kManyActs = 16;   // activations (lanes) of the "many" benchmarks
constexpr int kPerAct = 8;      // calls in flight into each per iteration

struct Counter {
  long n = 0;
};
using Act = Activation<Counter>;

void check(benchmark::State& state, bool ok, const char* what) {
  if (!ok) state.SkipWithError(what);
}

// Reads the state in a final serial turn (after every turn awaited before it).
Task<> read_counter(Act& act, long& out) {
  auto read = [](TurnContext<Counter>& ctx) -> Task<long> { co_return ctx.state().n; };
  Task<long> t = act.call("read", read);  // named locals: see the GCC co_await pitfall
  out = co_await std::move(t);
}

// ------------------------------------------------------------ one turn in flight

// count_allocs: only where the loop stays on this thread (a ManualScheduler).
Task<> turn_round_trips(benchmark::State& state, Act& act, long& seen, bool count_allocs,
                        std::uint64_t& process_a0) {
  auto tick = [](TurnContext<Counter>& ctx) -> Task<> {
    ++ctx.state().n;
    co_return;
  };
  process_a0 = turnstile_bench::process_allocations();
  const auto a0 = turnstile_bench::thread_allocations();
  for (auto _ : state) {
    Task<> t = act.call("tick", tick);
    co_await std::move(t);
  }
  if (count_allocs) turnstile_bench::report_allocations(state, a0);
  Task<> read = read_counter(act, seen);
  co_await std::move(read);
}
void BM_Turn_RoundTrip(benchmark::State& state) {
  long seen = -1;
  std::uint64_t a0 = 0;
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  Act act("bench", Counter{}, {}, *pool);
  sync_wait(*pool, turn_round_trips(state, act, seen, false, a0));
  pool.reset();  // joins the carriers: every turn's fiber has finished
  turnstile_bench::report_process_allocations(state, a0, 1, "allocs_per_turn");
  check(state, seen == static_cast<long>(state.iterations()), "lost turn");
  state.SetItemsProcessed(state.iterations());
}

Task<> lane_round_trips(benchmark::State& state, StateLane& lane, long& work, bool count_allocs,
                        std::uint64_t& process_a0) {
  process_a0 = turnstile_bench::process_allocations();
  const auto a0 = turnstile_bench::thread_allocations();
  for (auto _ : state) {
    Task<> t = lane.run([&work] { ++work; });
    co_await std::move(t);
  }
  if (count_allocs) turnstile_bench::report_allocations(state, a0);
}
void BM_Base_LaneRunRoundTrip(benchmark::State& state) {
  long work = 0;  // lane-owned
  std::uint64_t a0 = 0;
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  StateLane lane("bench", *pool);
  sync_wait(*pool, lane_round_trips(state, lane, work, false, a0));
  pool.reset();
  turnstile_bench::report_process_allocations(state, a0, 1, "allocs_per_item");
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
  state.SetItemsProcessed(state.iterations());
}

// The same two loops on a ManualScheduler driven by this thread: no carrier
// hand-offs, so CPU time and allocations per iteration are the turn's own cost.
void BM_Turn_RoundTripManual(benchmark::State& state) {
  long seen = -1;
  ManualScheduler manual;
  {
    std::uint64_t unused = 0;
    Act act("bench", Counter{}, {}, manual);
    sync_wait(manual, turn_round_trips(state, act, seen, true, unused));
    manual.run_until_idle();  // every turn's fiber has finished
  }
  check(state, seen == static_cast<long>(state.iterations()), "lost turn");
}
void BM_Base_LaneRunManual(benchmark::State& state) {
  long work = 0;
  ManualScheduler manual;
  {
    std::uint64_t unused = 0;
    StateLane lane("bench", manual);
    sync_wait(manual, lane_round_trips(state, lane, work, true, unused));
    manual.run_until_idle();
  }
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
}

// ------------------------------------------------------------ batches (turns/s)

Task<> turn_batches(benchmark::State& state, Act& act, const char* method, bool yield_once,
                    long& seen, std::uint64_t& process_a0) {
  auto plain = [](TurnContext<Counter>& ctx) -> Task<> {
    ++ctx.state().n;
    co_return;
  };
  auto yielding = [](TurnContext<Counter>& ctx) -> Task<> {
    co_await turnstile::yield();  // the turn stays open across the suspension
    ++ctx.state().n;
  };
  std::vector<Task<>> pending;
  pending.reserve(kTurnBatch);
  process_a0 = turnstile_bench::process_allocations();
  for (auto _ : state) {
    for (int i = 0; i < kTurnBatch; ++i)
      pending.push_back(yield_once ? act.call(method, yielding) : act.call(method, plain));
    for (auto& t : pending) co_await std::move(t);
    pending.clear();
  }
  Task<> read = read_counter(act, seen);
  co_await std::move(read);
}
void turn_batch_bench(benchmark::State& state, bool interleaved) {
  long seen = -1;
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(1)));
  ActivationOptions options;
  if (interleaved) options.interleaved_methods = {"peek"};
  Act act("bench", Counter{}, options, *pool);
  std::uint64_t a0 = 0;
  sync_wait(*pool, turn_batches(state, act, interleaved ? "peek" : "tick", state.range(0) != 0, seen, a0));
  pool.reset();
  turnstile_bench::report_process_allocations(state, a0, kTurnBatch, "allocs_per_turn");
  check(state, seen == static_cast<long>(state.iterations()) * kTurnBatch, "lost turn");
  state.SetItemsProcessed(state.iterations() * kTurnBatch);
}
void BM_Turn_Serial(benchmark::State& state) { turn_batch_bench(state, false); }
void BM_Turn_Interleaved(benchmark::State& state) { turn_batch_bench(state, true); }

Task<> lane_batches(benchmark::State& state, StateLane& lane, long& work, std::uint64_t& process_a0) {
  std::vector<Task<>> pending;
  pending.reserve(kTurnBatch);
  process_a0 = turnstile_bench::process_allocations();
  for (auto _ : state) {
    for (int i = 0; i < kTurnBatch; ++i) pending.push_back(lane.run([&work] { ++work; }));
    for (auto& t : pending) co_await std::move(t);
    pending.clear();
  }
}
void BM_Base_LaneRunBatch(benchmark::State& state) {
  long work = 0;
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  StateLane lane("bench", *pool);
  std::uint64_t a0 = 0;
  sync_wait(*pool, lane_batches(state, lane, work, a0));
  pool.reset();
  turnstile_bench::report_process_allocations(state, a0, kTurnBatch, "allocs_per_item");
  check(state, work == static_cast<long>(state.iterations()) * kTurnBatch, "lost turn");
  state.SetItemsProcessed(state.iterations() * kTurnBatch);
}

// ------------------------------------------------- many activations at once

Task<> many_turns(benchmark::State& state, std::vector<std::unique_ptr<Act>>& acts,
                  std::vector<long>& seen, std::uint64_t& process_a0) {
  auto tick = [](TurnContext<Counter>& ctx) -> Task<> {
    ++ctx.state().n;
    co_return;
  };
  std::vector<Task<>> pending;
  pending.reserve(kManyActs * kPerAct);
  process_a0 = turnstile_bench::process_allocations();
  for (auto _ : state) {
    for (int i = 0; i < kPerAct; ++i)
      for (auto& act : acts) pending.push_back(act->call("tick", tick));
    for (auto& t : pending) co_await std::move(t);
    pending.clear();
  }
  for (std::size_t a = 0; a < acts.size(); ++a) {
    Task<> read = read_counter(*acts[a], seen[a]);
    co_await std::move(read);
  }
}
void BM_Turn_ManyActivations(benchmark::State& state) {
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  std::vector<long> seen(kManyActs, -1);
  std::uint64_t a0 = 0;
  std::vector<std::unique_ptr<Act>> acts;
  for (int a = 0; a < kManyActs; ++a)
    acts.push_back(std::make_unique<Act>("bench/" + std::to_string(a), Counter{},
                                         ActivationOptions{}, *pool));
  sync_wait(*pool, many_turns(state, acts, seen, a0));
  pool.reset();  // joins the carriers: every turn's fiber has finished
  turnstile_bench::report_process_allocations(state, a0, kManyActs * kPerAct, "allocs_per_turn");
  bool ok = true;
  for (long n : seen) ok = ok && n == static_cast<long>(state.iterations()) * kPerAct;
  check(state, ok, "lost turn");
  state.SetItemsProcessed(state.iterations() * kManyActs * kPerAct);
}

Task<> many_lane_runs(benchmark::State& state, std::vector<std::unique_ptr<StateLane>>& lanes,
                      std::vector<long>& work, std::uint64_t& process_a0) {
  std::vector<Task<>> pending;
  pending.reserve(kManyActs * kPerAct);
  process_a0 = turnstile_bench::process_allocations();
  for (auto _ : state) {
    for (int i = 0; i < kPerAct; ++i)
      for (std::size_t l = 0; l < lanes.size(); ++l)
        pending.push_back(lanes[l]->run([w = &work[l]] { ++*w; }));
    for (auto& t : pending) co_await std::move(t);
    pending.clear();
  }
}
void BM_Base_LaneRunMany(benchmark::State& state) {
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  std::vector<long> work(kManyActs, 0);  // each lane-owned
  std::uint64_t a0 = 0;
  std::vector<std::unique_ptr<StateLane>> lanes;
  for (int l = 0; l < kManyActs; ++l)
    lanes.push_back(std::make_unique<StateLane>("bench/" + std::to_string(l), *pool));
  sync_wait(*pool, many_lane_runs(state, lanes, work, a0));
  pool.reset();
  turnstile_bench::report_process_allocations(state, a0, kManyActs * kPerAct, "allocs_per_item");
  bool ok = true;
  for (long n : work) ok = ok && n == static_cast<long>(state.iterations()) * kPerAct;
  check(state, ok, "lost turn");
  state.SetItemsProcessed(state.iterations() * kManyActs * kPerAct);
}

}  // namespace

BENCHMARK(BM_Turn_RoundTrip)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_LaneRunRoundTrip)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Turn_RoundTripManual);
BENCHMARK(BM_Base_LaneRunManual);
BENCHMARK(BM_Turn_Serial)->ArgNames({"yield", "carriers"})->ArgsProduct({{0, 1}, {1, 2}})->UseRealTime();
BENCHMARK(BM_Turn_Interleaved)->ArgNames({"yield", "carriers"})->ArgsProduct({{0, 1}, {1, 2}})->UseRealTime();
BENCHMARK(BM_Base_LaneRunBatch)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Turn_ManyActivations)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_LaneRunMany)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();

BENCHMARK_MAIN();
