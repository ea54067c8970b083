// property_tests/composed/composed_runner.hpp: runs a generated composed
// program (composed_program.hpp) on one ManualScheduler under a generated
// schedule, and checks every contract at once against a model kept beside it.
//
// The model (all on the driver thread: a ManualScheduler runs one item at a
// time, so the interpreter's own bookkeeping needs no locks):
//   - every execution context carries a Ctx: the user bindings it must see
//     (u0, u1), its position (the lane whose item it is, or the turn it is part
//     of) and, for wait attribution, that turn. Ctx values flow by the
//     position table of 318d276: a lane item takes the submitter's bindings and
//     that lane; an actor turn (call, turn(fn)) takes the caller's bindings at
//     the call and itself as position; ctx.task, detach and the channel carry
//     nothing; a Scope child takes all of its parent's; FiberContext::run takes
//     the snapshot's bindings and keeps the running context's position.
//     `observe` compares the live FiberLocal values, StateLane::current() and
//     detail::turn_marker() with the Ctx at every observation point (block
//     start and end, after every await and every where/run, ...).
//   - calls: queued -> running (the body's first step) -> settled (its last
//     step; the activation settles it in that same step). Per activation the
//     serial calls in arrival (call()) order; a serial turn must start as the
//     next one, alone, and see the state its predecessor left.
//   - lane items: per lane the submissions in order; an item must run as the
//     next one, alone.
//   - the wait-for graph, the oracle of [TURN-7.1]: an edge T -> C while code
//     that is part of turn T awaits call C. A running call waits for its edges'
//     targets; a queued serial call waits for the serial call just before it on
//     its activation (if not settled); a queued interleaved call and a settled
//     one wait for nothing. At each await the model predicts "refused" iff C
//     reaches T; the await must throw TurnReentrancyError exactly then.
//     (Formulated over arrival-order predecessors, not over the lane holder as
//     detail/wait_graph.hpp does: the same reachability, computed
//     independently.)
//   - the BindingTable: a sequential model applied at each submission (the
//     table's lane is FIFO, so submission order is execution order); every
//     op's result is compared with it, and consistent(), submitted in the same
//     step, runs right after the op's turn and must be true ([LANE-8.10]).
//
// Liveness: every await that the model does not refuse can complete (the
// model's graph is acyclic, lanes never wait, the channel never fills), so a
// run that goes idle with work unfinished is a hang, reported as such with
// what is left (unfinished contexts, awaits never resumed, calls never run).
// A hung world is leaked, never destroyed (an activation or lane destroyed with
// work queued stops the process by design).
//
// GCC 12: every lambda with a capture of non-trivial type and every Task built
// from one is a named local before it is awaited (see README.md).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "composed_program.hpp"
#include "schedule.hpp"
#include "turnstile/activation.hpp"
#include "turnstile/binding_table.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/task.hpp"
#include "turnstile_test/records.hpp"

namespace turnstile::prop::composed {

// The user keys u0, u1 (compared by address: they live for the process).
inline const FiberLocal<int>& ukey(int k) {
  static const FiberLocal<int> keys[kKeys] = {FiberLocal<int>("u0"), FiberLocal<int>("u1")};
  return keys[k];
}

struct State {
  long writes = 0;  // serial turns started
  int last = -1;    // the serial turn that last held the state
};
using Act = Activation<State>;

using Expect = std::array<int, kKeys>;  // -1: unbound
inline constexpr Expect kUnbound = {-1, -1};

inline std::string show(const Expect& e) {
  std::string s;
  for (int k = 0; k < kKeys; ++k) {
    s += (k ? " u" : "u") + std::to_string(k) + "=";
    s += e[static_cast<std::size_t>(k)] < 0 ? "-" : std::to_string(e[static_cast<std::size_t>(k)]);
  }
  return s;
}

struct Pending;

// What one execution context must see, and where it is.
struct Ctx {
  Expect exp = kUnbound;
  int lane = -1;  // a lane item of this lane
  int turn = -1;  // part of this call's turn (position and wait attribution)
  int act = -1;   // the activation of that turn, or of the task
  TurnContext<State>* turn_ctx = nullptr;  // ctx.task available
  TaskContext<State>* task_ctx = nullptr;  // turn(fn) available
  std::vector<Pending>* pending = nullptr;  // the root block's @later list
  std::string name;
};

enum class CallState { Queued, Running, Settled };

struct CallRec {
  int act = 0;
  bool serial = true;
  std::string method;
  Expect exp = kUnbound;  // the caller's bindings at the call
  const std::vector<Op>* body = nullptr;
  CallState st = CallState::Queued;
  int arrival = -1;  // index in its activation's serial order
  const detail::TurnMarker* marker = nullptr;
};

struct ItemRec {
  int lane = 0;
  Expect exp = kUnbound;
  const std::vector<Op>* body = nullptr;
  bool ran = false;
};

struct WaitRec {
  int from = -1;  // the awaiting turn, or -1
  int to = -1;    // the awaited call
  bool predicted = false;  // the model says: refused
  bool active = false;     // an edge of the model's graph
  bool done = false;
  std::string who;
};

struct SendItem {
  FiberContext ctx;
  Expect exp = kUnbound;
  const std::vector<Op>* body = nullptr;
};

struct Snap {
  FiberContext ctx;
  Expect exp = kUnbound;
};

struct Pending {
  enum class K { Call, Lane, Defer } k = K::Call;
  int id = -1;
  std::optional<Task<int>> call;
  std::optional<Task<>> task;
  std::shared_ptr<Ctx> slot;  // defer: the body's Ctx, filled at the await
  int key = -1, val = -1;     // defer: the where_task's binding (key -1: a bare Task)

