// impl/bench/lane_bench.cpp: StateLane against its peers (issue #4), in one
// binary so ci/bench can divide one by the other.
//
//   BM_Lane_RunRoundTrip/carriers:N  a fiber on ThreadPool(N) awaits lane.run(++n),
//                                    one turn in flight at a time (_OnePoller: at
//                                    most one idle carrier polls, [READY-I4];
//                                    _NoHandOff: no hand-off slots, [SLOT-I1])
//   BM_Lane_TryPost/producers:P      P plain threads each try_post kPerProducer items
//                                    to one lane on ThreadPool(1); a round ends when
//                                    the last item has run (items/s)
//   BM_Lane_Many/carriers:N          kLanes lanes on one ThreadPool(N); this thread
//                                    posts kPerLane items to each, round robin
//   BM_Lane_TurnPost, BM_Lane_TurnRun  the uncontended cost of one turn: try_post
//                                    (or run() awaited by a fiber) plus its drain
//                                    step, on a ManualScheduler this thread drives
// Baselines (lane_peers.hpp), same shapes:
//   BM_Base_Strand*      asio::strand on an io_context run by the same thread count.
//                        Round trip: post to the strand; the handler does the work
//                        and posts the continuation to the io_context (outside the
//                        strand, where run()'s awaiter resumes too), which issues
//                        the next one.
//   BM_Base_MutexLane*   MutexLane on the same kind of scheduler; a round trip's
//                        fiber waits on a turnstile Event the work sets.
// Every benchmark checks its counters at the end (no lost item; FIFO per producer
// for the throughput rounds) and reports a mismatch with SkipWithError.
#include <benchmark/benchmark.h>

#include <asio/post.hpp>
#include <asio/strand.hpp>

#include <atomic>
#include <memory>
#include <vector>

#include "bench_support.hpp"
#include "lane_peers.hpp"
#include "lane_rounds.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/sync_wait.hpp"

namespace {

using namespace turnstile;
using namespace turnstile_bench;
using AsioStrand = asio::strand<asio::io_context::executor_type>;

// ------------------------------------------------------------ run() round trip

void lane_run_round_trip(benchmark::State& state, unsigned pollers, bool hand_off = true) {
  long work = 0;  // lane-owned
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)),
                                           ThreadPool::kDefaultSpinRounds, pollers, hand_off);
  StateLane lane("bench", *pool);
  sync_wait(*pool, lane_round_trips(state, lane, work));
  pool.reset();  // joins the carriers: the lane is idle from here on
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
}
void BM_Lane_RunRoundTrip(benchmark::State& state) { lane_run_round_trip(state, ThreadPool::kUnlimitedPollers); }
// The same on a pool where at most one idle carrier polls (the polling cap,
// [READY-I4]), in the same run.
void BM_Lane_RunRoundTrip_OnePoller(benchmark::State& state) { lane_run_round_trip(state, 1); }
// The same with every post in the shared queue (no hand-off slots), same run.
void BM_Lane_RunRoundTrip_NoHandOff(benchmark::State& state) {
  lane_run_round_trip(state, ThreadPool::kUnlimitedPollers, false);
}

// A fiber posts one item at a time and waits on an Event the item sets; with
// count_allocs, reports this thread's allocations per iteration.
Task<> mutex_round_trips(benchmark::State& state, MutexLane& lane, long& work, bool count_allocs) {
  Event done;
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    lane.post([&work, &done] {
      ++work;
      done.set();
    });
    co_await done.wait();
    done.reset();
  }
  if (count_allocs) report_allocations(state, a0);
}
void BM_Base_MutexLaneRoundTrip(benchmark::State& state) {
  long work = 0;
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  MutexLane lane(*pool);
  sync_wait(*pool, mutex_round_trips(state, lane, work, false));
  pool.reset();
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
}

void BM_Base_StrandRoundTrip(benchmark::State& state) {
  check(state, strand_round_trips(state, static_cast<int>(state.range(0))), "lost turn");
}

// ------------------------------------------------------------ post throughput

void BM_Lane_TryPost(benchmark::State& state) {
  Flag done;
  Tally tally{.round_done = &done};
  std::atomic<long> refused{0};  // relaxed: read after the pool has joined
  auto pool = std::make_unique<ThreadPool>(1);
  StateLane lane("bench", *pool);
  post_rounds(state, tally, done, [&](long tag) {
    try_post_or_count(lane, refused, [t = &tally, tag] { t->item(tag); });
  });
  pool.reset();
  check_tally(state, tally, refused.load(std::memory_order_relaxed));
}

void BM_Base_MutexLanePost(benchmark::State& state) {
  Flag done;
  Tally tally{.round_done = &done};
  auto pool = std::make_unique<ThreadPool>(1);
  MutexLane lane(*pool);
  post_rounds(state, tally, done, [&](long tag) { lane.post([t = &tally, tag] { t->item(tag); }); });
  pool.reset();
  check_tally(state, tally, 0);
}

void BM_Base_StrandPost(benchmark::State& state) {
  Flag done;
  Tally tally{.round_done = &done};
  IoThreads io(1);
  AsioStrand strand = asio::make_strand(io.ioc());
  post_rounds(state, tally, done,
              [&](long tag) { asio::post(strand, [t = &tally, tag] { t->item(tag); }); });
  io.join();
  check_tally(state, tally, 0);
}

