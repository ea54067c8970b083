// property_tests/scope_props.cpp: Scope::join under generated children and
// generated schedules (see scope_scenario.hpp, generated_schedules.hpp).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <vector>

#include "generated_schedules.hpp"
#include "scope_scenario.hpp"

namespace turnstile::prop {
namespace {

// spec: [RT-5.3]
RC_GTEST_PROP(ScopeProperty, JoinWaitsForEveryChildAndRethrowsTheFirstFailure, ()) {
  const auto rounds = *gen_rounds().as("rounds");
  const ScopeRun run = run_scheduled([&](const auto& c) { return run_scope_scenario(rounds, c); });
  RC_ASSERT(run.parent_done);
  RC_ASSERT(run.rounds.size() == rounds.size());
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    const RoundObservation& obs = run.rounds[r];
    const std::size_t children = rounds[r].children.size();
    RC_LOG() << "round " << r << ": completion order";
    for (int id : obs.completion_order) RC_LOG() << " " << id;
    RC_LOG() << "; " << obs.completed_at_join << "/" << children << " done at join\n";
    // join() returned only after every child of the round had finished.
    RC_ASSERT(obs.completed_at_join == children);
    RC_ASSERT(!obs.rethrew_other);
    // It rethrew the failure of the first child to fail, and only if one failed.
    if (obs.throwers_in_order.empty()) {
      RC_ASSERT(!obs.rethrown.has_value());
    } else {
      RC_ASSERT(obs.rethrown.has_value());
      RC_ASSERT(*obs.rethrown == obs.throwers_in_order.front());
    }
    // The failure was consumed: joining the empty scope again passes.
    RC_ASSERT(!obs.second_join_threw);
  }
  RC_CLASSIFY(rounds.size() > 1, "several rounds");
  RC_CLASSIFY(run.rounds.front().throwers_in_order.size() > 1, "several failures");
}

}  // namespace
}  // namespace turnstile::prop
