// property_tests/composed/composed_props.cpp: the three contracts together.
//
// Each property generates a program mixing lanes, activations, Scope, detach,
// ctx.task / turn(fn), Channel handoffs of FiberContext snapshots, deferred
// Tasks and BindingTable calls (composed_program.hpp), runs it on one
// ManualScheduler under a generated schedule and checks, after every program,
// every contract at once (composed_runner.hpp, against composed_model.hpp):
//   - lane exclusivity and FIFO per lane; serial-turn exclusivity and arrival
//     order per activation (and the state a serial turn starts from);
//   - binding restoration and flow (every observation point against the Ctx
//     model: where, spawn, call, lane items, task, detach, channel, run);
//   - the position table: StateLane::current() and the turn marker at every
//     observation point;
//   - TurnReentrancyError exactly where the model's wait-for graph has a
//     cycle, never at call(); LaneReentrancyError only on a lane item's
//     run() into its own lane;
//   - quiescence or a refused cycle, never a silent hang;
//   - the BindingTable's results against a sequential model, and its
//     cross-collection invariant after every op's turn.
// The properties differ in their mix of ops, so that each exercises its rules
// often (RC_CLASSIFY shows how often the interesting case happened); every one
// of them asserts every check.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "composed_program.hpp"
#include "composed_runner.hpp"

