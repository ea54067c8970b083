// impl/bench/caf_bench.cpp: turnstile Activations against CAF 0.17 actors (issue
// 28), the same work in one process, each at 1 and 2 threads (ThreadPool(N)
// carriers against an actor_system with `caf.scheduler.max-threads` = N).
//
// What each side does per operation (so a reader can judge the fairness):
//   round trip     turnstile: a fiber on the pool awaits act.call() of a serial
//                  method that increments the state and returns it; one call in
//                  flight. CAF, event-based: a client actor request()s a server
//                  actor whose handler increments a counter and returns it, and
//                  issues the next request from the .then() handler. CAF,
//                  blocking: a scoped_actor on the benchmark thread request()s
//                  the same server and receive()s the reply.
//   64 in flight   turnstile: 64 act.call()s started, then awaited in order.
//                  CAF: the client sends 64 requests, then counts 64 .then()
//                  replies before the next round. Times are per round of 64.
//   create + call  turnstile: 1,000 Activations constructed, one call each
//                  started, all awaited, all destroyed. CAF: the client spawns
//                  1,000 event-based actors, requests each once, and on the
//                  1,000th reply drops every handle (the actors become
//                  unreachable and CAF destroys them). Times are per 1,000.
// Both sides drive the loop with state.KeepRunning() from inside the runtime (a
// fiber on a carrier; the client actor's handlers on a worker), so neither side
// pays a hand-off to the benchmark thread per iteration; the blocking row is the
// one that does, on purpose (it is CAF's blocking API).
// The *_ParkAtOnce rows run the turnstile side on ThreadPool(N, 0): carriers
// that park as soon as the ready queue is empty, the scheduler before issue 28
// polled (detail/ready_queue.hpp); the *_OnePoller rows run it on
// ThreadPool(N, kDefaultSpinRounds, 1): at most one idle carrier polls, the
// others park at once (the polling cap, [READY-I4]); the *_NoHandOff rows run
// it on ThreadPool(N, kDefaultSpinRounds, kUnlimitedPollers, false): every post
// goes to the shared queue, the scheduler before the hand-off slots ([SLOT-I1]);
// the InFlight_LongPoll rows poll four times as long (kDefaultSpinRounds * 4,
// the default from stop 47 to stop 50);
// the plain rows use the defaults (poll, every idle carrier may, hand-off on).
// Counters, delta over the measured loop, per request: switches_per_req
// (getrusage(RUSAGE_SELF) voluntary + involuntary context switches, every thread
// of the process), invol_switches_per_req (the involuntary ones alone: a thread
// preempted, which a loaded machine adds to both sides), proc_cpu_ns_per_req
// (the process's user + system CPU time, every thread) and allocs_per_req
// (every thread's operator new calls, alloc_counter.cpp; a frame or call record
// served by turnstile's block cache, [RT-1.7], calls no operator new and is not
// counted: set TURNSTILE_BLOCK_CACHE=off to count every one). Every benchmark
// checks the server's count and the replies it received against the
// iterations, and reports a lost reply with SkipWithError.
#include <benchmark/benchmark.h>

#include <caf/all.hpp>

#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "bench_support.hpp"
#include "turnstile/activation.hpp"
#include "turnstile/sync_wait.hpp"

using tick_atom = caf::atom_constant<caf::atom("tick")>;
using go_atom = caf::atom_constant<caf::atom("go")>;

