// oracle/check/contract_checker.hpp (internal): what the per-contract checkers share.
//
// TraceChecker (trace_checker.hpp) runs three checkers over the same events, in one
// pass (lanes, fiber-local, turns). Each reports violations found while walking the trace at once, and
// leaves the ones found at the `end` marker (something never settled) as
// candidates: an item or turn that never settled because its fiber is stuck in
// a possible hang (an unanswered reentrant run, a cycle of waits between turns)
// is part of that hang, already reported, and is not reported again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oracle/check/violation.hpp"
#include "oracle/trace/event.hpp"

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

  // `scope`: what the rule's promise is about, for repeats (Violation::scope).
  void add(std::string rule, std::vector<std::size_t> lines, std::string message,
           std::optional<Cause> cause = std::nullopt, std::string scope = {}) {
    violations.push_back(Violation{std::move(rule), std::move(lines), std::move(message), false,
                                   std::move(cause), std::move(scope)});
  }
};

// One contract's checker: fed every event in trace order, `end` last. Its
// state is bounded by what is open in the trace (live fibers, lanes, items and
// calls not settled), plus short windows of settled history kept for messages.
class Checker {
 public:
  virtual ~Checker() = default;
  virtual void on_event(const Event& e) = 0;  // every event but `end`
  virtual void at_end(const Event& end) = 0;
  // How many records (items, frames, bindings, calls, buffered events...) it
  // holds now: what must not grow with the length of a trace.
  virtual std::size_t retained() const = 0;
};

std::unique_ptr<Checker> make_lane_checker(Report& report);
std::unique_ptr<Checker> make_fiber_local_checker(Report& report);
std::unique_ptr<Checker> make_turn_checker(Report& report);

// How many settled items (calls, restored bindings, ...) a checker remembers
// for the messages of events that name them again (a second answer, a read of
// a value already restored): the most recent ones.
inline constexpr std::size_t kSettledWindow = 1024;

// A hash for the short ids of a trace (fibers, items): FNV-1a over the bytes.
// Cheaper than std::hash<std::string> on a few bytes, and a hash the standard
// library treats as fast: its maps hash on every lookup instead of scanning
// small tables comparing strings. Deterministic (no seed): nothing reported
// depends on a map's order anyway.
struct IdHash {
  std::size_t operator()(const std::string& s) const noexcept {
    std::uint64_t h = 0xcbf29ce484222325u;
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};

// "'x'" for messages.
inline std::string q(const std::string& s) { return "'" + s + "'"; }

}  // namespace turnstile::oracle::detail
