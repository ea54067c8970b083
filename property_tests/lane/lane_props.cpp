// property_tests/lane/lane_props.cpp: the state lane (spec/state-lane.md)
// under generated workloads and generated schedules (lane_scenario.hpp,
// generated_schedules.hpp), against a sequential model.
//
// Every property runs the same scenario and judges one part of what the
// callers recorded; each also asserts that the run reached quiescence with
// every caller finished, so a hang anywhere fails it with a counterexample.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "lane_scenario.hpp"
#include "generated_schedules.hpp"

namespace turnstile::prop::lane {
namespace {

LaneOutcome run_generated() { return run_callers(gen_lane_config(), run_lane_scenario); }

// spec: [LANE-8.1] [LANE-8.2] [LANE-5.2] [LANE-7.6]
RC_GTEST_PROP(LaneProperty, EveryAcceptedItemRunsOnceInSubmissionOrder, ()) {
  const LaneOutcome out = run_generated();
  const LaneRecords& r = out.rec;

  // The sequential model: the accepted items, in acceptance order, each once.
  // Nothing refused and no reentrant attempt ever runs.
  RC_ASSERT(r.log == r.accepted);
  for (std::size_t id = 0; id < r.items.size(); ++id) {
    const ItemRec& it = r.items[id];
    RC_ASSERT(it.runs == (it.accepted ? 1 : 0));
    // The awaiter of an accepted run() gets its own turn's result: the log
    // position it ran at (or its ItemError).
    if (it.accepted && it.awaited) {
      RC_ASSERT(it.resumed);
      if (!it.throws) RC_ASSERT(it.value == std::optional<int>(static_cast<int>(it.ran_at)));
    }
  }
  // Per caller (happens-before by program order), the caller's own accepted
  // items ran in the order it submitted them.
  std::vector<std::size_t> last_pos(r.callers, 0);
  std::vector<bool> seen(r.callers, false);
  for (const int id : r.accepted) {
    const ItemRec& it = r.items[static_cast<std::size_t>(id)];
    if (it.caller < 0) continue;
    const auto c = static_cast<std::size_t>(it.caller);
    if (seen[c]) RC_ASSERT(it.ran_at > last_pos[c]);
    seen[c] = true;
    last_pos[c] = it.ran_at;
  }
  RC_CLASSIFY(r.callers > 1, "several callers");
  RC_CLASSIFY(r.accepted.size() > 8, "more than 8 items");
}

// spec: [LANE-5.1]
RC_GTEST_PROP(LaneProperty, OneTurnAtATime, ()) {
  const LaneOutcome out = run_generated();
  // No turn started while another was running; inside every turn
  // StateLane::current() was this lane, outside every turn it was null.
  RC_ASSERT(out.rec.ok("one-turn"));
  RC_ASSERT(out.rec.log.size() == out.rec.accepted.size());
}

// spec: [LANE-7.4] [LANE-8.3]
RC_GTEST_PROP(LaneProperty, ClosedLaneRefusesAtTheCall, ()) {
  const LaneOutcome out = run_generated();
  const LaneRecords& r = out.rec;
  RC_ASSERT(r.ok("closed"));
  bool refused = false;
  for (const ItemRec& it : r.items) {
    if (it.kind == ItemKind::kInner) continue;
    // Accepted exactly when no close() came before; a refused run() threw
    // LaneClosedError naming the lane, a refused try_post returned false; and
    // nothing refused was queued.
    RC_ASSERT(it.accepted != it.closed_at_submit);
    RC_ASSERT(it.refused == it.closed_at_submit);
    if (it.refused) RC_ASSERT(it.runs == 0);
    refused = refused || it.refused;
  }
  RC_CLASSIFY(refused, "some submission refused");
}

// spec: [LANE-7.5]
RC_GTEST_PROP(LaneProperty, FailuresReachTheAwaiterAndTheLaneGoesOn, ()) {
  const LaneOutcome out = run_generated();
  const LaneRecords& r = out.rec;
  RC_ASSERT(r.ok("failure"));
  bool failed = false;
  for (std::size_t id = 0; id < r.items.size(); ++id) {
    const ItemRec& it = r.items[id];
    if (!it.accepted) continue;
    RC_ASSERT(it.runs == 1);  // the lane went on past every failure
    if (it.kind == ItemKind::kRun && it.awaited) {
      RC_ASSERT(it.resumed);
      RC_ASSERT(!it.other_error);
      if (it.throws) {
        RC_ASSERT(it.error_id == std::optional<int>(static_cast<int>(id)));  // its own exception
      } else {
        RC_ASSERT(!it.error_id.has_value());
      }
    }
    if (it.kind == ItemKind::kPost) RC_ASSERT(it.handler_calls == (it.throws ? 1 : 0));
    if (it.kind == ItemKind::kRun) RC_ASSERT(it.handler_calls == 0);
    failed = failed || it.throws;
  }
  RC_ASSERT(r.log == r.accepted);
  RC_CLASSIFY(failed, "some work threw");
}

// spec: [LANE-5.3] [LANE-8.4]
RC_GTEST_PROP(LaneProperty, ReentryThrowsAtTheCallAndNothingHangs, ()) {
  const LaneOutcome out = run_generated();  // idle, every caller finished: nothing hung
  const LaneRecords& r = out.rec;
  RC_ASSERT(r.ok("reentry"));
  RC_ASSERT(r.reentry_refused == r.reentrant_turns);
  for (const ItemRec& it : r.items)
    if (it.kind == ItemKind::kInner) RC_ASSERT(!it.accepted && it.runs == 0);  // nothing queued
  RC_CLASSIFY(r.reentrant_turns > 0, "reentrant attempts");
}

// spec: [LANE-7.6]
RC_GTEST_PROP(LaneProperty, CloseCompletesAfterTheLastAcceptedItem, ()) {
  const LaneOutcome out = run_generated();
  const LaneRecords& r = out.rec;
  RC_ASSERT(!r.closes.empty());
  std::size_t accepted_at_close = 0;
  for (const CloseRec& c : r.closes)
    if (c.first) accepted_at_close = c.accepted_at_call;
  for (const CloseRec& c : r.closes) {
    RC_ASSERT(c.done);  // every close(), the first and the repeated ones, completes
    // ... once every item accepted before the lane closed has run, and nothing
    // was accepted after.
    RC_ASSERT(c.accepted_at_done == accepted_at_close);
    RC_ASSERT(c.log_at_done == accepted_at_close);
  }
  RC_ASSERT(r.accepted.size() == accepted_at_close);
  // Once close() has completed and the callers are done, no step of the lane
  // is left on its scheduler: destroying it there, as [LANE-7.6] allows, is safe.
  RC_ASSERT(r.ready_when_last_finished == 0u);
  RC_CLASSIFY(r.closes.size() > 1, "closed more than once");
}

// spec: [LANE-5.6]
RC_GTEST_PROP(LaneProperty, ItemsCompleteOutsideTheTurn, ()) {
  const LaneOutcome out = run_generated();
  const LaneRecords& r = out.rec;
  for (const ItemRec& it : r.items) {
    RC_ASSERT(it.releases == 1);  // every callable released exactly once (none leaked)
    if (it.accepted) {
      // An accepted item completes after its turn, with the marker released:
      // its callable (and what it captured) is released outside any turn.
      RC_ASSERT(!it.released_before_run);
      RC_ASSERT(!it.released_on_lane);
    }
    if (it.resumed) {
      // The awaiter resumes after the turn, in a later (posted) step, outside it.
      RC_ASSERT(it.runs_at_resume == 1);
      RC_ASSERT(!it.resumed_on_lane);
      RC_ASSERT(it.resumed_step > it.ran_step);
    }
  }
  for (const CloseRec& c : r.closes) RC_ASSERT(!c.done_on_lane);
}

}  // namespace
}  // namespace turnstile::prop::lane
