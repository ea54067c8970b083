// property_tests/fiber_local/fiber_local_props.cpp: FiberLocal / FiberContext
// under generated programs and generated schedules.
//
// Each property generates a program (fl_program.hpp) with its own mix of
// operations, runs it on two ManualSchedulers under a generated schedule
// (fl_runner.hpp, generated_schedules.hpp), and compares every read point with the
// sequential model of binding stacks (fl_model.hpp): the same reads must run,
// and each must see exactly what the model says. The mixes differ so that each
// property exercises its rule often; RC_CLASSIFY shows how often the schedule
// made the interesting case happen.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "fl_model.hpp"
#include "fl_program.hpp"
#include "fl_runner.hpp"
#include "generated_schedules.hpp"

namespace turnstile::prop::fl {
namespace {

struct Checked {
  Model model;
  FlRun run;
};

// Generates a case of `mix`, runs its program under its schedule and asserts
// that the run matches the model.
Checked run_and_compare(const Mix& mix) {
  const Case k = *gen_case(mix).as("case");
  const Scenario sc = number_program(k.value);
  Checked c;
  c.run = run_program(sc, k.schedule);
  const FlRun& run = c.run;
  c.model.evaluate(sc, [&](int op) {
    const auto it = run.item_worker.find(op);
    return it == run.item_worker.end() ? -1 : it->second;
  });

  RC_LOG() << "numbered program " << render(sc.program, true) << "\n";
  for (const std::string& e : run.errors) RC_LOG() << "error in a fiber: " << e << "\n";
  RC_ASSERT(run.drive.idle);
  RC_ASSERT(run.errors.empty());
  RC_ASSERT(run.main_done);
  RC_ASSERT(run.workers_done == sc.workers);
  RC_ASSERT(run.fibers_started == run.fibers_finished);
  // The test thread's own binding was neither seen by a fiber (checked by the
  // reads) nor disturbed by them, and it ended with its where ([FL-5.1]).
  RC_ASSERT(run.thread_binding_kept);
  RC_ASSERT(run.thread_unbound_after);

  std::size_t mismatches = 0;
  for (const auto& [p, want] : c.model.expect) {
    const auto it = run.reads.find(p);
    if (it == run.reads.end()) {
      RC_LOG() << "read point " << show_point(p) << " did not run; the model expects "
               << show_values(want) << "\n";
      ++mismatches;
    } else if (it->second.values != want) {
      RC_LOG() << "read point " << show_point(p) << " in " << it->second.fiber << " saw "
               << show_values(it->second.values) << ", the model expects " << show_values(want)
               << "\n";
      ++mismatches;
    }
  }
  for (const auto& [p, seen] : run.reads)
    if (c.model.expect.count(p) == 0) {
      RC_LOG() << "read point " << show_point(p) << " in " << seen.fiber
               << " ran, but the model says it is skipped by a throw\n";
      ++mismatches;
    }
  RC_ASSERT(mismatches == 0u);
  return c;
}

using K = Kind;

// spec: [FL-3.1] [FL-6.2]
RC_GTEST_PROP(FiberLocalProperty, WhereRestoresTheKeyOnReturnAndOnThrow, ()) {
  // Nested wheres (Task and plain bodies) on the same and different keys,
  // throws caught at generated try levels, suspensions in between.
  const Mix mix = Mix::of({{K::Read, 3}, {K::Yield, 1}, {K::Hop, 1}, {K::Throw, 3}, {K::Where, 5},
                           {K::Try, 2}, {K::Spawn, 1}});
  const Checked c = run_and_compare(mix);
  RC_CLASSIFY(c.model.stats.wheres_unwound > 0, "a where unwound by a throw");
  RC_CLASSIFY(c.model.stats.shadowing_wheres > 0, "a where shadows a binding");
}

// spec: [FL-3.2] [FL-5.1]
RC_GTEST_PROP(FiberLocalProperty, ChildSeesTheParentsBindingsAsAtTheSpawn, ()) {
  // Spawns inside and next to wheres; the parent goes on (rebinding, leaving
  // wheres) before, while or after its children run, as the schedule decides.
  const Mix mix = Mix::of({{K::Read, 3}, {K::Yield, 2}, {K::Hop, 1}, {K::Throw, 1}, {K::Where, 5},
                           {K::Try, 1}, {K::Spawn, 4}});
  const Checked c = run_and_compare(mix);
  RC_CLASSIFY(c.run.children_started_after_parent_rebound > 0,
              "a child started after its parent rebound");
  RC_CLASSIFY(c.model.stats.spawns_while_bound > 0, "a spawn with bindings in effect");
}

// spec: [FL-3.3] [FL-5.1]
RC_GTEST_PROP(FiberLocalProperty, ChildRebindingIsInvisibleToParentAndSiblings, ()) {
  // Children (and grandchildren) that bind, yield and hop while their parent
  // and siblings read.
  const Mix mix = Mix::of({{K::Read, 4}, {K::Yield, 3}, {K::Hop, 1}, {K::Throw, 1}, {K::Where, 5},
                           {K::Try, 1}, {K::Spawn, 4}});
  const Checked c = run_and_compare(mix);
  RC_CLASSIFY(c.run.reads_while_another_fiber_bound > 0,
              "a read while another fiber had a binding");
  RC_CLASSIFY(c.model.stats.rebinding_children > 0, "a child rebinds");
}

// spec: [FL-3.4]
RC_GTEST_PROP(FiberLocalProperty, DetachAndChannelCarryNoBindings, ()) {
  // Detached fibers and work items sent without a captured context, from
  // inside wheres: they start from nothing (a bare item: the worker's own).
  const Mix mix = Mix::of({{K::Read, 3}, {K::Yield, 1}, {K::Throw, 1}, {K::Where, 5}, {K::Try, 1},
                           {K::Spawn, 1}, {K::Detach, 3}, {K::Send, 3}});
  Mix bare = mix;
  bare.capture_in_4 = 0;
  const Checked c = run_and_compare(bare);
  RC_CLASSIFY(c.model.stats.bare_handoffs_while_bound > 0,
              "a handoff made with bindings in effect");
}

// spec: [FL-3.5] [FL-3.6]
RC_GTEST_PROP(FiberLocalProperty, CaptureAndRunCarryTheSnapshotAndRestoreTheFiber, ()) {
  // Snapshots captured at generated points, run later (after their wheres
  // ended, inside other wheres, in children), with Task and plain bodies that
  // bind and throw.
  const Mix mix = Mix::of({{K::Read, 3}, {K::Yield, 1}, {K::Hop, 1}, {K::Throw, 2}, {K::Capture, 3},
                           {K::Where, 5}, {K::Try, 1}, {K::Run, 4}, {K::Spawn, 1}});
  const Checked c = run_and_compare(mix);
  RC_CLASSIFY(c.model.stats.stale_runs > 0, "a run of a snapshot that differs from the fiber's");
  RC_CLASSIFY(c.model.stats.runs_unwound > 0, "a run unwound by a throw");
}

// spec: [FL-6.1] [FL-3.5] [FL-3.6] [FL-6.2]
RC_GTEST_PROP(FiberLocalProperty, NoBindingLeaksAcrossRequestsThroughAWorker, ()) {
  // Requests (the main fiber and its children) bind, then hand work items to
  // one or two long-lived workers, mostly with a captured context. Item bodies
  // bind, run snapshots and throw out of the run. Each worker reads before and
  // after every item: only its own bindings, never a request's.
  const Mix mix = Mix::of({{K::Read, 2}, {K::Yield, 1}, {K::Throw, 2}, {K::Capture, 1},
                           {K::Where, 5}, {K::Try, 1}, {K::Run, 1}, {K::Spawn, 2}, {K::Send, 4}});
  Mix requests = mix;
  requests.capture_in_4 = 3;
  const Checked c = run_and_compare(requests);
  RC_CLASSIFY(c.model.stats.workers_serving_several_contexts > 0,
              "a worker served several requests' contexts");
  RC_CLASSIFY(c.model.stats.items_thrown_out > 0, "an item's body threw out of run");
}

// spec: [FL-3.1] [FL-3.2] [FL-3.3] [FL-3.4] [FL-3.5] [FL-3.6] [FL-5.1] [FL-6.1] [FL-6.2]
RC_GTEST_PROP(FiberLocalProperty, MixedProgramsMatchTheBindingStackModel, ()) {
  // Every operation at once.
  const Mix mix = Mix::of({{K::Read, 3}, {K::Yield, 2}, {K::Hop, 1}, {K::Throw, 2}, {K::Capture, 2},
                           {K::Where, 5}, {K::Try, 2}, {K::Run, 2}, {K::Spawn, 2}, {K::Detach, 1},
                           {K::Send, 2}});
  const Checked c = run_and_compare(mix);
  RC_CLASSIFY(c.model.items.size() > 0, "work items");
  RC_CLASSIFY(c.run.hops > 0, "a fiber changes scheduler");
}

}  // namespace
}  // namespace turnstile::prop::fl