namespace {

using namespace turnstile;

constexpr int kInFlight = 64;    // requests in flight per round
constexpr int kActors = 1000;    // actors created per round

struct Counter {
  long n = 0;
};
using Act = Activation<Counter>;

// What the loop saw: taken at its start and end (on whichever thread ran it).
struct Probe {
  turnstile_bench::Switches sw0, sw1;
  double cpu0 = 0, cpu1 = 0;
  std::uint64_t a0 = 0, a1 = 0;
  long replies = 0;  // replies received
  long last = 0;     // the server's count in the last reply
  bool error = false;
  void start() {
    sw0 = turnstile_bench::process_switches();
    cpu0 = turnstile_bench::process_cpu_ns();
    a0 = turnstile_bench::process_allocations();
  }
  void stop() {
    a1 = turnstile_bench::process_allocations();
    cpu1 = turnstile_bench::process_cpu_ns();
    sw1 = turnstile_bench::process_switches();
  }
  void report(benchmark::State& state, long per_iter, long want_last) const {
    const double reqs = static_cast<double>(state.iterations()) * static_cast<double>(per_iter);
    if (reqs > 0) {
      const long vol = sw1.voluntary - sw0.voluntary;
      const long invol = sw1.involuntary - sw0.involuntary;
      state.counters["switches_per_req"] = static_cast<double>(vol + invol) / reqs;
      state.counters["invol_switches_per_req"] = static_cast<double>(invol) / reqs;
      state.counters["allocs_per_req"] = static_cast<double>(a1 - a0) / reqs;
      state.counters["proc_cpu_ns_per_req"] = (cpu1 - cpu0) / reqs;
    }
    const long want = static_cast<long>(state.iterations()) * per_iter;
    if (error) state.SkipWithError("request failed");
    else if (replies != want || last != want_last) state.SkipWithError("lost reply");
    state.SetItemsProcessed(want);
  }
};

Task<long> tick_method(TurnContext<Counter>& ctx) { co_return ++ctx.state().n; }

// ------------------------------------------------------------ turnstile side

Task<> ts_round_trips(benchmark::State& state, Act& act, Probe& p) {
  p.start();
  while (state.KeepRunning()) {
    Task<long> t = act.call("tick", tick_method);  // named: the GCC co_await pitfall
    p.last = co_await std::move(t);
    ++p.replies;
  }
  p.stop();
}
Task<> ts_in_flight(benchmark::State& state, Act& act, Probe& p) {
  std::vector<Task<long>> pending;
  pending.reserve(kInFlight);
  p.start();
  while (state.KeepRunning()) {
    for (int i = 0; i < kInFlight; ++i) pending.push_back(act.call("tick", tick_method));
    for (auto& t : pending) {
      p.last = co_await std::move(t);
      ++p.replies;
    }
    pending.clear();
  }
  p.stop();
}
void ts_one_actor(benchmark::State& state, bool batch, unsigned spin,
                  unsigned pollers = ThreadPool::kUnlimitedPollers, bool hand_off = true) {
  Probe p;
  auto pool =
      std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)), spin, pollers, hand_off);
  {
    Act act("bench", Counter{}, {}, *pool);
    sync_wait(*pool, batch ? ts_in_flight(state, act, p) : ts_round_trips(state, act, p));
  }
  pool.reset();
  const long per = batch ? kInFlight : 1;
  p.report(state, per, static_cast<long>(state.iterations()) * per);
}
constexpr unsigned kPoll = ThreadPool::kDefaultSpinRounds;
void BM_CafTs_RoundTrip(benchmark::State& state) { ts_one_actor(state, false, kPoll); }
void BM_CafTs_InFlight(benchmark::State& state) { ts_one_actor(state, true, kPoll); }
// The scheduler before issue 28's change, in the same run: ThreadPool(N, 0),
// whose carriers park as soon as the ready queue is empty.
void BM_CafTs_RoundTrip_ParkAtOnce(benchmark::State& state) { ts_one_actor(state, false, 0); }
void BM_CafTs_InFlight_ParkAtOnce(benchmark::State& state) { ts_one_actor(state, true, 0); }
// The polling cap, in the same run: at most one idle carrier polls.
void BM_CafTs_RoundTrip_OnePoller(benchmark::State& state) { ts_one_actor(state, false, kPoll, 1); }
void BM_CafTs_InFlight_OnePoller(benchmark::State& state) { ts_one_actor(state, true, kPoll, 1); }
// A poll four times as long (ThreadPool(N, kDefaultSpinRounds * 4), the
// default until stop 50), in the same run: the trade the poll's length makes
// between time and context switches, which a busy machine tips
// (impl/bench/README.md, "The poll's length on a busy machine").
constexpr unsigned kLongPoll = ThreadPool::kDefaultSpinRounds * 4;
void BM_CafTs_InFlight_LongPoll(benchmark::State& state) { ts_one_actor(state, true, kLongPoll); }
// No hand-off slots, in the same run: every post goes to the shared queue.
constexpr unsigned kAll = ThreadPool::kUnlimitedPollers;
void BM_CafTs_RoundTrip_NoHandOff(benchmark::State& state) { ts_one_actor(state, false, kPoll, kAll, false); }
void BM_CafTs_InFlight_NoHandOff(benchmark::State& state) { ts_one_actor(state, true, kPoll, kAll, false); }

