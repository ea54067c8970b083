// property_tests/composed/composed_model.hpp: the model the composed run is
// checked against (composed_world.hpp compares the live run with it).
//
// All of it lives on the driver thread: a ManualScheduler runs one item at a
// time, so this bookkeeping needs no locks.
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
//     op's result is compared with it ([LANE-8.10]).
//   - the execution units scheduled and finished (fibers, turns, lane items,
//     work items): the run is quiescent when they are equal.
// What each execution context must see (its bindings and position) is its Ctx
// (composed_world.hpp), which the interpreter builds as contexts are made.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "composed_program.hpp"
#include "turnstile/activation.hpp"

namespace turnstile::prop::composed {

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

class Model {
 public:
  std::deque<CallRec> calls;
  std::vector<ActModel> act_model;
  std::vector<ItemRec> items;
  std::vector<LaneModel> lane_model;
  std::vector<WaitRec> waits;
  std::map<int, int> a2s, s2a;  // the BindingTable's model
  long scheduled = 0, finished = 0;  // execution units: fibers, turns, lane items, work items
  Stats stats;

  static std::string cname(int id) { return "#" + std::to_string(id); }

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

  // The prediction for an await of call `to` by code that is part of turn
  // `from` (-1: part of no turn) of activation `act`: refused iff `to` reaches
  // `from`; an unrefused await by a turn becomes an edge of the graph.
  WaitRec predict_wait(int from, int act, int to, std::string who) {
    WaitRec wr;
    wr.from = from;
    wr.to = to;
    wr.who = std::move(who);
    if (from >= 0) {
      std::vector<char> seen(calls.size(), 0);
      int hops = 0;
      wr.predicted = reaches(to, from, seen, hops);
      if (wr.predicted && (hops > 1 || calls[static_cast<std::size_t>(to)].act != act))
        ++stats.cross_refusals;
    }
    wr.active = from >= 0 && !wr.predicted;
    return wr;
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

}  // namespace turnstile::prop::composed