// ------------------------------------------------------------ many lanes, one pool

void BM_Lane_Many(benchmark::State& state) {
  Many many;
  std::vector<LaneTally> tallies(kLanes, LaneTally{.many = &many});
  std::atomic<long> refused{0};  // relaxed: read after the pool has joined
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  std::vector<std::unique_ptr<StateLane>> lanes;
  for (int i = 0; i < kLanes; ++i) lanes.push_back(std::make_unique<StateLane>("bench", *pool));
  many_rounds(state, tallies, many, kPerLane, [&](long i, LaneTally* t) {
    try_post_or_count(*lanes[static_cast<std::size_t>(i)], refused, [t] { t->item(); });
  });
  pool.reset();
  check_many(state, tallies, refused.load(std::memory_order_relaxed));
}

void BM_Base_MutexLaneMany(benchmark::State& state) {
  Many many;
  std::vector<LaneTally> tallies(kLanes, LaneTally{.many = &many});
  auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)));
  std::vector<std::unique_ptr<MutexLane>> lanes;
  for (int i = 0; i < kLanes; ++i) lanes.push_back(std::make_unique<MutexLane>(*pool));
  many_rounds(state, tallies, many, kPerLane,
              [&](long i, LaneTally* t) { lanes[static_cast<std::size_t>(i)]->post([t] { t->item(); }); });
  pool.reset();
  check_many(state, tallies, 0);
}

void BM_Base_StrandMany(benchmark::State& state) {
  Many many;
  std::vector<LaneTally> tallies(kLanes, LaneTally{.many = &many});
  IoThreads io(static_cast<int>(state.range(0)));
  std::vector<AsioStrand> strands;
  for (int i = 0; i < kLanes; ++i) strands.push_back(asio::make_strand(io.ioc()));
  many_rounds(state, tallies, many, kPerLane, [&](long i, LaneTally* t) {
    asio::post(strands[static_cast<std::size_t>(i)], [t] { t->item(); });
  });
  io.join();
  check_many(state, tallies, 0);
}

// ------------------------------------------------------------ uncontended turn

void BM_Lane_TurnPost(benchmark::State& state) {
  ManualScheduler manual;
  StateLane lane("bench", manual);
  long work = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    lane.try_post([&work] { ++work; });
    manual.run_next();  // the drain step: one turn, then idle
  }
  report_allocations(state, a0);
  manual.run_until_idle();
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
}

Task<> lane_turns(benchmark::State& state, StateLane& lane, long& work) {
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    Task<> t = lane.run([&work] { ++work; });
    co_await std::move(t);
  }
  report_allocations(state, a0);
}
// Runs the fiber driver(work) on `manual` (this thread drives it) to its end,
// then checks that every iteration's turn ran.
template <class Driver>
void drive_turns(benchmark::State& state, ManualScheduler& manual, Driver driver) {
  long work = 0;
  sync_wait(manual, driver(work));
  manual.run_until_idle();
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
}
void BM_Lane_TurnRun(benchmark::State& state) {
  ManualScheduler manual;
  StateLane lane("bench", manual);
  drive_turns(state, manual, [&](long& work) { return lane_turns(state, lane, work); });
}

void BM_Base_MutexLaneTurnPost(benchmark::State& state) {
  ManualScheduler manual;
  MutexLane lane(manual);
  long work = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    lane.post([&work] { ++work; });
    manual.run_next();
  }
  report_allocations(state, a0);
  manual.run_until_idle();
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
}

void BM_Base_MutexLaneTurnRun(benchmark::State& state) {
  ManualScheduler manual;
  MutexLane lane(manual);
  drive_turns(state, manual, [&](long& work) { return mutex_round_trips(state, lane, work, true); });
}

void BM_Base_StrandTurn(benchmark::State& state) {
  asio::io_context ioc(1);
  auto guard = asio::make_work_guard(ioc);
  AsioStrand strand = asio::make_strand(ioc);
  long work = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    asio::post(strand, [&work] { ++work; });
    ioc.run_one();  // the strand's step: one handler
  }
  report_allocations(state, a0);
  guard.reset();
  ioc.run();
  check(state, work == static_cast<long>(state.iterations()), "lost turn");
}

}  // namespace

BENCHMARK(BM_Lane_RunRoundTrip)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Lane_RunRoundTrip_OnePoller)->ArgName("carriers")->Arg(2)->UseRealTime();
BENCHMARK(BM_Lane_RunRoundTrip_NoHandOff)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_StrandRoundTrip)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_MutexLaneRoundTrip)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Lane_TryPost)->ArgName("producers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_StrandPost)->ArgName("producers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_MutexLanePost)->ArgName("producers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Lane_Many)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_StrandMany)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_MutexLaneMany)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Lane_TurnPost);
BENCHMARK(BM_Lane_TurnRun);
BENCHMARK(BM_Base_StrandTurn);
BENCHMARK(BM_Base_MutexLaneTurnPost);
BENCHMARK(BM_Base_MutexLaneTurnRun);

BENCHMARK_MAIN();
