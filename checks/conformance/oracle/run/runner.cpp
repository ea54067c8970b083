// oracle/run/runner.cpp: run_scenario, a scenario interpreted on the reference
// core (StateLane, FiberLocal<std::string>/FiberContext, Scope/detach,
// Activation<int>) with a JsonLinesTraceSink installed ([TRACE-2.2]).
//
// Ids reach the trace through trace::ScopedLabel: a submission's `item`, a
// read's and a call's `op` are the op id, a spawned or detached fiber is named
// by the op's `fiber`, a capture/install by its `ctx`, a task by its op id.
// Root fibers are detached from the main flow ("main"), in list order.
//
// A `throw` throws ScenarioThrow; the op that ran the body catches it (the
// runtime reports `error`), so the enclosing list goes on. A `call` whose await
// is refused ([TURN-7.1], TurnReentrancyError at the co_await) goes on too; the
// call itself still runs later. A `call` with `await: false` is not awaited.
// Inside a lane turn the body runs synchronously (exec_sync), and an op that
// would wait is started there and not awaited (spec/porting.md section 4): a
// `run` of another lane and a `close` take effect at the call ([LANE-5.8],
// [LANE-7.6]) and are awaited by a tracking fiber of the runner's own
// (`await:<op id>`, detached from the turn), which the run waits for before it
// ends; a `call` is made and not awaited (as with `await: false`). yield,
// spawn, task and turn are not allowed in a turn and fail it.
//
// Limitation: keys are FiberLocal<std::string>; a non-string `value` is bound
// as its JSON text (generated scenarios bind strings only).
#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "oracle/run/runner.hpp"
#include "oracle/run/runner_core.hpp"

namespace turnstile::oracle {

namespace detail {

Runner::Runner(const json& doc, Scheduler& sched) : doc_(doc), sched_(sched) {
  for (const auto& l : doc["lanes"]) {
    auto lane = std::make_unique<StateLane>(l.get<std::string>(), sched);
    lane->set_error_handler([](const StateLane&, std::exception_ptr) {});  // a post's throw
    lanes_.emplace(l.get<std::string>(), std::move(lane));
  }
  for (const auto& k : doc["keys"])
    keys_.emplace(k.get<std::string>(), std::make_unique<FiberLocal<std::string>>(k.get<std::string>()));
  for (const auto& a : doc["activations"]) {
    ActivationOptions options;
    if (a.contains("interleaved"))
      for (const auto& m : a["interleaved"]) options.interleaved_methods.insert(m.get<std::string>());
    const std::string id = a["act"].get<std::string>();
    acts_.emplace(id, std::make_unique<Activation<int>>(id, 0, std::move(options), sched));
  }
}

void Runner::start_roots() {
  for (const auto& f : doc_["fibers"]) {
    started();
    const std::string name = f["fiber"].get<std::string>();
    Task<> t = fiber_body(&f["ops"], Ctx{});
    trace::ScopedLabel label(name);
    detach(sched_, std::move(t));
  }
}

bool Runner::wait_all(std::chrono::seconds limit) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, limit, [this] { return live_ == 0; });
}
bool Runner::all_done() {
  std::lock_guard lock(mu_);
  return live_ == 0;
}

void Runner::trace_counters() const {
  for (const auto& [id, act] : acts_) {
    TraceEvent e("turn.counters");
    e.str("act", id);
    const auto count = [&e](const char* field, std::uint64_t n) {
      TraceValue v;
      v.kind = TraceValue::Kind::integer;
      v.integer = static_cast<std::int64_t>(n);
      e.value(field, v);
    };
    count("queued", act->queued());
    count("running", act->running());
    count("completed", act->turns_completed());
    count("slow", act->slow_turns());
    trace::emit(e);
  }
}

Task<> Runner::fiber_body(const json* ops, Ctx c) {
  try {
    co_await exec_list(ops, c);
  } catch (...) {
  }
  finished();
}
Task<> Runner::child_body(const json* ops, Ctx c) {
  try {
    co_await exec_list(ops, c);
  } catch (...) {
  }
}

Task<> Runner::exec_list(const json* ops, Ctx c) {
  Scope scope;
  std::exception_ptr error;
  try {
    for (const json& op : *ops) {
      Task<> step = exec_op(op, c, scope);
      co_await std::move(step);
    }
  } catch (...) {
    error = std::current_exception();
  }
  Task<> joined = scope.join();
  co_await std::move(joined);
  if (error) std::rethrow_exception(error);
}

}  // namespace detail

namespace {

using detail::Runner;
using nlohmann::json;

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The objects of a run that never finished (a hang): suspended fibers and busy
// carriers still refer to them, so they are never destroyed; kept reachable.
template <class T>
void park(std::unique_ptr<T> p) {
  static std::mutex mu;
  static auto* parked = new std::vector<std::unique_ptr<T>>();
  std::lock_guard lock(mu);
  parked->push_back(std::move(p));
}

}  // namespace

std::string run_scenario(const Scenario& scenario, const RunOptions& options) {
  std::ostringstream out;
  // On the heap: after a hang on real carriers it is leaked with the objects
  // still in use (finish() makes it drop whatever those threads emit later).
  auto sink_owner = std::make_unique<JsonLinesTraceSink>(out, "turnstile-cpp 0.1", scenario.id,
                                                         options.schedule_seed);
  JsonLinesTraceSink& sink = *sink_owner;
  bool quiescent = true;
  if (options.threads == 0) {
    ManualScheduler sched;
    auto runner = std::make_unique<Runner>(scenario.doc, sched);
    TraceSink* previous = set_trace_sink(&sink);
    runner->start_roots();
    const json schedule = scenario.doc.value("schedule", json::array());
    std::uint64_t rng = options.schedule_seed.value_or(0);
    for (std::size_t k = 0; sched.ready() > 0; ++k) {
      const std::size_t n = sched.ready();
      std::size_t pick = 0;
      if (k < schedule.size()) pick = schedule[k].get<std::uint64_t>() % n;  // the scenario's hint
      else if (options.schedule_seed) pick = splitmix(rng) % n;          // then seeded choices
      sched.run_next(pick);
    }
    quiescent = runner->all_done();
    if (quiescent) runner->trace_counters();
    set_trace_sink(previous);
    if (!quiescent) park(std::move(runner));  // a fiber never finished: its objects stay alive
  } else {
    auto pool = std::make_unique<ThreadPool>(static_cast<unsigned>(options.threads));
    auto runner = std::make_unique<Runner>(scenario.doc, *pool);
    TraceSink* previous = set_trace_sink(&sink);
    runner->start_roots();
    quiescent = runner->wait_all(std::chrono::seconds(30));
    if (quiescent) {
      pool.reset();  // runs whatever is still queued (posted turns), then joins
      runner->trace_counters();
      set_trace_sink(previous);
    } else {  // a hang: the carriers still use these objects; leave them alive
      set_trace_sink(previous);
      sink.finish("timeout");
      std::string text = out.str();
      park(std::move(runner));
      park(std::move(pool));
      park(std::move(sink_owner));
      return text;
    }
  }
  sink.finish(quiescent ? "quiescent" : "timeout");
  return out.str();
}

}  // namespace turnstile::oracle
