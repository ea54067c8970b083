// property_tests/event_props.cpp: Event::set under generated waiters and
// generated schedules (see event_scenario.hpp, generated_schedules.hpp).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <vector>

#include "event_scenario.hpp"
#include "generated_schedules.hpp"

namespace turnstile::prop {
namespace {

// spec: [RT-4.1] [RT-4.2]
RC_GTEST_PROP(EventProperty, SetReleasesEveryWaiterOnceInWaitOrderNeverInline, ()) {
  const EventConfig cfg = *gen_event_config().as("waiters and setter");
  const EventRun run = run_scheduled([&](const auto& c) { return run_event_scenario(cfg, c); });
  RC_ASSERT(run.setter_done);
  RC_ASSERT(run.live_fibers_after == 0u);

  // Every waiter is released exactly once, never inside the set() call.
  for (const WaiterObservation& o : run.waiters) {
    RC_ASSERT(o.began);
    RC_ASSERT(o.resumed == 1);
    RC_ASSERT(!o.resumed_inside_set);
  }
  // set() posted exactly one resumption per suspended waiter, and nothing else...
  const std::size_t released = run.posts_after_set - run.posts_before_set;
  RC_ASSERT(released == run.waiting_at_set.size());
  // ...in the order the waiters began waiting: the k-th of them is resumed by
  // the k-th item set() posted, whatever order the schedule then ran them in.
  for (std::size_t k = 0; k < run.waiting_at_set.size(); ++k) {
    const WaiterObservation& o = run.waiters[run.waiting_at_set[k]];
    RC_ASSERT(!o.was_set_at_begin);
    RC_ASSERT(o.item_after == run.posts_before_set + k);
    if (k > 0) RC_ASSERT(run.waiters[run.waiting_at_set[k - 1]].begin_order < o.begin_order);
  }
  // A wait that begins on a set event passes at once: same step, no suspension.
  for (const WaiterObservation& o : run.waiters)
    if (o.was_set_at_begin) RC_ASSERT(o.item_after == o.item_before);
  // Setting a set event releases nobody.
  RC_ASSERT(run.posts_by_second_set == 0u);
  RC_CLASSIFY(run.waiting_at_set.size() > 1, "several waiters released");
  RC_CLASSIFY(run.waiting_at_set.size() < run.waiters.size(), "some waits after set");
}

}  // namespace
}  // namespace turnstile::prop