namespace turnstile::prop::composed {
namespace {

using K = Kind;

Outcome run_and_check(const Mix& mix) {
  const Case k = *gen_case(mix).as("case");
  Outcome out = run_program(k.value, k.schedule);
  RC_LOG() << out.dump;
  if (out.hang) RC_FAIL("hang (never silent): " + out.hang_report);
  for (const auto& [category, list] : out.errors)
    for (const std::string& e : list) RC_LOG() << "[" << category << "] " << e << "\n";
  RC_ASSERT(out.errors.empty());
  return out;
}

// spec: [LANE-5.1] [LANE-5.2] [TURN-3.1] [TURN-2.2] [FL-3.1] [FL-3.8] [FL-3.9] [TURN-7.1] [LANE-5.3]
RC_GTEST_PROP(ComposedProperty, EveryContractHoldsInMixedPrograms, ()) {
  // Every kind of op, evenly: the composition as a whole.
  const Mix mix = Mix::of({{K::Observe, 1}, {K::Yield, 1}, {K::Where, 2}, {K::Call, 4}, {K::Run, 2},
                           {K::Post, 2}, {K::Spawn, 1}, {K::Detach, 1}, {K::Task, 1}, {K::Turn, 1},
                           {K::Send, 1}, {K::Capture, 1}, {K::RunSnap, 1}, {K::Defer, 1},
                           {K::Table, 1}});
  const Outcome out = run_and_check(mix);
  RC_CLASSIFY(out.stats.refusals > 0, "a wait cycle refused");
  RC_CLASSIFY(out.stats.lane_item_calls > 0, "a lane item called an actor");
  RC_CLASSIFY(out.calls > 8, "more than 8 calls");
}

// spec: [FL-3.8] [FL-3.9] [LANE-6.2] [TURN-5.1] [FL-3.4] [RT-3.4] [LANE-8.7]
RC_GTEST_PROP(ComposedProperty, PositionTableHoldsAcrossLanesTurnsTasksAndHandoffs, ()) {
  // Lane items that call actors whose turns run lanes; tasks, detached fibers,
  // channel work items; snapshots captured in one position and run in another.
  // In every lane item StateLane::current() is that lane and there is no turn
  // marker; in every actor turn no lane marker and its own turn marker; in
  // tasks, detached fibers and work items neither.
  const Mix mix = Mix::of({{K::Observe, 1}, {K::Where, 1}, {K::Call, 4}, {K::Run, 4}, {K::Post, 3},
                           {K::Spawn, 1}, {K::Detach, 1}, {K::Task, 2}, {K::Turn, 1}, {K::Send, 1},
                           {K::Capture, 2}, {K::RunSnap, 2}});
  const Outcome out = run_and_check(mix);
  RC_CLASSIFY(out.stats.lane_item_calls > 0, "a lane item called an actor");
  RC_CLASSIFY(out.stats.turn_lane_awaits > 0, "a turn awaited a lane run");
  RC_CLASSIFY(out.stats.snap_runs_in_turn > 0, "a snapshot ran inside a turn");
  RC_CLASSIFY(out.stats.tasks > 0, "a ctx.task ran");
}

// spec: [TURN-7.1] [TURN-2.2] [TURN-3.1] [TURN-3.2] [TURN-1.1] [TURN-4.1] [TURN-5.2]
RC_GTEST_PROP(ComposedProperty, WaitCyclesAreRefusedAtTheAwaitAndNothingHangs, ()) {
  // Calls between activations awaited now, later or never; self-calls;
  // turn(fn) from turns and tasks; Scope children of turns that await calls.
  // The await throws TurnReentrancyError iff the model's wait-for graph has a
  // cycle through it (self, through other activations, through queued calls,
  // across independent requests); the program then always reaches quiescence.
  Mix mix = Mix::of({{K::Observe, 1}, {K::Yield, 1}, {K::Call, 8}, {K::Turn, 2}, {K::Task, 1},
                     {K::Spawn, 2}, {K::Run, 1}, {K::Post, 1}, {K::Capture, 1}, {K::RunSnap, 1}});
  mix.await_now_in_4 = 3;
  const Outcome out = run_and_check(mix);
  RC_CLASSIFY(out.stats.refusals > 0, "a wait cycle refused");
  RC_CLASSIFY(out.stats.cross_refusals > 0, "a cycle through another call refused");
}

// spec: [FL-4.7] [FL-3.1] [FL-3.2] [FL-3.3] [FL-3.5] [FL-3.6] [RT-1.1]
RC_GTEST_PROP(ComposedProperty, TaskBodiesBindFromTheirStartNotFromWhereTheyWereMade, ()) {
  // Tasks made inside a where of one key and awaited outside it (a bare Task,
  // or another key's where_task), calls made inside wheres and awaited after
  // them (the turn sees the bindings at the call), spawns, channel handoffs
  // and snapshot runs, all around wheres.
  const Mix mix = Mix::of({{K::Observe, 1}, {K::Yield, 1}, {K::Where, 4}, {K::Defer, 4},
                           {K::Call, 2}, {K::Spawn, 2}, {K::Send, 2}, {K::Capture, 2},
                           {K::RunSnap, 2}, {K::Run, 1}});
  const Outcome out = run_and_check(mix);
  RC_CLASSIFY(out.stats.deferred > 0, "a deferred task body ran");
}

// spec: [LANE-5.1] [LANE-5.2] [LANE-5.3] [LANE-7.7] [LANE-8.4] [LANE-8.2] [LANE-5.8]
RC_GTEST_PROP(ComposedProperty, LanesStayExclusiveFifoAndNonReentrantAmongTurns, ()) {
  // Lane runs awaited from fibers and turns, try_post from items onto their
  // own and other lanes, items that re-enter their own lane (refused at the
  // call) and call actors whose turns enter the same lane (never refused).
  const Mix mix = Mix::of({{K::Observe, 1}, {K::Where, 1}, {K::Run, 5}, {K::Post, 4}, {K::Call, 3},
                           {K::Spawn, 1}, {K::Yield, 1}});
  const Outcome out = run_and_check(mix);
  RC_CLASSIFY(out.items > 6, "more than 6 lane items");
  RC_CLASSIFY(out.stats.lane_item_calls > 0, "a lane item called an actor");
}

// spec: [LANE-8.10] [LANE-4.2] [LANE-6.1] [LANE-8.1] [LANE-5.2]
RC_GTEST_PROP(ComposedProperty, BindingTableInvariantHoldsAfterEveryTurn, ()) {
  // bind / rebind / unbind / session_of / actor_of / size from fibers, turns,
  // tasks, Scope children and lane items, interleaved by the schedule. Each
  // op's result equals the sequential model's (submission order is the lane's
  // order), and consistent(), submitted right behind each op, is true.
  const Mix mix = Mix::of({{K::Observe, 1}, {K::Table, 6}, {K::Call, 3}, {K::Run, 2}, {K::Post, 2},
                           {K::Spawn, 1}, {K::Yield, 1}, {K::Task, 1}, {K::Turn, 1}});
  const Outcome out = run_and_check(mix);
  RC_CLASSIFY(out.stats.table_checks > 6, "more than 6 table ops checked");
}

}  // namespace
}  // namespace turnstile::prop::composed