Task<> ts_create_calls(benchmark::State& state, Scheduler& s, Probe& p) {
  std::vector<std::unique_ptr<Act>> acts;
  std::vector<Task<long>> pending;
  acts.reserve(kActors);
  pending.reserve(kActors);
  p.start();
  while (state.KeepRunning()) {
    for (int i = 0; i < kActors; ++i) {
      acts.push_back(std::make_unique<Act>("bench", Counter{}, ActivationOptions{}, s));
      pending.push_back(acts.back()->call("tick", tick_method));
    }
    for (auto& t : pending) {
      p.last = co_await std::move(t);  // each actor's count: 1
      ++p.replies;
    }
    pending.clear();
    acts.clear();
  }
  p.stop();
}
void ts_create_call(benchmark::State& state, unsigned spin, unsigned pollers = ThreadPool::kUnlimitedPollers,
                    bool hand_off = true) {
  Probe p;
  auto pool =
      std::make_unique<ThreadPool>(static_cast<unsigned>(state.range(0)), spin, pollers, hand_off);
  sync_wait(*pool, ts_create_calls(state, *pool, p));
  pool.reset();
  p.report(state, kActors, state.iterations() > 0 ? 1 : 0);
}
void BM_CafTs_CreateCall(benchmark::State& state) { ts_create_call(state, kPoll); }
void BM_CafTs_CreateCall_ParkAtOnce(benchmark::State& state) { ts_create_call(state, 0); }
void BM_CafTs_CreateCall_OnePoller(benchmark::State& state) { ts_create_call(state, kPoll, 1); }
void BM_CafTs_CreateCall_NoHandOff(benchmark::State& state) { ts_create_call(state, kPoll, kAll, false); }

// ------------------------------------------------------------ CAF side