  static Pending of_call(int id, Task<int> t) {
    Pending p;
    p.id = id;
    p.call.emplace(std::move(t));
    return p;
  }
  static Pending of_lane(int id, Task<> t) {
    Pending p;
    p.k = K::Lane;
    p.id = id;
    p.task.emplace(std::move(t));
    return p;
  }
};

struct ActModel {
  std::vector<int> serial_order;  // serial call ids in arrival order
  std::size_t serial_started = 0;
  int serial_active = -1;
};

struct LaneModel {
  std::vector<int> order;  // item ids in submission order
  std::size_t next = 0;
  int active = -1;
};

struct Stats {
  int refusals = 0;          // awaits refused, as predicted
  int cross_refusals = 0;    // ... through another activation or a queued call
  int lane_item_calls = 0;   // actor turns called from lane items
  int turn_lane_awaits = 0;  // turns that awaited a lane run
  int deferred = 0;          // deferred task bodies run
  int snap_runs_in_turn = 0;
  int table_checks = 0;
  int tasks = 0;
};

class World {
 public:
  explicit World(const Program& p) : prog(p), table("table", sched) {
    ActivationOptions options;
    options.interleaved_methods = {"i"};
    options.slow_turn = std::chrono::hours(24);  // slow-turn reports are not under test here
    for (int a = 0; a < p.activations; ++a) {
      acts.emplace_back("a" + std::to_string(a), State{}, options, sched);
      act_model.emplace_back();
    }
    for (int l = 0; l < kLanes; ++l) {
      lanes.emplace_back("L" + std::to_string(l), sched);
      lane_model.emplace_back();
    }
  }

  const Program& prog;
  ManualScheduler sched;  // first: destroyed last
  std::deque<Act> acts;
  std::deque<StateLane> lanes;
  BindingTable table;
  Channel<SendItem> ch{1 << 16};  // never full: a send never waits
  std::vector<Snap> snaps;
  std::vector<Task<>> late;  // table checks nobody awaited; a collector awaits them

  std::deque<CallRec> calls;
  std::vector<ActModel> act_model;
  std::vector<ItemRec> items;
  std::vector<LaneModel> lane_model;
  std::vector<WaitRec> waits;
  std::map<int, int> a2s, s2a;  // the BindingTable's model
  long scheduled = 0, finished = 0;  // execution units: fibers, turns, lane items, work items
  Stats stats;
  turnstile_test::ErrorBook book{{}, {}, 600};  // errors by category; the first 600 notes

  void error(const std::string& category, const std::string& what) {
    book.record_error(sched.steps(), category, what);
  }
  void note(const std::string& what) { book.record_note(sched.steps(), what); }
  static std::string cname(int id) { return "#" + std::to_string(id); }

  // ------------------------------------------------------------ observation

