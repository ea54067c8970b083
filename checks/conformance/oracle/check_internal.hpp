// oracle/check_internal.hpp (internal): what the per-contract checkers share.
//
// check_trace() runs three checkers over the same events (lanes, fiber-local,
// turns). Each reports violations found while walking the trace at once, and
// leaves the ones found at the `end` marker (something never settled) as
// candidates: an item or turn that never settled because its fiber is stuck in
// a possible hang (an unanswered reentrant run, a cycle of waits between turns)
// is part of that hang, already reported, and is not reported again.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oracle/check.hpp"

namespace turnstile::oracle::detail {

struct Report {
  std::vector<Violation> violations;

  // Fibers blocked in a possible hang at `end` (they wait on themselves).
  std::set<std::string> stuck_fibers;
  // Turns open at `end`: scope ("lane:L", "act:A") and the fiber running it.
  std::vector<std::pair<std::string, std::string>> open_turns;

  // An unsettled thing found at `end`, reported unless it belongs to a hang:
  // `fiber` set: it waits on that fiber (a turn running on it when
  // `open_turn`); `scope` set: queued behind a turn.
  struct Unsettled {
    Violation violation;
    std::string fiber;
    std::string scope;
    bool open_turn = false;
  };
  std::vector<Unsettled> unsettled;

  void add(std::string rule, std::vector<std::size_t> lines, std::string message,
           std::optional<Cause> cause = std::nullopt) {
    violations.push_back(
        Violation{std::move(rule), std::move(lines), std::move(message), false, std::move(cause)});
  }
};

void check_lanes(const Trace& trace, Report& report);
void check_fiber_local(const Trace& trace, Report& report);
void check_turns(const Trace& trace, Report& report);

// "'x'" for messages.
inline std::string q(const std::string& s) { return "'" + s + "'"; }

}  // namespace turnstile::oracle::detail
