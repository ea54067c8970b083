// impl/bench/scale_bench.cpp: scale curves (issue 16): the cost of one item as
// the number of lanes, the number of carriers and the depth of `where` bindings
// grow, each point beside its peer in the same binary. `ci/bench --plot DIR`
// draws them (impl/bench/plot/bench_plot.py); every name contains "Scale", so
// `ci/bench --filter Scale` runs this suite alone.
//
//   BM_Scale_Lanes/lanes:N/carriers:C       kTotal items per round, posted by this
//                                           thread round robin over N lanes on
//                                           ThreadPool(C) (kTotal/N per lane); a round
//                                           ends when every lane has run its share
//   BM_Scale_StrandLanes/lanes:N/threads:C  the same on N asio::strands of an
//                                           io_context run by C threads
//   BM_Scale_LaneRoundTrip/carriers:C       a fiber on ThreadPool(C) awaits lane.run(),
//                                           one turn in flight at a time
//   BM_Scale_StrandRoundTrip/threads:C      post to a strand; its handler posts the
//                                           continuation to the io_context, which
//                                           issues the next one
//   BM_Scale_LanePost/carriers:C            this thread try_posts kBurst items to one
//                                           lane on ThreadPool(C) per round
//   BM_Scale_StrandPost/threads:C           the same on one strand
//   BM_Scale_Get/<mode>/depth:D             get() of the outermost of D bindings (the
//                                           walk visits D frames), mode thread or fiber
//   BM_Scale_Capture/<mode>/depth:D         FiberContext::capture() + drop under D
//                                           bindings ([FL-5.3]: flat in D)
// C is 1, 2 and std::thread::hardware_concurrency() (deduplicated), N is 1 to
// 100,000 by decades, D is 1 to 1,000 by decades. Every benchmark reports
// items_per_second (one item: a lane item, a round trip, a get, a capture), so the
// plot reads cost per item as 1 / items_per_second. The lane and strand points of
// one shape are registered in alternation (lane N, strand N, lane N+1, ...), so the
// two sides of a ratio are measured minutes apart at most on a loaded machine.
//
// Lanes and strands are created once per call of the benchmark function (Google
// Benchmark calls it a few times while it sizes the iteration count), outside the
// timed loop; one round is 10 to 50 ms on a 2-core machine. Every benchmark checks
// its counters at the end (no lost item, FIFO for the single-lane rounds, the
// right binding) and reports a mismatch with SkipWithError, so ci/bench exits 1.
// allocs_per_item (turnstile rows only) counts the operator new calls the posting
// thread makes per item: alloc_counter.cpp counts per thread, so the carriers'
// allocations are not seen, and Asio's handler memory (std::aligned_alloc,
// asio/detail/memory.hpp) bypasses operator new, so a strand row would read 0.
#include <benchmark/benchmark.h>

#include <asio/post.hpp>
#include <asio/strand.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "lane_peers.hpp"
#include "lane_rounds.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/sync_wait.hpp"

