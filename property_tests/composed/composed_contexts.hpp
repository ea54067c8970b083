// property_tests/composed/composed_contexts.hpp: the execution contexts of a
// composed program, as coroutines over the World (composed_world.hpp): an
// actor turn's body, a lane item, a fiber, a ctx.task, a channel worker, the
// awaits of calls and lane runs (and of @later / @child / @detached handoffs),
// and the BindingTable submissions with their checks. Each builds the Ctx the
// position table gives it and runs its block through the interpreter
// (composed_interpreter.hpp: exec_block, exec_plain).
//
// GCC 12: every lambda with a capture of non-trivial type and every Task built
// from one is a named local before it is awaited (see README.md).
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "composed_program.hpp"
#include "composed_world.hpp"
#include "turnstile/activation.hpp"
#include "turnstile/binding_table.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop::composed {

// Defined in composed_interpreter.hpp (a block runs contexts, contexts run blocks).
inline Task<> exec_block(World* w, Ctx c, const std::vector<Op>* ops);
inline void exec_plain(World* w, const Ctx& c, const std::vector<Op>& ops);
inline Task<> context_root(World* w, Ctx c, const std::vector<Op>* ops);

// ------------------------------------------------------------ the table

inline Task<std::string> show_bool(Task<bool> t) {
  const bool v = co_await std::move(t);
  co_return v ? "true" : "false";
}
inline Task<std::string> show_opt(Task<std::optional<std::string>> t) {
  std::optional<std::string> v = co_await std::move(t);
  co_return v ? *v : std::string("-");
}
inline Task<std::string> show_size(Task<std::size_t> t) {
  const std::size_t v = co_await std::move(t);
  co_return std::to_string(v);
}

// Submits the table op (queued before this returns, [LANE-5.8]).
inline Task<std::string> table_call(BindingTable& tb, TableOp op, int a, int s) {
  switch (op) {
    case TableOp::Bind: return show_bool(tb.bind(Model::an(a), Model::sn(s)));
    case TableOp::Rebind: return show_opt(tb.rebind(Model::an(a), Model::sn(s)));
    case TableOp::Unbind: return show_bool(tb.unbind(Model::an(a)));
    case TableOp::SessionOf: return show_opt(tb.session_of(Model::an(a)));
    case TableOp::ActorOf: return show_opt(tb.actor_of(Model::sn(s)));
    case TableOp::Size: break;
  }
  return show_size(tb.size());
}

inline Task<> check_table(World* w, std::string what, Task<std::string> t, Task<bool> consistent,
                          std::string expected) {
  try {
    const std::string got = co_await std::move(t);
    if (got != expected)
      w->error("table", what + " returned " + got + ", the sequential model says " + expected);
    const bool ok = co_await std::move(consistent);
    ++w->stats.table_checks;
    if (!ok) w->error("table", "after " + what + " the two maps disagree [LANE-8.10]");
  } catch (const std::exception& e) {
    w->error("table", what + " threw " + e.what());
  }
}

// Submits a table op and the consistency check right behind it; the Task checks both.
inline Task<> submit_table(World* w, const Ctx& c, const Op& op) {
  const int a = op.a % kTableNames;
  const int s = op.b % kTableNames;
  std::string what = c.name + ": table " + table_name(op.table) + " a" + std::to_string(a) + " s" +
                     std::to_string(s);
  std::string expected = w->table_apply(op.table, a, s);
  Task<std::string> t = table_call(w->table, op.table, a, s);
  Task<bool> consistent = w->table.consistent();  // same step: runs right after the op's turn
  return check_table(w, std::move(what), std::move(t), std::move(consistent), std::move(expected));
}


// ------------------------------------------------------------- contexts

// An actor turn: the body of call `id`.
inline Task<int> turn_body(World* w, int id, TurnContext<State>* ctx) {
  w->turn_started(id, *ctx);
  const CallRec& r = w->calls[static_cast<std::size_t>(id)];
  Ctx c;
  c.exp = r.exp;
  c.turn = id;
  c.act = r.act;
  c.turn_ctx = ctx;
  c.task_ctx = ctx;
  c.name = "turn " + Model::cname(id);
  try {
    Task<> body = context_root(w, c, r.body);
    co_await std::move(body);
  } catch (const std::exception& e) {
    w->error("general", c.name + " threw " + e.what());
  }
  w->turn_ending(id, *ctx);
  co_return id;
}

