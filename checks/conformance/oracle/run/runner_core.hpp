// oracle/run/runner_core.hpp (internal): the interpreter behind run_scenario()
// (oracle/run/runner.hpp), shared by runner.cpp (fibers, lists, the run) and
// runner_ops.cpp (one op). What it does: see runner.cpp.
// Thread safety: one Runner per run; its fibers run on the run's scheduler
// (one thread under ManualScheduler, the pool's threads otherwise); `live_`
// and `ctxs_` are guarded by `mu_`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>
#include <turnstile/turnstile.hpp>
#include <turnstile/trace.hpp>

namespace turnstile::oracle::detail {

using nlohmann::json;

struct ScenarioThrow : std::runtime_error {
  ScenarioThrow() : std::runtime_error("scenario throw") {}
};

inline const json& empty_list() {
  static const json e = json::array();
  return e;
}

class Runner {
 public:
  Runner(const json& doc, Scheduler& sched);  // the scenario's lanes, keys and activations
  // Starts each root fiber, detached from the main flow, in list order.
  void start_roots();
  // False when the fibers did not all finish within `limit` (a hang).
  bool wait_all(std::chrono::seconds limit);
  bool all_done();
  // [TURN-2.3] each activation's counters, read once the run is quiescent
  // (nothing runs, so they agree with the trace up to here).
  void trace_counters() const;

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

  // runner.cpp: fibers and op lists
  // A root or detached fiber: catches its own throw; counted for wait_all().
  Task<> fiber_body(const json* ops, Ctx c);
  // A structured child: its throw ends its own body only.
  Task<> child_body(const json* ops, Ctx c);
  // An op list: runs its ops in order, then waits for the children it spawned.
  Task<> exec_list(const json* ops, Ctx c);

  // runner_ops.cpp: one op
  Task<> exec_op(const json& op, Ctx c, Scope& scope);
  // An activation turn's body (a `call` op's or a task's `turn` op's): `body`
  // run with the turn's context.
  Task<> turn_body(const json* body, TurnContext<int>& tc);
  // The ops that run the same way in a fiber and inside a lane turn.
  void exec_common(const json& op, const std::string& what, const std::string& id, const json* body);
  // Awaits `t` (started inside a lane turn, which cannot wait) on a fiber of
  // its own, `await:<op id>`; counted for wait_all() like any fiber.
  void track(Task<> t, const std::string& op_id);
  Task<> await_started(Task<> t);
  // A lane turn's body: synchronous.
  void exec_sync(const json* ops);

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

}  // namespace turnstile::oracle::detail