namespace {

using namespace turnstile;
using namespace turnstile_bench;
using AsioStrand = asio::strand<asio::io_context::executor_type>;

constexpr long kTotal = 100000;  // items per round of the many-lanes rounds
constexpr long kBurst = 100000;  // items per round of the single-lane rounds
constexpr std::array<long, 6> kLaneCounts = {1, 10, 100, 1000, 10000, 100000};
constexpr std::array<long, 4> kDepths = {1, 10, 100, 1000};

constexpr const char* kMismatch = "item count mismatch (lost or duplicated item)";

std::vector<long> carrier_counts() {
  const long cores = std::max(1L, static_cast<long>(std::thread::hardware_concurrency()));
  std::vector<long> c = {1, 2, cores};
  std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

void report_item_allocations(benchmark::State& state, std::uint64_t before, long items_per_iter) {
  const double items = static_cast<double>(state.iterations()) * static_cast<double>(items_per_iter);
  state.counters["allocs_per_item"] =
      items > 0 ? static_cast<double>(thread_allocations() - before) / items : 0.0;
}

// ------------------------------------------------------------ many lanes

// kTotal items per round, round robin over the lanes: post(i, share) queues one.
template <class Post>
void lane_rounds(benchmark::State& state, std::vector<LaneTally>& shares, Many& round, bool count_allocs,
                 Post post) {
  const auto a0 = thread_allocations();
  many_rounds(state, shares, round, kTotal / static_cast<long>(shares.size()), post);
  // kTotal / N * N == kTotal: every N of kLaneCounts divides kTotal.
  if (count_allocs) report_item_allocations(state, a0, kTotal);
}
void check_shares(benchmark::State& state, const std::vector<LaneTally>& shares, long refused) {
  check(state, refused == 0, "try_post refused an item");
  const long per_lane = kTotal / static_cast<long>(shares.size());
  for (const auto& s : shares)
    if (s.count != static_cast<long>(state.iterations()) * per_lane) return check(state, false, kMismatch);
}

void BM_Scale_Lanes(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Many round;
  std::vector<LaneTally> shares(n, LaneTally{.many = &round});
  std::atomic<long> refused{0};  // relaxed: read after the pool has joined
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(1)));
  std::vector<std::unique_ptr<StateLane>> lanes;
  lanes.reserve(n);
  for (std::size_t i = 0; i < n; ++i) lanes.push_back(std::make_unique<StateLane>("scale", *pool));
  lane_rounds(state, shares, round, true, [&](long i, LaneTally* s) {
    try_post_or_count(*lanes[static_cast<std::size_t>(i)], refused, [s] { s->item(); });
  });
  pool.reset();  // joins the carriers: every lane is idle from here on
  check_shares(state, shares, refused.load(std::memory_order_relaxed));
}

void BM_Scale_StrandLanes(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Many round;
  std::vector<LaneTally> shares(n, LaneTally{.many = &round});
  IoThreads io(static_cast<int>(state.range(1)));
  std::vector<AsioStrand> strands;
  strands.reserve(n);
  for (std::size_t i = 0; i < n; ++i) strands.push_back(asio::make_strand(io.ioc()));
  lane_rounds(state, shares, round, false, [&](long i, LaneTally* s) {
    asio::post(strands[static_cast<std::size_t>(i)], [s] { s->item(); });
  });
  io.join();
  check_shares(state, shares, 0);
}

// ------------------------------------------------------------ one lane, C carriers

void BM_Scale_LaneRoundTrip(benchmark::State& state) {
  long work = 0;  // lane-owned
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  StateLane lane("scale", *pool);
  sync_wait(*pool, lane_round_trips(state, lane, work));
  pool.reset();  // joins the carriers: the lane is idle from here on
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
  state.SetItemsProcessed(state.iterations());
}

void BM_Scale_StrandRoundTrip(benchmark::State& state) {
  check(state, strand_round_trips(state, static_cast<int>(state.range(0))), "lost turn");
  state.SetItemsProcessed(state.iterations());
}

struct Serial {  // lane-owned
  long count = 0;
  long target = 0;  // set by the driver before it posts a round
  bool fifo_ok = true;
  Flag* done = nullptr;
  void item(long seq) noexcept {
    if (seq != count) fifo_ok = false;  // FIFO: the seq-th item runs seq-th
    if (++count == target) done->set();
  }
};
template <class Post>
void burst_rounds(benchmark::State& state, Serial& serial, Flag& done, bool count_allocs, Post post) {
  long r = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    serial.target = (r + 1) * kBurst;
    for (long s = 0; s < kBurst; ++s) post(r * kBurst + s);
    done.wait_and_rearm();
    ++r;
  }
  if (count_allocs) report_item_allocations(state, a0, kBurst);
  state.SetItemsProcessed(state.iterations() * kBurst);
}
void check_serial(benchmark::State& state, const Serial& serial, long refused) {
  check(state, refused == 0, "try_post refused an item");
  check(state, serial.count == static_cast<long>(state.iterations()) * kBurst, kMismatch);
  check(state, serial.fifo_ok, "FIFO broken");
}

void BM_Scale_LanePost(benchmark::State& state) {
  Flag done;
  Serial serial{.done = &done};
  std::atomic<long> refused{0};  // relaxed: read after the pool has joined
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  StateLane lane("scale", *pool);
  burst_rounds(state, serial, done, true, [&](long seq) {
    try_post_or_count(lane, refused, [s = &serial, seq] { s->item(seq); });
  });
  pool.reset();
  check_serial(state, serial, refused.load(std::memory_order_relaxed));
}

