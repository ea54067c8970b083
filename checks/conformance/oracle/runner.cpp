// oracle/runner.cpp: run_scenario, a scenario interpreted on the reference
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
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <turnstile/turnstile.hpp>
#include <turnstile/trace.hpp>

#include "oracle/runner.hpp"

namespace turnstile::oracle {

namespace {

using nlohmann::json;

struct ScenarioThrow : std::runtime_error {
  ScenarioThrow() : std::runtime_error("scenario throw") {}
};

const json& empty_list() {
  static const json e = json::array();
  return e;
}

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Runner {
 public:
  Runner(const json& doc, Scheduler& sched) : doc_(doc), sched_(sched) {
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

  void start_roots() {
    for (const auto& f : doc_["fibers"]) {
      started();
      const std::string name = f["fiber"].get<std::string>();
      Task<> t = fiber_body(&f["ops"], Ctx{});
      trace::ScopedLabel label(name);
      detach(sched_, std::move(t));
    }
  }

  // False when the fibers did not all finish within `limit` (a hang).
  bool wait_all(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return live_ == 0; });
  }
  bool all_done() {
    std::lock_guard lock(mu_);
    return live_ == 0;
  }

  // [TURN-2.3] each activation's counters, read once the run is quiescent
  // (nothing runs, so they agree with the trace up to here).
  void trace_counters() const {
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

 private:
  struct Ctx {
    TurnContext<int>* turn = nullptr;  // inside an activation turn
    TaskContext<int>* task = nullptr;  // inside a ctx.task body
  };

  void started() {
    std::lock_guard lock(mu_);
    ++live_;
  }
  void finished() {
    std::lock_guard lock(mu_);
    if (--live_ == 0) cv_.notify_all();
  }

  static const json* body_of(const json& op) { return op.contains("body") ? &op["body"] : &empty_list(); }
  StateLane& lane(const json& op) { return *lanes_.at(op["lane"].get<std::string>()); }
  FiberLocal<std::string>& key(const json& op) { return *keys_.at(op["key"].get<std::string>()); }
  static std::string value(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }
  FiberContext ctx(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = ctxs_.find(name);
    return it == ctxs_.end() ? FiberContext() : it->second;
  }

  // A root or detached fiber: catches its own throw; counted for wait_all().
  Task<> fiber_body(const json* ops, Ctx c) {
    try {
      co_await exec_list(ops, c);
    } catch (...) {
    }
    finished();
  }
  // A structured child: its throw ends its own body only.
  Task<> child_body(const json* ops, Ctx c) {
    try {
      co_await exec_list(ops, c);
    } catch (...) {
    }
  }

  // An op list: runs its ops in order, then waits for the children it spawned.
  Task<> exec_list(const json* ops, Ctx c) {
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

  Task<> exec_op(const json& op, Ctx c, Scope& scope) {
    const std::string what = op["do"].get<std::string>();
    const std::string id = op["id"].get<std::string>();
    const json* body = body_of(op);
    if (what == "run") {
      auto work = [this, body] { exec_sync(body); };
      Task<> t;
      bool refused = false;
      try {
        trace::ScopedLabel label(id);
        t = lane(op).run(std::move(work));
      } catch (const LaneReentrancyError&) {
        refused = true;
      } catch (const LaneClosedError&) {
        refused = true;
      }
      if (!refused) {
        try {
          co_await std::move(t);
        } catch (const ScenarioThrow&) {
        }
      }
    } else if (what == "close") {
      Task<> t = lane(op).close();
      co_await std::move(t);
    } else if (what == "yield") {
      co_await yield();
    } else if (what == "where") {
      auto fn = [this, body, c]() -> Task<> { co_await exec_list(body, c); };
      try {
        Task<> t = key(op).where(value(op["value"]), fn);
        co_await std::move(t);
      } catch (const ScenarioThrow&) {
      }
    } else if (what == "spawn") {
      Task<> t = child_body(body, c);
      trace::ScopedLabel label(op["fiber"].get_ref<const std::string&>());
      scope.spawn(std::move(t));
    } else if (what == "install") {
      FiberContext snapshot = ctx(op["ctx"].get<std::string>());
      auto fn = [this, body, c]() -> Task<> { co_await exec_list(body, c); };
      try {
        Task<> t;
        {
          trace::ScopedLabel label(op["ctx"].get_ref<const std::string&>());
          t = snapshot.run(fn);
        }
        co_await std::move(t);
      } catch (const ScenarioThrow&) {
      }
    } else if (what == "call") {
      auto fn = [this, body](TurnContext<int>& tc) -> Task<> {
        Ctx inner;
        inner.turn = &tc;
        co_await exec_list(body, inner);
      };
      Task<> t;
      {
        trace::ScopedLabel label(id);
        t = acts_.at(op["act"].get<std::string>())->call(op["method"].get<std::string>(), std::move(fn));
      }
      // `await: false`: the call queues and runs on its own (after the turn
      // that made it, for a self-call); dropping its Task does not cancel it.
      if (op.value("await", true)) {
        try {
          co_await std::move(t);  // [TURN-7.1] refused here when it would close a cycle of waits
        } catch (const ScenarioThrow&) {
        } catch (const TurnReentrancyError&) {
        }
      }
    } else if (what == "task") {
      if (c.turn == nullptr) throw std::logic_error("op '" + id + "': task outside a turn");
      auto fn = [this, body](TaskContext<int>& tc) -> Task<> {
        Ctx inner;
        inner.task = &tc;
        try {
          co_await exec_list(body, inner);
        } catch (...) {
        }
        finished();
      };
      started();
      trace::ScopedLabel label(id);
      c.turn->task(std::move(fn));
    } else if (what == "turn") {
      if (c.task == nullptr) throw std::logic_error("op '" + id + "': turn outside a task");
      auto fn = [this, body](TurnContext<int>& tc) -> Task<> {
        Ctx inner;
        inner.turn = &tc;
        co_await exec_list(body, inner);
      };
      Task<> t;
      {
        trace::ScopedLabel label(id);
        t = c.task->turn(std::move(fn));
      }
      try {
        co_await std::move(t);
      } catch (const ScenarioThrow&) {
      }
    } else {
      exec_common(op, what, id, body);  // post, throw, read, capture, detach
    }
  }

  // The ops that run the same way in a fiber and inside a lane turn.
  void exec_common(const json& op, const std::string& what, const std::string& id, const json* body) {
    if (what == "post") {
      auto work = [this, body] { exec_sync(body); };
      trace::ScopedLabel label(id);
      (void)lane(op).try_post(std::move(work));
    } else if (what == "throw") {
      throw ScenarioThrow();
    } else if (what == "read") {
      trace::ScopedLabel label(id);
      (void)key(op).try_get();
    } else if (what == "capture") {
      const std::string name = op["ctx"].get<std::string>();
      FiberContext snapshot;
      {
        trace::ScopedLabel label(name);
        snapshot = FiberContext::capture();
      }
      std::lock_guard lock(mu_);
      ctxs_[name] = std::move(snapshot);
    } else if (what == "detach") {
      started();
      Task<> t = fiber_body(body, Ctx{});
      trace::ScopedLabel label(op["fiber"].get_ref<const std::string&>());
      detach(sched_, std::move(t));
    } else {
      throw std::logic_error("op '" + id + "': '" + what + "' cannot run here");
    }
  }

  // Awaits `t` (started inside a lane turn, which cannot wait) on a fiber of
  // its own, `await:<op id>`; counted for wait_all() like any fiber.
  void track(Task<> t, const std::string& op_id) {
    started();
    Task<> tracker = await_started(std::move(t));
    const std::string name = "await:" + op_id;
    trace::ScopedLabel label(name);
    detach(sched_, std::move(tracker));
  }
  Task<> await_started(Task<> t) {
    try {
      co_await std::move(t);
    } catch (...) {  // the turn's error is in the trace (lane.resumed outcome)
    }
    finished();
  }

  // A lane turn's body: synchronous.
  void exec_sync(const json* ops) {
    for (const json& op : *ops) {
      const std::string what = op["do"].get<std::string>();
      const std::string id = op["id"].get<std::string>();
      const json* body = body_of(op);
      if (what == "run") {  // a reentrant attempt, or another lane's run: started, awaited elsewhere
        auto work = [this, body] { exec_sync(body); };
        Task<> run;
        bool refused = false;
        try {
          trace::ScopedLabel label(id);
          run = lane(op).run(std::move(work));  // [LANE-5.8] queued at the call
        } catch (const LaneReentrancyError&) {
          refused = true;
        } catch (const LaneClosedError&) {
          refused = true;
        }
        if (!refused) track(std::move(run), id);
      } else if (what == "close") {
        track(lane(op).close(), id);  // [LANE-7.6] stops accepting at the call
      } else if (what == "call") {
        auto fn = [this, body](TurnContext<int>& tc) -> Task<> {
          Ctx inner;
          inner.turn = &tc;
          co_await exec_list(body, inner);
        };
        trace::ScopedLabel label(id);
        // Not awaited (a turn cannot wait); dropping the Task does not cancel the call.
        Task<> queued = acts_.at(op["act"].get<std::string>())->call(op["method"].get<std::string>(), std::move(fn));
      } else if (what == "where") {
        try {
          key(op).where(value(op["value"]), [&] { exec_sync(body); });
        } catch (const ScenarioThrow&) {
        }
      } else if (what == "install") {
        FiberContext snapshot = ctx(op["ctx"].get<std::string>());
        try {
          trace::ScopedLabel label(op["ctx"].get_ref<const std::string&>());
          snapshot.run([&] { exec_sync(body); });
        } catch (const ScenarioThrow&) {
        }
      } else {
        exec_common(op, what, id, body);
      }
    }
  }

  const json& doc_;
  Scheduler& sched_;
  std::map<std::string, std::unique_ptr<StateLane>> lanes_;
  std::map<std::string, std::unique_ptr<FiberLocal<std::string>>> keys_;
  std::map<std::string, std::unique_ptr<Activation<int>>> acts_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t live_ = 0;                       // guarded by mu_
  std::map<std::string, FiberContext> ctxs_;   // guarded by mu_
};

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
