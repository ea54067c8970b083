// oracle/check.hpp: the rules of spec/trace-format.md section 5, checked on a trace.
//
// Contract: check_trace() reports every violation it finds (not only the first),
// each naming one rule ID of spec/ (without brackets, e.g. "LANE-5.2"), the
// trace lines of the offending events (ascending), and one sentence. It
// accepts any Trace that parse_trace() returned; it does not re-validate fields.
// Deterministic: the same trace gives the same violations in the same order.
//
// A violation that only follows from another (the ops of an item whose turn
// never started left no outcome; a read sees a binding whose `where` already
// ended, inherited by a child) carries `consequence_of`: the rule and lines of
// the violation that is its root cause, reported once at its own lines
// (spec/trace-format.md section 4).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oracle/trace.hpp"

namespace turnstile::oracle {

// The root cause a violation follows from.
struct Cause {
  std::string rule;
  std::vector<std::size_t> lines;
};

struct Violation {
  std::string rule;                // "LANE-5.2"
  std::vector<std::size_t> lines;  // offending events' line numbers
  std::string message;             // one sentence
  bool known = false;              // set by callers from a known-failures list
  std::optional<Cause> consequence_of = std::nullopt;  // set when it follows from another violation
};

// The checker over a stream of events: feed it the events read_trace() hands
// out, in order, then call finish() once, after `end`. Its state is bounded by
// what is open in the trace, not by the trace's length (see retained()).
class TraceChecker {
 public:
  TraceChecker();
  ~TraceChecker();
  TraceChecker(const TraceChecker&) = delete;
  TraceChecker& operator=(const TraceChecker&) = delete;

  void on_event(const Event& e);
  // The violations, in the order of check_trace(). Call once, after `end`.
  std::vector<Violation> finish();
  // Records held now (items, frames, calls, buffered events): for tests.
  std::size_t retained() const;
  // Violations found so far (not sorted; none of those only `end` reveals).
  std::size_t found() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A whole trace through a TraceChecker.
std::vector<Violation> check_trace(const Trace& trace);

// Marks each violation `known` when its rule is in `known`, or when it is a
// consequence of a violation whose rule is (a known failure's consequences are
// known too). Returns {new, known} counts.
std::pair<std::size_t, std::size_t> mark_known(std::vector<Violation>& violations,
                                               const std::set<std::string>& known);

// "LINE[,LINE...]: [RULE] message" for text output ("[RULE] message" when the
// violation has no lines), with " (consequence of [ROOT] at lines L,...)"
// appended for a consequence.
std::string to_string(const Violation& v);
// {"rule", "lines", "message", "known", "consequence_of": null | {"rule", "lines"}}
nlohmann::json to_json(const Violation& v);

}  // namespace turnstile::oracle
