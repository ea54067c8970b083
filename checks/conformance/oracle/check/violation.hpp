// oracle/check/violation.hpp: what the checkers report: a Violation names one
// rule ID of spec/ (without brackets, e.g. "LANE-5.2"), the trace lines of the
// offending events (ascending), and one sentence.
//
// A violation that only follows from another (the ops of an item whose turn
// never started left no outcome; a read sees a binding whose `where` already
// ended, inherited by a child) carries `consequence_of`: the rule and lines of
// the violation that is its root cause, reported once at its own lines
// (spec/trace-format.md section 4).
// Thread safety: values and pure functions; no shared state.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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
  // The contract whose implementation broke the rule ("lane", "fiber-local"),
  // when a later root of the same rule in the trace is a repeat of this one
  // (section 4, "Attribution", A5); empty: never a repeat. Internal: not in
  // the text or JSON form.
  std::string scope = {};
  // A root that leaves fibers with wrong bindings for spans of the trace (a
  // lane turn run in another item's context, and where its bindings went from
  // there): an `expect` whose outcome event is on `fiber` within [first, last]
  // of a span follows from it (A3). Internal, like `scope`.
  struct Span {
    std::string fiber;
    std::size_t first = 0, last = 0;
  };
  std::vector<Span> spans = {};
  // A wrong read's fiber (its last line is the read), for the spans above. Internal.
  std::string fiber = {};
  // A possible hang (what was open at `end`, a cycle of waits): an op whose
  // fiber never came back from it left no outcome because of it (A4). Internal.
  bool hang = false;
};

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
