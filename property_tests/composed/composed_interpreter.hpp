// property_tests/composed/composed_interpreter.hpp: the interpreter of a
// composed program's ops (composed_program.hpp) in an execution context
// (composed_contexts.hpp). An async block runs its ops one after another and
// joins its Scope (a plain block, which cannot await, is composed_plain.hpp).
// An op is run by the part of the interpreter of its contract: turns (call,
// turn(fn), ctx.task), lanes (run, try_post, the BindingTable) and fiber-local
// (where, spawn, detach, send, capture, run of a snapshot, deferred Tasks).
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

#include "composed_contexts.hpp"
#include "composed_plain.hpp"
#include "composed_program.hpp"
#include "composed_world.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop::composed {

// ------------------------------------------------------------------ turns

// Makes a call (or a turn(fn)) and awaits it as the op says.
inline Task<> do_call(World* w, Ctx c, const Op* op, bool via_turn, Scope* scope) {
  const int act = via_turn ? c.act : op->a % w->prog.activations;
  const bool serial = via_turn || !op->inter;
  const std::string method = via_turn ? "turn" : serial ? "s" : "i";
  const int id = w->new_call(act, serial, method, c.exp, &op->body);
  if (c.lane >= 0) ++w->stats.lane_item_calls;
  w->note(c.name + " calls " + Model::cname(id) + " a" + std::to_string(act) + "." + method + " " +
          await_name(op->await));
  std::optional<Task<int>> t;
  try {
    if (via_turn) {
      t.emplace(c.task_ctx->turn(turn_fn(w, id)));
    } else {
      t.emplace(w->acts[static_cast<std::size_t>(act)].call(method, turn_fn(w, id)));
    }
  } catch (const std::exception& e) {  // call() always queues ([TURN-7.1] is at the await)
    w->error("reentrancy", c.name + ": call " + Model::cname(id) + " threw at the call: " + e.what());
    co_return;
  }
  Task<> a = await_as(w, c, scope, op->await, Pending::of_call(id, std::move(*t)));
  co_await std::move(a);  // Never: dropped; the turn runs all the same
}

// call, turn(fn), ctx.task.
inline Task<> exec_turn_op(World* w, Ctx c, const Op* op, Scope* scope) {
  switch (op->kind) {
    case Kind::Call: {
      Task<> t = do_call(w, c, op, false, scope);
      co_await std::move(t);
      break;
    }
    case Kind::Turn: {
      if (c.task_ctx == nullptr) {
        w->observe(c, "observe");
        break;
      }
      Task<> t = do_call(w, c, op, true, scope);
      co_await std::move(t);
      break;
    }
    default: {  // Kind::Task: exec_op sends only call, turn and task here
      if (c.turn_ctx == nullptr) {
        w->observe(c, "observe");
        break;
      }
      ++w->scheduled;
      const int act = c.act;
      c.turn_ctx->task([w, act, ops = &op->body](TaskContext<State>& t) {
        return task_root(w, act, &t, ops);  // [TURN-5.1] no bindings, no turn marker
      });
      break;
    }
  }
}

// ------------------------------------------------------------------ lanes

// run, try_post, the BindingTable.
inline Task<> exec_lane_op(World* w, Ctx c, const Op* op, Scope* scope) {
  switch (op->kind) {
    case Kind::Run: {
      const int lane = op->a;
      const int id = w->new_item(lane, c.exp, &op->body);
      std::optional<Task<>> t;
      try {
        t.emplace(w->lanes[static_cast<std::size_t>(lane)].run([w, id] { lane_item(w, id); }));
      } catch (const std::exception& e) {
        w->drop_item(id);
        w->error("lane", c.name + ": run() on L" + std::to_string(lane) + " threw " + e.what());
        break;
      }
      if (c.turn >= 0 && op->await != Await::Never) ++w->stats.turn_lane_awaits;
      Task<> a = await_as(w, c, scope, op->await, Pending::of_lane(id, std::move(*t)));
      co_await std::move(a);
      break;
    }
    case Kind::Post: {
      const int lane = op->a;
      const int id = w->new_item(lane, c.exp, &op->body);
      if (!w->lanes[static_cast<std::size_t>(lane)].try_post([w, id] { lane_item(w, id); })) {
        w->drop_item(id);
        w->error("lane", c.name + ": try_post on L" + std::to_string(lane) + " refused");
      }
      break;
    }
    default: {  // Kind::Table: exec_op sends only run, post and table here
      Task<> t = submit_table(w, c, *op);
      if (op->await == Await::Never) {
        w->late.push_back(std::move(t));
      } else {
        co_await std::move(t);
        w->observe(c, "after a table op");
      }
      break;
    }
  }
}

// ------------------------------------------------------------- fiber-local

