// property_tests/turns/turns_props.cpp: actor turns (spec/turns.md) under
// generated mixes of serial and interleaved calls with awaits inside their
// bodies, and generated schedules (turns_scenario.hpp, generated_schedules.hpp), against a
// sequential model.
//
// Every property runs the same scenario and judges one part of what the turns
// and callers recorded; each also asserts that the run reached quiescence with
// every caller finished and the activation idle, so a hang (one lane waiting
// for the other) fails it with a counterexample.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "generated_schedules.hpp"
#include "turns_scenario.hpp"

namespace turnstile::prop::turns {
namespace {

TurnsOutcome run_generated() { return run_callers(gen_turns_config(), run_turns_scenario); }

// Serial turns as [start, end] intervals of the logical clock, in start order,
// never overlapping: each ends before the next one starts.
void assert_serial_intervals_disjoint(const TurnsRecords& r) {
  std::vector<const TurnRec*> serial;
  for (const TurnRec& t : r.turns)
    if (t.serial) serial.push_back(&t);
  std::sort(serial.begin(), serial.end(),
            [](const TurnRec* a, const TurnRec* b) { return a->start_tick < b->start_tick; });
  for (std::size_t i = 0; i < serial.size(); ++i) {
    RC_ASSERT(serial[i]->starts == 1);
    RC_ASSERT(serial[i]->ended);
    if (i + 1 < serial.size()) RC_ASSERT(serial[i]->end_tick < serial[i + 1]->start_tick);
  }
}

// spec: [TURN-3.1] [TURN-1.1]
RC_GTEST_PROP(TurnsProperty, SerialTurnsNeverOverlapAcrossAwaits, ()) {
  const TurnsOutcome out = run_generated();
  // No serial body started, or resumed after an await, while another serial
  // body was in progress (suspended or not).
  RC_ASSERT(out.rec.ok("overlap"));
  assert_serial_intervals_disjoint(out.rec);
  std::size_t suspending = 0;
  for (const TurnRec& t : out.rec.turns) suspending += t.serial && t.yields > 0 ? 1 : 0;
  RC_CLASSIFY(suspending > 1, "several serial turns suspend");
}

// spec: [TURN-2.2] [TURN-3.1]
RC_GTEST_PROP(TurnsProperty, SerialTurnsStartInCallOrder, ()) {
  const TurnsOutcome out = run_generated();
  const TurnsRecords& r = out.rec;
  // Arrival order is call order, whether the Task was awaited at once, later
  // (newest first), or never.
  RC_ASSERT(r.serial_starts == r.serial_calls);
  bool unawaited = false;
  for (const TurnRec& t : r.turns) {
    RC_ASSERT(t.starts == 1);
    unawaited = unawaited || !t.awaited;
  }
  RC_CLASSIFY(unawaited, "some call never awaited");
  RC_CLASSIFY(r.serial_calls.size() > 3, "more than 3 serial calls");
}

// spec: [TURN-2.3]
RC_GTEST_PROP(TurnsProperty, QueuedCountsSerialCallsNotStarted, ()) {
  const TurnsOutcome out = run_generated();
  const TurnsRecords& r = out.rec;
  // At every observation point (after each call, in every step of every body,
  // in callers after each await): queued() == serial calls made - serial turns
  // started, and running() == turns started - turns settled.
  RC_ASSERT(r.ok("queued"));
  RC_ASSERT(r.ok("running"));
  RC_ASSERT(r.queued_at_end == 0u);
  RC_ASSERT(r.running_at_end == 0u);
  RC_ASSERT(r.completed_at_end == r.turns.size());
}

// spec: [TURN-1.1]
RC_GTEST_PROP(TurnsProperty, ATurnEndsWhenItsBodySettles, ()) {
  const TurnsOutcome out = run_generated();
  const TurnsRecords& r = out.rec;
  for (std::size_t id = 0; id < r.turns.size(); ++id) {
    const TurnRec& t = r.turns[id];
    RC_ASSERT(t.ended);
    if (!t.awaited) continue;
    // The caller resumes only once the body has settled, with what it settled.
    RC_ASSERT(t.resumed);
    RC_ASSERT(t.ended_at_resume);
    RC_ASSERT(!t.other_error);
    if (t.throws) {
      RC_ASSERT(t.error_id == std::optional<int>(static_cast<int>(id)));
    } else {
      RC_ASSERT(t.value == std::optional<int>(static_cast<int>(id)));
    }
  }
  // A suspended turn is still running, and still holds the serial lane.
  RC_ASSERT(r.ok("running"));
  assert_serial_intervals_disjoint(r);
  RC_ASSERT(r.completed_at_end == r.turns.size());
}

// spec: [TURN-1.2]
RC_GTEST_PROP(TurnsProperty, OneStepOfTheActivationAtATime, ()) {
  const TurnsOutcome out = run_generated();
  // Every step of every turn ran on the activation's one Strand, never inside
  // another step, and saw the state change only by its own writes.
  RC_ASSERT(out.rec.ok("step"));
}

// spec: [TURN-3.2]
RC_GTEST_PROP(TurnsProperty, InterleavedTurnsStartAtOnceAndObserveChanges, ()) {
  // Liveness is the check (run_generated): serial bodies wait on gates only
  // interleaved turns open and vice versa, so had either lane waited for the
  // other, the run would have hung.
  const TurnsOutcome out = run_generated();
  const TurnsRecords& r = out.rec;
  // After each await an interleaved turn reads the live state, with every
  // change other turns made meanwhile.
  RC_ASSERT(r.ok("step"));
  bool overlapped = false;
  bool changed = false;
  for (const TurnRec& t : r.turns) {
    RC_ASSERT(t.starts == 1 && t.ended);
    if (t.serial) continue;
    overlapped = overlapped || t.saw_serial_running;
    changed = changed || t.saw_change;
  }
  RC_CLASSIFY(overlapped, "interleaved ran during a serial turn");
  RC_CLASSIFY(changed, "interleaved saw the state change across an await");
}

}  // namespace
}  // namespace turnstile::prop::turns