inline auto turn_fn(World* w, int id) {
  return [w, id](TurnContext<State>& x) { return turn_body(w, id, &x); };
}

// A lane item (plain: it runs inside the lane's turn).
inline void lane_item(World* w, int id) {
  ItemRec& r = w->items[static_cast<std::size_t>(id)];
  LaneModel& lm = w->lane_model[static_cast<std::size_t>(r.lane)];
  const std::string who = "item " + std::to_string(id) + " of L" + std::to_string(r.lane);
  w->note(who + " runs");
  if (lm.active != -1)
    w->error("lane", who + " runs inside item " + std::to_string(lm.active) + "'s turn [LANE-5.1]");
  if (lm.next >= lm.order.size() || lm.order[lm.next] != id)
    w->error("lane", who + " runs out of submission order [LANE-5.2]");
  ++lm.next;
  const int outer = lm.active;
  lm.active = id;
  r.ran = true;
  Ctx c;
  c.exp = r.exp;
  c.lane = r.lane;
  c.name = who;
  try {
    w->observe(c, "item start");
    exec_plain(w, c, *r.body);
    w->observe(c, "item end");
  } catch (const std::exception& e) {
    w->error("general", who + " threw " + e.what());
  }
  lm.active = outer;
  ++w->finished;
}

inline Task<> await_call(World* w, Ctx c, int id, Task<int> t) {
  const int wid = w->begin_wait(c, id);
  bool refused = false;
  std::string message;
  try {
    const int v = co_await std::move(t);
    if (v != id) w->error("general", c.name + ": call " + Model::cname(id) + " returned " + std::to_string(v));
  } catch (const TurnReentrancyError& e) {
    refused = true;
    message = e.what();
  } catch (const std::exception& e) {
    w->error("general", c.name + ": awaiting call " + Model::cname(id) + " threw " + e.what());
  }
  w->end_wait(wid, refused, message);
  w->observe(c, "after an await of a call");
}

inline Task<> await_lane(World* w, Ctx c, int item, Task<> t) {
  try {
    co_await std::move(t);
  } catch (const LaneReentrancyError& e) {
    w->error("lane", c.name + ": run() of item " + std::to_string(item) +
                         " refused as reentrant, but it is not on that lane: " + e.what());
  } catch (const std::exception& e) {
    w->error("general", c.name + ": run() of item " + std::to_string(item) + " threw " + e.what());
  }
  w->observe(c, "after an await of a lane run");
}

// A deferred Task's body: reads its Ctx when it starts ([FL-4.7]).
inline Task<> deferred_body(World* w, std::shared_ptr<Ctx> slot, const std::vector<Op>* ops) {
  const Ctx c = *slot;
  ++w->stats.deferred;
  Task<> b = exec_block(w, c, ops);
  co_await std::move(b);
}

inline Task<> await_pending(World* w, Ctx c, Pending p) {
  switch (p.k) {
    case Pending::K::Call: {
      Task<> a = await_call(w, c, p.id, std::move(*p.call));
      co_await std::move(a);
      break;
    }
    case Pending::K::Lane: {
      Task<> a = await_lane(w, c, p.id, std::move(*p.task));
      co_await std::move(a);
      break;
    }
    case Pending::K::Defer: {
      *p.slot = c;
      p.slot->name = c.name + " (deferred body)";
      if (p.key >= 0) p.slot->exp[static_cast<std::size_t>(p.key)] = p.val;
      co_await std::move(*p.task);
      w->observe(c, "after a deferred task");
      break;
    }
  }
}