void BM_Scale_StrandPost(benchmark::State& state) {
  Flag done;
  Serial serial{.done = &done};
  IoThreads io(static_cast<int>(state.range(0)));
  AsioStrand strand = asio::make_strand(io.ioc());
  burst_rounds(state, serial, done, false,
               [&](long seq) { asio::post(strand, [s = &serial, seq] { s->item(seq); }); });
  io.join();
  check_serial(state, serial, 0);
}

// ------------------------------------------------------------ where depth

FiberLocal<int> g_outer("outer");
std::array<FiberLocal<int>, 64> g_keys;  // the bindings above it (reused modulo 64)

FiberContext bind_above(long i, long n) {
  if (i == n) return FiberContext::capture();
  return g_keys[static_cast<std::size_t>(i) % g_keys.size()].where(static_cast<int>(i),
                                                                   [=] { return bind_above(i + 1, n); });
}
// g_outer bound first, depth-1 bindings on top of it: get() of g_outer walks `depth` frames.
FiberContext chain(long depth) {
  return g_outer.where(42, [=] { return bind_above(0, depth - 1); });
}

void BM_Scale_Get(benchmark::State& state, Mode mode) {
  const FiberContext ctx = chain(state.range(0));
  run_in(state, mode, [&] {
    ctx.run([&] {
      if (g_outer.get() != 42) return state.SkipWithError("wrong binding");
      for (auto _ : state) {
        int v = g_outer.get();
        sink(v);
      }
      state.SetItemsProcessed(state.iterations());
    });
  });
}

void BM_Scale_Capture(benchmark::State& state, Mode mode) {
  const FiberContext ctx = chain(state.range(0));
  run_in(state, mode, [&] {
    ctx.run([&] {
      const auto a0 = thread_allocations();
      capture_loop(state);
      report_item_allocations(state, a0, 1);
      state.SetItemsProcessed(state.iterations());
      const FiberContext last = FiberContext::capture();
      check(state, last.run([] { return g_outer.get(); }) == 42, "capture lost the outer binding");
    });
  });
}

// ------------------------------------------------------------ registration

void register_all() {
  const std::vector<long> carriers = carrier_counts();
  for (long c : carriers)
    for (long n : kLaneCounts) {
      benchmark::RegisterBenchmark("BM_Scale_Lanes", BM_Scale_Lanes)
          ->ArgNames({"lanes", "carriers"})->Args({n, c})->UseRealTime();
      benchmark::RegisterBenchmark("BM_Scale_StrandLanes", BM_Scale_StrandLanes)
          ->ArgNames({"lanes", "threads"})->Args({n, c})->UseRealTime();
    }
  for (long c : carriers) {
    benchmark::RegisterBenchmark("BM_Scale_LaneRoundTrip", BM_Scale_LaneRoundTrip)
        ->ArgName("carriers")->Arg(c)->UseRealTime();
    benchmark::RegisterBenchmark("BM_Scale_StrandRoundTrip", BM_Scale_StrandRoundTrip)
        ->ArgName("threads")->Arg(c)->UseRealTime();
    benchmark::RegisterBenchmark("BM_Scale_LanePost", BM_Scale_LanePost)
        ->ArgName("carriers")->Arg(c)->UseRealTime();
    benchmark::RegisterBenchmark("BM_Scale_StrandPost", BM_Scale_StrandPost)
        ->ArgName("threads")->Arg(c)->UseRealTime();
  }
  for (auto [mode, name] : {std::pair{Mode::kThread, "thread"}, std::pair{Mode::kFiber, "fiber"}})
    for (long d : kDepths) {
      benchmark::RegisterBenchmark((std::string("BM_Scale_Get/") + name).c_str(), BM_Scale_Get, mode)
          ->ArgName("depth")->Arg(d);
      benchmark::RegisterBenchmark((std::string("BM_Scale_Capture/") + name).c_str(), BM_Scale_Capture, mode)
          ->ArgName("depth")->Arg(d);
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