  // Bindings and position of the running code against its Ctx. [FL-3.x] [FL-3.8]
  void observe(const Ctx& c, const char* where) {
    for (int k = 0; k < kKeys; ++k) {
      const int* v = ukey(k).try_get();
      const int got = v ? *v : -1;
      if (got != c.exp[static_cast<std::size_t>(k)]) {
        Expect seen{};
        for (int j = 0; j < kKeys; ++j) {
          const int* x = ukey(j).try_get();
          seen[static_cast<std::size_t>(j)] = x ? *x : -1;
        }
        error("bindings", c.name + " at " + where + " sees " + show(seen) + ", expected " + show(c.exp));
        break;
      }
    }
    const StateLane* lane = StateLane::current();
    const StateLane* want_lane = c.lane >= 0 ? &lanes[static_cast<std::size_t>(c.lane)] : nullptr;
    if (lane != want_lane)
      error("position", c.name + " at " + where + ": StateLane::current() is " +
                            (lane ? lane->name() : std::string("null")) + ", expected " +
                            (want_lane ? want_lane->name() : std::string("null")));
    const detail::TurnMarkerRef* m = detail::turn_marker().try_get();
    const detail::TurnMarker* got_m = (m != nullptr && *m) ? m->get() : nullptr;
    const detail::TurnMarker* want_m = c.turn >= 0 ? calls[static_cast<std::size_t>(c.turn)].marker : nullptr;
    if (got_m != want_m)
      error("position", c.name + " at " + where + ": turn marker is " +
                            (got_m ? "turn '" + got_m->method + "' of '" + *got_m->activation + "'"
                                   : std::string("null")) +
                            ", expected " + (c.turn >= 0 ? "turn " + cname(c.turn) : std::string("none")));
    if (c.turn >= 0 && calls[static_cast<std::size_t>(c.turn)].serial) {
      const ActModel& am = act_model[static_cast<std::size_t>(c.act)];
      if (am.serial_active != c.turn)
        error("serial", c.name + " at " + where + ": serial turn " + cname(c.turn) +
                            " runs while the model's serial turn is " + cname(am.serial_active));
      if (c.turn_ctx != nullptr && c.turn_ctx->state().last != c.turn)
        error("serial", c.name + " at " + where + ": the state was taken by serial turn " +
                            cname(c.turn_ctx->state().last) + " during turn " + cname(c.turn));
    }
  }

  // ------------------------------------------------------------------ calls

  int new_call(int act, bool serial, std::string method, const Expect& exp,
               const std::vector<Op>* body) {
    CallRec r;
    r.act = act;
    r.serial = serial;
    r.method = std::move(method);
    r.exp = exp;
    r.body = body;
    const int id = static_cast<int>(calls.size());
    if (serial) {
      ActModel& am = act_model[static_cast<std::size_t>(act)];
      r.arrival = static_cast<int>(am.serial_order.size());
      am.serial_order.push_back(id);
    }
    calls.push_back(std::move(r));
    ++scheduled;
    return id;
  }

  void turn_started(int id, TurnContext<State>& ctx) {
    CallRec& r = calls[static_cast<std::size_t>(id)];
    const std::string who = "turn " + cname(id) + " (a" + std::to_string(r.act) + "." + r.method + ")";
    note(who + " starts");
    if (r.st != CallState::Queued) error("turn", who + " started twice");
    r.st = CallState::Running;
    ActModel& am = act_model[static_cast<std::size_t>(r.act)];
    if (r.serial) {
      if (am.serial_active != -1)
        error("serial", who + " started while serial turn " + cname(am.serial_active) + " holds a" +
                            std::to_string(r.act));
      if (am.serial_started >= am.serial_order.size() || am.serial_order[am.serial_started] != id)
        error("serial-order", who + " started out of arrival order (expected " +
                                  (am.serial_started < am.serial_order.size()
                                       ? cname(am.serial_order[am.serial_started])
                                       : std::string("none")) +
                                  ")");
      ++am.serial_started;
      am.serial_active = id;
      const int prev = r.arrival > 0 ? am.serial_order[static_cast<std::size_t>(r.arrival - 1)] : -1;
      if (ctx.state().last != prev)
        error("serial-order", who + " sees the state left by " + cname(ctx.state().last) +
                                  ", expected its predecessor " + cname(prev));
      ctx.state().last = id;
      ++ctx.state().writes;
    }
    const detail::TurnMarkerRef* m = detail::turn_marker().try_get();
    if (m == nullptr || !*m) {
      error("position", who + " runs without a turn marker");
    } else {
      const detail::TurnMarker* mk = m->get();
      r.marker = mk;
      if (mk->method != r.method || *mk->activation != acts[static_cast<std::size_t>(r.act)].id() ||
          mk->serial() != r.serial)
        error("position", who + ": its turn marker names turn '" + mk->method + "' of '" +
                              *mk->activation + "'");
      for (std::size_t j = 0; j < calls.size(); ++j)
        if (static_cast<int>(j) != id && calls[j].st == CallState::Running && calls[j].marker == mk)
          error("position", who + " shares its turn marker with running turn " + cname(static_cast<int>(j)));
    }
  }

