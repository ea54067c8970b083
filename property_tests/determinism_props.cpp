// property_tests/determinism_props.cpp: the same schedule replays the same
// execution ([RT-2.4]); and the schedule really steers it (a driver that
// ignored its choices would pass replay trivially).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "channel_scenario.hpp"
#include "event_scenario.hpp"
#include "generated_schedules.hpp"
#include "scope_scenario.hpp"

namespace turnstile::prop {
namespace {

// Runs scenario(choices) twice under one generated schedule: both runs must reach
// quiescence in the same steps, using the same choices, with the same trace.
template <class Scenario>
void replays_identically(Scenario scenario) {
  const auto choices = *gen_schedule().as("schedule");
  const auto first = scenario(choices);
  const auto second = scenario(choices);
  RC_ASSERT(first.drive.idle);
  RC_ASSERT(first.drive.steps == second.drive.steps);
  RC_ASSERT(first.drive.choices_used == second.drive.choices_used);
  RC_ASSERT(first.trace == second.trace);
}

// spec: [RT-2.4]
RC_GTEST_PROP(DeterminismProperty, SameChoicesReplayTheSameChannelExecution, ()) {
  const ChannelConfig cfg = *gen_channel_config(3, 6).as("workload");
  replays_identically([&](const auto& c) { return run_channel_scenario(cfg, c); });
}

// spec: [RT-2.4]
RC_GTEST_PROP(DeterminismProperty, SameChoicesReplayTheSameScopeExecution, ()) {
  const auto rounds = *gen_rounds(2, 5).as("rounds");
  replays_identically([&](const auto& c) { return run_scope_scenario(rounds, c); });
}

// spec: [RT-2.4]
RC_GTEST_PROP(DeterminismProperty, SameChoicesReplayTheSameEventExecution, ()) {
  const EventConfig cfg = *gen_event_config(6).as("waiters and setter");
  // The event trace also names each step by the post number of the item it ran.
  replays_identically([&](const auto& c) { return run_event_scenario(cfg, c); });
}

// The schedule steers the interleaving: on a fixed workload, the FIFO schedule
// and another one give different traces, each replayed exactly.
// spec: [RT-2.4]
TEST(DeterminismProperty, ChoicesSteerTheInterleaving) {
  ChannelConfig cfg;
  cfg.capacity = 1;
  cfg.producers = {{1, 2, 3}, {4, 5}};
  cfg.consumers = 2;
  const std::vector<std::size_t> fifo;
  const std::vector<std::size_t> second_oldest(64, 1);  // run the second-oldest ready item
  const ChannelRun a = run_channel_scenario(cfg, fifo);
  const ChannelRun b = run_channel_scenario(cfg, second_oldest);
  ASSERT_TRUE(a.drive.idle);
  ASSERT_TRUE(b.drive.idle);
  EXPECT_NE(a.trace, b.trace);
  EXPECT_EQ(a.trace, run_channel_scenario(cfg, fifo).trace);
  EXPECT_EQ(b.trace, run_channel_scenario(cfg, second_oldest).trace);
}

}  // namespace
}  // namespace turnstile::prop