// A fiber, turn body, task or work item: its block, then its @later awaits
// (oldest first; outside every where of the block), then a last observation.
inline Task<> context_root(World* w, Ctx c, const std::vector<Op>* ops) {
  std::vector<Pending> pending;
  c.pending = &pending;
  try {
    Task<> b = exec_block(w, c, ops);
    co_await std::move(b);
  } catch (const std::exception& e) {
    w->error("general", c.name + " threw " + e.what());
  }
  for (std::size_t i = 0; i < pending.size(); ++i) {  // a deferred body may add more
    Pending p = std::move(pending[i]);
    Task<> a = await_pending(w, c, std::move(p));
    co_await std::move(a);
  }
  w->observe(c, "end");
}

inline Task<> fiber_root(World* w, Ctx c, const std::vector<Op>* ops) {
  Task<> t = context_root(w, c, ops);
  co_await std::move(t);
  ++w->finished;
}

inline Task<> task_root(World* w, int act, TaskContext<State>* t, const std::vector<Op>* ops) {
  Ctx c;
  c.act = act;
  c.task_ctx = t;
  c.name = "task of a" + std::to_string(act);
  ++w->stats.tasks;
  Task<> r = context_root(w, c, ops);
  co_await std::move(r);
  ++w->finished;
}

inline Task<> worker(World* w, int wi) {
  Ctx base;
  base.name = "worker " + std::to_string(wi);
  for (;;) {
    auto r = w->ch.receive();
    std::optional<SendItem> got = co_await r;
    if (!got) break;
    Ctx c = base;
    c.exp = got->exp;
    c.name = "work item on worker " + std::to_string(wi);
    auto body = [w, c, ops = got->body]() { return context_root(w, c, ops); };
    Task<> t = got->ctx.run(std::move(body));  // [FL-3.5]: the snapshot's bindings
    co_await std::move(t);
    ++w->finished;
    w->observe(base, "after serving an item");  // [FL-3.6] the worker's own context is back
  }
  ++w->finished;
}

// @child / @detached: another fiber awaits the call (or lane run) `id`.
inline Task<> await_elsewhere(World* w, Ctx c, bool is_call, int id, std::optional<Task<int>> call,
                              std::optional<Task<>> run) {
  w->observe(c, "start");
  if (is_call) {
    Task<> a = await_call(w, c, id, std::move(*call));
    co_await std::move(a);
  } else {
    Task<> a = await_lane(w, c, id, std::move(*run));
    co_await std::move(a);
  }
  ++w->finished;
}

// Hands the Task to a Scope child of `c` (same position, same turn) or to a
// detached fiber (nothing flows).
inline void hand_off(World* w, const Ctx& c, Scope* scope, Await mode, bool is_call, int id,
                     std::optional<Task<int>> call, std::optional<Task<>> run) {
  ++w->scheduled;
  if (mode == Await::Child) {
    Ctx child = c;
    child.name = c.name + "/awaiting child";
    scope->spawn(await_elsewhere(w, child, is_call, id, std::move(call), std::move(run)));
  } else {
    Ctx d;
    d.name = "detached awaiter of " + c.name;
    detach(w->sched, await_elsewhere(w, d, is_call, id, std::move(call), std::move(run)));
  }
}

// Makes a call (or a turn(fn)) and awaits it as the op says.

// Awaits a call's or a lane run's Task as its op says: now, at the end of the
// context's root block (@later), in another fiber (@child, @detached), or
// never (dropped; the turn or item runs all the same).
inline Task<> await_as(World* w, Ctx c, Scope* scope, Await how, Pending p) {
  if (how == Await::Now) {
    Task<> a = await_pending(w, c, std::move(p));
    co_await std::move(a);
  } else if (how == Await::Later) {
    c.pending->push_back(std::move(p));
  } else if (how == Await::Child || how == Await::Detached) {
    const bool is_call = p.k == Pending::K::Call;
    hand_off(w, c, scope, how, is_call, p.id, std::move(p.call), std::move(p.task));
  }
}

// Awaits the table checks nobody awaited (op @never, or from a plain body).
inline Task<> collector(World* w) {
  for (std::size_t i = 0; i < w->late.size(); ++i) {
    Task<> t = std::move(w->late[i]);
    co_await std::move(t);
  }
  ++w->finished;
}

}  // namespace turnstile::prop::composed
