// oracle/run/runner_ops.cpp: one op of a scenario on the reference core
// (Runner, oracle/run/runner_core.hpp): in a fiber (exec_op, awaiting what it
// starts) or inside a lane turn (exec_sync: synchronous, starting and not
// awaiting what would wait; see runner.cpp).
#include <string>
#include <utility>

#include "oracle/run/runner_core.hpp"

namespace turnstile::oracle::detail {

Task<> Runner::turn_body(const json* body, TurnContext<int>& tc) {
  Ctx inner;
  inner.turn = &tc;
  co_await exec_list(body, inner);
}

Task<> Runner::exec_op(const json& op, Ctx c, Scope& scope) {
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
    auto fn = [this, body](TurnContext<int>& tc) { return turn_body(body, tc); };
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
    auto fn = [this, body](TurnContext<int>& tc) { return turn_body(body, tc); };
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

void Runner::exec_common(const json& op, const std::string& what, const std::string& id, const json* body) {
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

void Runner::track(Task<> t, const std::string& op_id) {
  started();
  Task<> tracker = await_started(std::move(t));
  const std::string name = "await:" + op_id;
  trace::ScopedLabel label(name);
  detach(sched_, std::move(tracker));
}
Task<> Runner::await_started(Task<> t) {
  try {
    co_await std::move(t);
  } catch (...) {  // the turn's error is in the trace (lane.resumed outcome)
  }
  finished();
}

void Runner::exec_sync(const json* ops) {
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

}  // namespace turnstile::oracle::detail
