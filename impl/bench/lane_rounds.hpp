// impl/bench/lane_rounds.hpp: the round drivers of lane_bench.cpp's (and
// scale_bench.cpp's) throughput benchmarks, written once and handed each peer's
// post as a callable, so every peer runs the very same loop and checks.
//
//   try_post_or_count  try_post, a refusal counted (the turnstile rows).
//   lane_round_trips  a fiber awaits lane.run(++work), one turn in flight at a
//                 time, once per benchmark iteration.
//   post_rounds   P producers (Producers) each post kPerProducer items to one
//                 lane per round; a round ends when the last item has run.
//                 Reports proc_cpu_ns_per_req: the process's CPU per item.
//   many_rounds   this thread posts per_lane items to each of the lanes per
//                 round, round robin; a round ends when every lane has run its share.
// Items update lane-owned state (Tally, LaneTally): plain fields, serialised by
// the lane under test. The checks report a lost item or a FIFO break with
// SkipWithError.
#pragma once

#include <benchmark/benchmark.h>

#include <atomic>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "lane_peers.hpp"
#include "turnstile/state_lane.hpp"

namespace turnstile_bench {

constexpr long kPerProducer = 10000;  // items per producer per round
constexpr int kLanes = 1000;
constexpr long kPerLane = 10;  // items per lane per round

inline void check(benchmark::State& state, bool ok, const char* what) {
  if (!ok) state.SkipWithError(what);
}

inline turnstile::Task<> lane_round_trips(benchmark::State& state, turnstile::StateLane& lane, long& work) {
  for (auto _ : state) {
    turnstile::Task<> t = lane.run([&work] { ++work; });  // a named local: see the GCC co_await pitfall
    co_await std::move(t);
  }
}

// lane.try_post(f), counting a refusal in `refused` (relaxed: read once the
// carriers have joined).
template <class F>
void try_post_or_count(turnstile::StateLane& lane, std::atomic<long>& refused, F f) {
  if (!lane.try_post(std::move(f))) refused.fetch_add(1, std::memory_order_relaxed);
}

// Lane-owned state of the throughput rounds: touched only by items, which the lane
// under test serialises (plain fields: that is what a lane is for). On a cache
// line of its own: the drain writes it at every item, and the producers read
// the post callable's captures at every item. Those captures sit beside it in
// the benchmark's frame, so without the alignment whether they shared a line
// with it depended on where the process's stack started (ASLR). Every peer's
// round then ran 1.5-2x slower in some processes than in others, steady within
// each (impl/bench/README.md, "The throughput rounds' false sharing").
struct alignas(64) Tally {
  long count = 0;
  long target = 0;  // written by the driver before it posts the round's items
  long next_seq[2] = {0, 0};
  bool fifo_ok = true;
  Flag* round_done = nullptr;
  // tag = seq << 1 | producer: one word, so every peer's item is two words.
  void item(long tag) noexcept {
    const auto p = static_cast<int>(tag & 1);
    const long seq = tag >> 1;
    if (seq != next_seq[p]) fifo_ok = false;  // FIFO per producer
    next_seq[p] = seq + 1;
    if (++count == target) round_done->set();
  }
};

// A value on cache lines of its own (see Tally).
template <class T>
struct alignas(64) OwnLines {
  T value;
};

// Runs the rounds: each producer calls post(tag) kPerProducer times. The
// producers read `post`'s captures at every item: they get lines of their own,
// as the Tally does.
template <class Post>
void post_rounds(benchmark::State& state, Tally& tally, Flag& done, Post post) {
  const int producers = static_cast<int>(state.range(0));
  long round = 0;  // written between rounds; published to helpers by Producers::round
  OwnLines<Post> held{std::move(post)};
  Producers gang(producers, [&](int p) {
    const long base = round * kPerProducer;
    for (long s = 0; s < kPerProducer; ++s) held.value(((base + s) << 1) | p);
  });
  const double cpu0 = process_cpu_ns();
  for (auto _ : state) {
    tally.target = (round + 1) * kPerProducer * producers;
    gang.round();
    done.wait_and_rearm();
    ++round;
  }
  const double cpu1 = process_cpu_ns();
  const long items = static_cast<long>(state.iterations()) * kPerProducer * producers;
  state.SetItemsProcessed(items);
  // Every thread's CPU per item: producers, the drain and a polling carrier.
  if (items > 0) state.counters["proc_cpu_ns_per_req"] = (cpu1 - cpu0) / static_cast<double>(items);
}
inline void check_tally(benchmark::State& state, const Tally& tally, long refused) {
  const long expected = static_cast<long>(state.iterations()) * kPerProducer * state.range(0);
  check(state, refused == 0, "try_post refused an item");
  check(state, tally.count == expected, "lost item");
  check(state, tally.fifo_ok, "FIFO per producer broken");
}

// The many-lanes rounds (here and in scale_bench.cpp): one Many per benchmark,
// one LaneTally per lane.
struct Many {
  long target = 0;                  // a lane's count at the end of this round; set before posting
  std::atomic<long> lanes_left{0};  // acq_rel decrements; the last one sets done
  Flag done;
};
struct alignas(64) LaneTally {  // one per lane, lane-owned
  long count = 0;
  Many* many = nullptr;
  void item() noexcept {
    if (++count == many->target && many->lanes_left.fetch_sub(1, std::memory_order_acq_rel) == 1)
      many->done.set();
  }
};

// per_lane items to each lane (one LaneTally per lane) per round, round robin
// over the lanes: post(i, tally) queues one item on lane i (lane_bench: kLanes
// lanes, kPerLane each; scale_bench: kTotal items spread over N lanes).
template <class Post>
void many_rounds(benchmark::State& state, std::vector<LaneTally>& tallies, Many& many, long per_lane,
                 Post post) {
  const long lanes = static_cast<long>(tallies.size());
  long round = 0;
  for (auto _ : state) {
    many.target = (round + 1) * per_lane;
    // Relaxed: published to the items by the lanes' queues (posted after this).
    many.lanes_left.store(lanes, std::memory_order_relaxed);
    for (long k = 0; k < per_lane; ++k)
      for (long i = 0; i < lanes; ++i) post(i, &tallies[static_cast<std::size_t>(i)]);
    many.done.wait_and_rearm();
    ++round;
  }
  state.SetItemsProcessed(state.iterations() * lanes * per_lane);
}
inline void check_many(benchmark::State& state, const std::vector<LaneTally>& tallies, long refused) {
  check(state, refused == 0, "try_post refused an item");
  for (const auto& t : tallies)
    if (t.count != static_cast<long>(state.iterations()) * kPerLane) return check(state, false, "lost item");
}

}  // namespace turnstile_bench