  void turn_ending(int id, TurnContext<State>& ctx) {
    CallRec& r = calls[static_cast<std::size_t>(id)];
    note("turn " + cname(id) + " settles");
    if (r.serial) {
      ActModel& am = act_model[static_cast<std::size_t>(r.act)];
      if (am.serial_active != id || ctx.state().last != id)
        error("serial", "serial turn " + cname(id) + " ends while the model's serial turn is " +
                            cname(am.serial_active) + " and the state's is " + cname(ctx.state().last));
      am.serial_active = -1;
    }
    r.st = CallState::Settled;
    ++finished;
  }

  // The wait-for oracle: does call `n` (transitively) wait for turn `goal`?
  bool reaches(int n, int goal, std::vector<char>& seen, int& hops) const {
    if (n == goal) return true;
    if (seen[static_cast<std::size_t>(n)]) return false;
    seen[static_cast<std::size_t>(n)] = 1;
    ++hops;
    const CallRec& r = calls[static_cast<std::size_t>(n)];
    if (r.st == CallState::Settled) return false;
    if (r.st == CallState::Queued) {
      if (!r.serial || r.arrival <= 0) return false;  // an interleaved call waits for no turn
      const int prev = act_model[static_cast<std::size_t>(r.act)]
                           .serial_order[static_cast<std::size_t>(r.arrival - 1)];
      return reaches(prev, goal, seen, hops);
    }
    for (const WaitRec& wr : waits)
      if (wr.active && wr.from == n && reaches(wr.to, goal, seen, hops)) return true;
    return false;
  }

  int begin_wait(const Ctx& c, int to) {
    WaitRec wr;
    wr.from = c.turn;
    wr.to = to;
    wr.who = c.name;
    if (c.turn >= 0) {
      std::vector<char> seen(calls.size(), 0);
      int hops = 0;
      wr.predicted = reaches(to, c.turn, seen, hops);
      if (wr.predicted && (hops > 1 || calls[static_cast<std::size_t>(to)].act != c.act))
        ++stats.cross_refusals;
    }
    wr.active = c.turn >= 0 && !wr.predicted;
    waits.push_back(wr);
    note(c.name + " awaits call " + cname(to) + (wr.predicted ? " (model: refused)" : ""));
    return static_cast<int>(waits.size() - 1);
  }

  void end_wait(int wid, bool refused, const std::string& message) {
    WaitRec& wr = waits[static_cast<std::size_t>(wid)];
    wr.active = false;
    wr.done = true;
    const std::string what = wr.who + " awaiting call " + cname(wr.to);
    if (refused && !wr.predicted)
      error("reentrancy", what + " was refused, but the model has no cycle: " + message);
    if (!refused && wr.predicted)
      error("reentrancy", what + " closes a wait cycle, but it was not refused");
    if (refused && wr.predicted) {
      ++stats.refusals;
      if (message.find("[TURN-7.1]") == std::string::npos)
        error("reentrancy", what + ": the refusal does not cite [TURN-7.1]: " + message);
    }
    note(what + (refused ? " refused" : " resumed"));
  }

  // ------------------------------------------------------------- lane items

  int new_item(int lane, const Expect& exp, const std::vector<Op>* body) {
    ItemRec r;
    r.lane = lane;
    r.exp = exp;
    r.body = body;
    const int id = static_cast<int>(items.size());
    items.push_back(r);
    lane_model[static_cast<std::size_t>(lane)].order.push_back(id);
    ++scheduled;
    return id;
  }
  void drop_item(int id) {  // a submission refused unexpectedly: not queued
    LaneModel& lm = lane_model[static_cast<std::size_t>(items[static_cast<std::size_t>(id)].lane)];
    if (!lm.order.empty() && lm.order.back() == id) lm.order.pop_back();
    items[static_cast<std::size_t>(id)].ran = true;
    --scheduled;
  }

