// property_tests/composed/composed_world.hpp: the world a composed program
// runs in (2-3 activations, lanes L0 L1, a BindingTable, keys u0 u1, a Channel
// and its workers, on one ManualScheduler), and the checks that compare the
// live run with the model (composed_model.hpp) at every observation point.
//
// Every execution context carries a Ctx: the user bindings it must see (u0,
// u1), its position (the lane whose item it is, or the turn it is part of)
// and, for wait attribution, that turn. Ctx values flow by the position table
// ([FL-3.8], spec/fiber-local.md): a lane item takes the submitter's bindings
// and that lane; an actor turn (call, turn(fn)) takes the caller's bindings at
// the call and itself as position; ctx.task, detach and the channel carry
// nothing; a Scope child takes all of its parent's; FiberContext::run takes
// the snapshot's bindings and keeps the running context's position.
// `observe` compares the live FiberLocal values, StateLane::current() and
// detail::turn_marker() with the Ctx at every observation point (block start
// and end, after every await and every where/run, ...).
//
// Thread safety: none needed; everything runs on the driver thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "composed_model.hpp"
#include "composed_program.hpp"
#include "turnstile/activation.hpp"
#include "turnstile/binding_table.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/scheduler.hpp"
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

class World : public Model {
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
  turnstile_test::ErrorBook book{{}, {}, 600};  // errors by category; the first 600 notes

  void error(const std::string& category, const std::string& what) {
    book.record_error(sched.steps(), category, what);
  }
  void note(const std::string& what) { book.record_note(sched.steps(), what); }

  // ------------------------------------------------------------ observation

  // Bindings, position and serial turn of the running code against its Ctx.
  void observe(const Ctx& c, const char* where) {
    observe_bindings(c, where);
    observe_position(c, where);
    observe_serial(c, where);
  }

  // fiber-local: u0/u1 as the Ctx says. [FL-3.x]
  void observe_bindings(const Ctx& c, const char* where) {
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
  }

  // The position table: the lane and the turn marker of the Ctx. [FL-3.8]
  void observe_position(const Ctx& c, const char* where) {
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
  }

  // turns: a serial turn's code runs while the model says it holds the lane,
  // and the state is still its own.
  void observe_serial(const Ctx& c, const char* where) {
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

  // ------------------------------------------------------------------ turns

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

  int begin_wait(const Ctx& c, int to) {
    const WaitRec wr = predict_wait(c.turn, c.act, to, c.name);
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

};

}  // namespace turnstile::prop::composed