// where, spawn, detach, send, capture, run of a snapshot, deferred Tasks.
inline Task<> exec_fiber_local_op(World* w, Ctx c, const Op* op, Scope* scope) {
  switch (op->kind) {
    case Kind::Where: {
      Ctx inner = c;
      inner.exp[static_cast<std::size_t>(op->a)] = op->v;
      auto body = [w, inner, ops = &op->body]() { return exec_block(w, inner, ops); };
      Task<> t = ukey(op->a).where(op->v, std::move(body));
      co_await std::move(t);
      w->observe(c, "after a where");  // [FL-3.1] restored
      break;
    }
    case Kind::Spawn: {
      Ctx child = c;
      child.name = c.name + "/child";
      ++w->scheduled;
      scope->spawn(fiber_root(w, child, &op->body));  // [FL-3.2] everything flows
      break;
    }
    case Kind::Detach: {
      Ctx d;
      d.name = "detached from " + c.name;
      ++w->scheduled;
      detach(w->sched, fiber_root(w, d, &op->body));  // [FL-3.4] nothing flows
      break;
    }
    case Kind::Send: {
      SendItem item;
      item.ctx = FiberContext::capture();
      item.exp = c.exp;
      item.body = &op->body;
      ++w->scheduled;
      auto s = w->ch.send(std::move(item));
      co_await s;
      break;
    }
    case Kind::Capture:
      w->snaps.push_back(Snap{FiberContext::capture(), c.exp});
      break;
    case Kind::RunSnap: {
      const Snap snap = w->snaps.empty() ? Snap{} : w->snaps[static_cast<std::size_t>(op->a) % w->snaps.size()];
      Ctx inner = c;
      inner.exp = snap.exp;
      if (c.turn >= 0) ++w->stats.snap_runs_in_turn;
      auto body = [w, inner, ops = &op->body]() { return exec_block(w, inner, ops); };
      Task<> t = snap.ctx.run(std::move(body));  // [FL-3.5] its bindings, [FL-3.8] our position
      co_await std::move(t);
      w->observe(c, "after a run");  // [FL-3.6]
      break;
    }
    default: {  // Kind::Defer: exec_op sends only the fiber-local kinds here
      auto slot = std::make_shared<Ctx>();
      const bool bare = op->a == op->b && op->v == op->w;
      std::optional<Task<>> made;
      // Made inside where(uA=V), awaited outside it: [FL-4.7] the task binds
      // (and reads) from the moment it starts, not from when it was made.
      ukey(op->a).where(op->v, [&] {
        if (bare) {
          made.emplace(deferred_body(w, slot, &op->body));
        } else {
          auto fn = [w, slot, ops = &op->body]() { return deferred_body(w, slot, ops); };
          made.emplace(ukey(op->b).where(op->w, std::move(fn)));
        }
      });
      Pending p;
      p.k = Pending::K::Defer;
      p.slot = std::move(slot);
      p.key = bare ? -1 : op->b;
      p.val = op->w;
      p.task = std::move(made);
      c.pending->push_back(std::move(p));
      break;
    }
  }
}

// -------------------------------------------------------------- the blocks

enum class Part { Here, Turns, Lanes, FiberLocal };

// The part of the interpreter that runs an op of kind `k` (a new Kind must be
// placed here: the switch has no default).
inline Part part_of(Kind k) {
  switch (k) {
    case Kind::Observe:
    case Kind::Yield:
      return Part::Here;
    case Kind::Call:
    case Kind::Turn:
    case Kind::Task:
      return Part::Turns;
    case Kind::Run:
    case Kind::Post:
    case Kind::Table:
      return Part::Lanes;
    case Kind::Where:
    case Kind::Spawn:
    case Kind::Detach:
    case Kind::Send:
    case Kind::Capture:
    case Kind::RunSnap:
    case Kind::Defer:
      return Part::FiberLocal;
  }
  return Part::Here;
}

inline Task<> exec_op(World* w, Ctx c, const Op* op, Scope* scope) {
  const Part part = part_of(op->kind);
  if (part == Part::Here) {
    if (op->kind == Kind::Yield) {
      co_await yield();
      w->observe(c, "after a yield");
    } else {
      w->observe(c, "observe");
    }
    co_return;
  }
  Task<> t = part == Part::Turns   ? exec_turn_op(w, std::move(c), op, scope)
             : part == Part::Lanes ? exec_lane_op(w, std::move(c), op, scope)
                                   : exec_fiber_local_op(w, std::move(c), op, scope);
  co_await std::move(t);
}

inline Task<> exec_block(World* w, Ctx c, const std::vector<Op>* ops) {
  w->observe(c, "block start");
  Scope scope;
  for (const Op& op : *ops) {
    try {
      Task<> t = exec_op(w, c, &op, &scope);
      co_await std::move(t);
    } catch (const std::exception& e) {
      w->error("general", c.name + " op threw " + e.what());
    }
  }
  try {
    Task<> joined = scope.join();
    co_await std::move(joined);
  } catch (const std::exception& e) {
    w->error("general", c.name + " join threw " + e.what());
  }
  w->observe(c, "block end");
}

}  // namespace turnstile::prop::composed