struct CafSystem {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  explicit CafSystem(benchmark::State& state) {
    cfg.set("scheduler.max-threads", static_cast<std::size_t>(state.range(0)));
    cfg.set("logger.verbosity", caf::atom("quiet"));
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

caf::behavior server(caf::event_based_actor*, std::shared_ptr<long> n) {
  return {[n](tick_atom) -> long { return ++*n; }};
}

// Ends a client's loop: the probe's last reading, the benchmark thread released.
void finish(caf::event_based_actor* self, Probe* p, std::promise<void>* done) {
  p->stop();
  done->set_value();
  self->quit();
}

struct Client {
  benchmark::State* state;
  Probe* p;
  std::promise<void>* done;
  caf::actor server;
  int per_round;  // requests per round (1 or kInFlight)
  int left = 0;   // replies still due this round
};

void next_round(caf::event_based_actor* self, std::shared_ptr<Client> c) {
  if (!c->state->KeepRunning()) return finish(self, c->p, c->done);
  c->left = c->per_round;
  for (int i = 0; i < c->per_round; ++i) {
    self->request(c->server, caf::infinite, tick_atom::value)
        .then(
            [self, c](long n) {
              c->p->last = n;
              ++c->p->replies;
              if (--c->left == 0) next_round(self, c);
            },
            [self, c](caf::error&) {
              c->p->error = true;
              finish(self, c->p, c->done);
            });
  }
}
caf::behavior client(caf::event_based_actor* self, std::shared_ptr<Client> c) {
  self->send(self, go_atom::value);
  return {[self, c](go_atom) {
    c->p->start();
    next_round(self, c);
  }};
}

void caf_one_actor(benchmark::State& state, int per_round) {
  Probe p;
  auto n = std::make_shared<long>(0);  // the server's count
  {
    CafSystem caf(state);
    std::promise<void> done;
    auto srv = caf.sys->spawn(server, n);
    caf.sys->spawn(client, std::make_shared<Client>(Client{&state, &p, &done, srv, per_round}));
    done.get_future().wait();
    caf::anon_send_exit(srv, caf::exit_reason::user_shutdown);
  }  // the system's destructor waits for every actor
  p.report(state, per_round, *n);
}
void BM_Base_CafRoundTrip(benchmark::State& state) { caf_one_actor(state, 1); }
void BM_Base_CafInFlight(benchmark::State& state) { caf_one_actor(state, kInFlight); }

void BM_Base_CafBlockingRoundTrip(benchmark::State& state) {
  Probe p;
  auto n = std::make_shared<long>(0);
  {
    CafSystem caf(state);
    auto srv = caf.sys->spawn(server, n);
    {
      caf::scoped_actor self{*caf.sys};
      p.start();
      while (state.KeepRunning()) {
        self->request(srv, caf::infinite, tick_atom::value)
            .receive([&](long v) { p.last = v; ++p.replies; },
                     [&](caf::error&) { p.error = true; });
      }
      p.stop();
    }
    caf::anon_send_exit(srv, caf::exit_reason::user_shutdown);
  }
  p.report(state, 1, *n);
}

struct Creator {
  benchmark::State* state;
  Probe* p;
  std::promise<void>* done;
  std::vector<caf::actor> actors{};
  int left = 0;
};
void create_round(caf::event_based_actor* self, std::shared_ptr<Creator> c) {
  c->actors.clear();  // the last round's actors become unreachable: CAF destroys them
  if (!c->state->KeepRunning()) return finish(self, c->p, c->done);
  c->left = kActors;
  for (int i = 0; i < kActors; ++i) {
    c->actors.push_back(self->spawn(server, std::make_shared<long>(0)));
    self->request(c->actors.back(), caf::infinite, tick_atom::value)
        .then(
            [self, c](long v) {
              c->p->last = v;  // each actor's count: 1
              ++c->p->replies;
              if (--c->left == 0) create_round(self, c);
            },
            [self, c](caf::error&) {
              c->p->error = true;
              finish(self, c->p, c->done);
            });
  }
}
caf::behavior creator(caf::event_based_actor* self, std::shared_ptr<Creator> c) {
  self->send(self, go_atom::value);
  return {[self, c](go_atom) {
    c->p->start();
    c->actors.reserve(kActors);
    create_round(self, c);
  }};
}
void BM_Base_CafCreateCall(benchmark::State& state) {
  Probe p;
  {
    CafSystem caf(state);
    std::promise<void> done;
    caf.sys->spawn(creator, std::make_shared<Creator>(Creator{&state, &p, &done}));
    done.get_future().wait();
  }
  p.report(state, kActors, state.iterations() > 0 ? 1 : 0);
}

}  // namespace

BENCHMARK(BM_CafTs_RoundTrip)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_CafRoundTrip)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_CafBlockingRoundTrip)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_InFlight)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_CafInFlight)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_CreateCall)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_CafCreateCall)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

BENCHMARK(BM_CafTs_RoundTrip_ParkAtOnce)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_InFlight_ParkAtOnce)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_CreateCall_ParkAtOnce)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_InFlight_LongPoll)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_RoundTrip_OnePoller)->ArgName("threads")->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_InFlight_OnePoller)->ArgName("threads")->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_CreateCall_OnePoller)->ArgName("threads")->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_RoundTrip_NoHandOff)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_InFlight_NoHandOff)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_CafTs_CreateCall_NoHandOff)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

BENCHMARK_MAIN();