  // ------------------------------------------------------------ the table

  static std::string an(int a) { return "a" + std::to_string(a); }
  static std::string sn(int s) { return "s" + std::to_string(s); }

  // The expected result of `op` applied now (= in submission order).
  std::string table_apply(TableOp op, int a, int s) {
    const auto unbind = [&](int actor) {
      auto it = a2s.find(actor);
      if (it == a2s.end()) return false;
      s2a.erase(it->second);
      a2s.erase(it);
      return true;
    };
    const auto bind = [&](int actor, int session) {
      if (a2s.count(actor) != 0 || s2a.count(session) != 0) return false;
      a2s[actor] = session;
      s2a[session] = actor;
      return true;
    };
    switch (op) {
      case TableOp::Bind: return bind(a, s) ? "true" : "false";
      case TableOp::Rebind: {
        const auto it = a2s.find(a);
        std::string prev = it == a2s.end() ? "-" : sn(it->second);
        unbind(a);
        const auto owner = s2a.find(s);
        if (owner != s2a.end()) unbind(owner->second);
        bind(a, s);
        return prev;
      }
      case TableOp::Unbind: return unbind(a) ? "true" : "false";
      case TableOp::SessionOf: {
        const auto it = a2s.find(a);
        return it == a2s.end() ? "-" : sn(it->second);
      }
      case TableOp::ActorOf: {
        const auto it = s2a.find(s);
        return it == s2a.end() ? "-" : an(it->second);
      }
      case TableOp::Size: return std::to_string(a2s.size());
    }
    return "?";
  }
};

// -------------------------------------------------------------- coroutines

inline Task<> exec_block(World* w, Ctx c, const std::vector<Op>* ops);
inline Task<> context_root(World* w, Ctx c, const std::vector<Op>* ops);
inline void exec_plain(World* w, const Ctx& c, const std::vector<Op>& ops);

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
    case TableOp::Bind: return show_bool(tb.bind(World::an(a), World::sn(s)));
    case TableOp::Rebind: return show_opt(tb.rebind(World::an(a), World::sn(s)));
    case TableOp::Unbind: return show_bool(tb.unbind(World::an(a)));
    case TableOp::SessionOf: return show_opt(tb.session_of(World::an(a)));
    case TableOp::ActorOf: return show_opt(tb.actor_of(World::sn(s)));
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
  c.name = "turn " + World::cname(id);
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
    if (v != id) w->error("general", c.name + ": call " + World::cname(id) + " returned " + std::to_string(v));
  } catch (const TurnReentrancyError& e) {
    refused = true;
    message = e.what();
  } catch (const std::exception& e) {
    w->error("general", c.name + ": awaiting call " + World::cname(id) + " threw " + e.what());
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
inline Task<> do_call(World* w, Ctx c, const Op* op, bool via_turn, Scope* scope) {
  const int act = via_turn ? c.act : op->a % w->prog.activations;
  const bool serial = via_turn || !op->inter;
  const std::string method = via_turn ? "turn" : serial ? "s" : "i";
  const int id = w->new_call(act, serial, method, c.exp, &op->body);
  if (c.lane >= 0) ++w->stats.lane_item_calls;
  w->note(c.name + " calls " + World::cname(id) + " a" + std::to_string(act) + "." + method + " " +
          await_name(op->await));
  std::optional<Task<int>> t;
  try {
    if (via_turn) {
      t.emplace(c.task_ctx->turn(turn_fn(w, id)));
    } else {
      t.emplace(w->acts[static_cast<std::size_t>(act)].call(method, turn_fn(w, id)));
    }
  } catch (const std::exception& e) {  // call() always queues ([TURN-7.1] is at the await)
    w->error("reentrancy", c.name + ": call " + World::cname(id) + " threw at the call: " + e.what());
    co_return;
  }
  if (op->await == Await::Now) {
    Task<> a = await_call(w, c, id, std::move(*t));
    co_await std::move(a);
  } else if (op->await == Await::Later) {
    c.pending->push_back(Pending::of_call(id, std::move(*t)));
  } else if (op->await == Await::Child || op->await == Await::Detached) {
    hand_off(w, c, scope, op->await, true, id, std::move(t), std::nullopt);
  }  // Never: dropped; the turn runs all the same
}

inline Task<> exec_op(World* w, Ctx c, const Op* op, Scope* scope) {
  switch (op->kind) {
    case Kind::Observe:
      w->observe(c, "observe");
      break;
    case Kind::Yield:
      co_await yield();
      w->observe(c, "after a yield");
      break;
    case Kind::Where: {
      Ctx inner = c;
      inner.exp[static_cast<std::size_t>(op->a)] = op->v;
      auto body = [w, inner, ops = &op->body]() { return exec_block(w, inner, ops); };
      Task<> t = ukey(op->a).where(op->v, std::move(body));
      co_await std::move(t);
      w->observe(c, "after a where");  // [FL-3.1] restored
      break;
    }
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
      if (op->await == Await::Now) {
        Task<> a = await_lane(w, c, id, std::move(*t));
        co_await std::move(a);
      } else if (op->await == Await::Later) {
        c.pending->push_back(Pending::of_lane(id, std::move(*t)));
      } else if (op->await == Await::Child || op->await == Await::Detached) {
        hand_off(w, c, scope, op->await, false, id, std::nullopt, std::move(t));
      }
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
    case Kind::Task: {
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
    case Kind::Defer: {
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
    case Kind::Table: {
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

// Plain ops: a lane item's body, or a plain where/run body inside one.
inline void exec_plain(World* w, const Ctx& c, const std::vector<Op>& ops) {
  w->observe(c, "plain block start");
  for (const Op& op : ops) {
    switch (op.kind) {
      case Kind::Where: {
        Ctx inner = c;
        inner.exp[static_cast<std::size_t>(op.a)] = op.v;
        ukey(op.a).where(op.v, [&] { exec_plain(w, inner, op.body); });
        w->observe(c, "after a plain where");  // [FL-3.1]
        break;
      }
      case Kind::Call: {  // never awaited: a plain body cannot await
        const int act = op.a % w->prog.activations;
        const std::string method = op.inter ? "i" : "s";
        const int id = w->new_call(act, !op.inter, method, c.exp, &op.body);
        if (c.lane >= 0) ++w->stats.lane_item_calls;
        w->note(c.name + " calls " + World::cname(id) + " a" + std::to_string(act) + "." + method);
        try {
          Task<int> t = w->acts[static_cast<std::size_t>(act)].call(method, turn_fn(w, id));
          (void)t;
        } catch (const std::exception& e) {
          w->error("reentrancy", c.name + ": call " + World::cname(id) + " threw at the call: " + e.what());
        }
        break;
      }
      case Kind::Run: {
        StateLane& lane = w->lanes[static_cast<std::size_t>(op.a)];
        if (c.lane == op.a) {  // deliberate reentry: refused at the call [LANE-5.3]
          try {
            Task<> t = lane.run([] {});
            (void)t;
            w->error("lane", c.name + ": run() on its own lane L" + std::to_string(op.a) + " did not throw");
          } catch (const LaneReentrancyError& e) {
            if (std::string(e.what()).find(lane.name()) == std::string::npos)
              w->error("lane", c.name + ": the reentrancy error does not name the lane [LANE-5.5]");
          }
          break;
        }
        const int id = w->new_item(op.a, c.exp, &op.body);
        try {
          Task<> t = lane.run([w, id] { lane_item(w, id); });
          (void)t;  // queued all the same [LANE-5.8]
        } catch (const std::exception& e) {
          w->drop_item(id);
          w->error("lane", c.name + ": run() on L" + std::to_string(op.a) + " threw " + e.what());
        }
        break;
      }
      case Kind::Post: {
        const int id = w->new_item(op.a, c.exp, &op.body);
        if (!w->lanes[static_cast<std::size_t>(op.a)].try_post([w, id] { lane_item(w, id); })) {
          w->drop_item(id);
          w->error("lane", c.name + ": try_post refused");
        }
        break;
      }
      case Kind::Detach: {
        Ctx d;
        d.name = "detached from " + c.name;
        ++w->scheduled;
        detach(w->sched, fiber_root(w, d, &op.body));
        break;
      }
      case Kind::Capture:
        w->snaps.push_back(Snap{FiberContext::capture(), c.exp});
        break;
      case Kind::RunSnap: {
        const Snap snap = w->snaps.empty() ? Snap{} : w->snaps[static_cast<std::size_t>(op.a) % w->snaps.size()];
        Ctx inner = c;
        inner.exp = snap.exp;
        snap.ctx.run([&] { exec_plain(w, inner, op.body); });
        w->observe(c, "after a plain run");
        break;
      }
      case Kind::Table: {
        Task<> t = submit_table(w, c, op);
        w->late.push_back(std::move(t));
        break;
      }
      default:
        w->observe(c, "observe");
        break;
    }
  }
  w->observe(c, "plain block end");
}

inline Task<> collector(World* w) {
  for (std::size_t i = 0; i < w->late.size(); ++i) {
    Task<> t = std::move(w->late[i]);
    co_await std::move(t);
  }
  ++w->finished;
}

// ------------------------------------------------------------------ the run

struct Outcome {
  DriveResult drive;
  bool hang = false;
  std::string hang_report;
  std::map<std::string, std::vector<std::string>> errors;
  std::string dump;
  Stats stats;
  std::size_t calls = 0, items = 0;
  bool ok() const { return !hang && errors.empty(); }
};

inline std::string hang_report(const World& w) {
  std::ostringstream os;
  os << "no runnable work, but " << (w.scheduled - w.finished)
     << " execution units are unfinished (fibers, turns, lane items, work items)";
  for (const WaitRec& wr : w.waits)
    if (!wr.done)
      os << "\n    " << wr.who << " still awaits call #" << wr.to
         << (wr.predicted ? " (the model says this await closes a cycle: it should have been refused)" : "");
  for (std::size_t i = 0; i < w.calls.size(); ++i) {
    const CallRec& r = w.calls[i];
    if (r.st != CallState::Settled)
      os << "\n    call #" << i << " a" << r.act << "." << r.method << " is "
         << (r.st == CallState::Queued ? "queued" : "running");
  }
  for (std::size_t i = 0; i < w.items.size(); ++i)
    if (!w.items[i].ran) os << "\n    lane item " << i << " of L" << w.items[i].lane << " never ran";
  return os.str();
}

inline Outcome run_program(const Program& p, const std::vector<std::size_t>& schedule) {
  auto w = std::make_unique<World>(p);
  for (int i = 0; i < p.workers; ++i) {
    ++w->scheduled;
    detach(w->sched, worker(w.get(), i));
  }
  for (std::size_t i = 0; i < p.roots.size(); ++i) {
    Ctx c;
    c.name = "root " + std::to_string(i);
    ++w->scheduled;
    detach(w->sched, fiber_root(w.get(), c, &p.roots[i]));
  }
  Outcome out;
  out.drive = drive(w->sched, schedule);
  // Idle: everything but the workers (waiting for more work) must be done.
  bool quiescent = out.drive.idle && w->finished + p.workers == w->scheduled;
  if (quiescent) {
    w->ch.close();  // the workers finish
    ++w->scheduled;
    detach(w->sched, collector(w.get()));
    const DriveResult d2 = drive(w->sched, {});
    quiescent = d2.idle && w->finished == w->scheduled;
  }
  if (quiescent) {
    for (std::size_t a = 0; a < w->acts.size(); ++a) {
      const Act& act = w->acts[a];
      if (act.queued() != 0 || act.running() != 0 || act.tasks() != 0)
        w->error("turn", "a" + std::to_string(a) + " not idle at the end: queued " +
                             std::to_string(act.queued()) + ", running " + std::to_string(act.running()) +
                             ", tasks " + std::to_string(act.tasks()));
      const auto made = std::count_if(w->calls.begin(), w->calls.end(),
                                      [&](const CallRec& r) { return r.act == static_cast<int>(a); });
      if (act.turns_completed() != static_cast<std::uint64_t>(made))
        w->error("turn", "a" + std::to_string(a) + ": turns_completed() disagrees with the model");
    }
  }
  out.hang = !quiescent;
  if (out.hang) out.hang_report = hang_report(*w);
  out.errors = w->book.errors;
  out.dump = w->book.dump();
  out.stats = w->stats;
  out.calls = w->calls.size();
  out.items = w->items.size();
  if (out.hang) {
    // Not quiescent: leak rather than destroy activations and lanes with work pending.
    (void)w.release();
  }
  return out;
}

}  // namespace turnstile::prop::composed
