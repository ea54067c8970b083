// property_tests/composed/composed_plain.hpp: the interpreter of a plain
// block: a lane item's body, or a plain where/run body inside one. A plain
// block runs inside a lane's turn and cannot await, so its calls and runs are
// queued and never awaited, its table ops are awaited by the collector, and a
// run() onto its own lane must be refused at the call ([LANE-5.3]).
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "composed_contexts.hpp"
#include "composed_program.hpp"
#include "composed_world.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop::composed {

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
        w->note(c.name + " calls " + Model::cname(id) + " a" + std::to_string(act) + "." + method);
        try {
          Task<int> t = w->acts[static_cast<std::size_t>(act)].call(method, turn_fn(w, id));
          (void)t;
        } catch (const std::exception& e) {
          w->error("reentrancy", c.name + ": call " + Model::cname(id) + " threw at the call: " + e.what());
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

}  // namespace turnstile::prop::composed
