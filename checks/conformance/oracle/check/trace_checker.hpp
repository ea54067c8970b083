// oracle/check/trace_checker.hpp: the rules of spec/trace-format.md section 5, checked on a trace.
//
// Contract: check_trace() reports every violation it finds (not only the first),
// each naming one rule ID of spec/ (without brackets, e.g. "LANE-5.2"), the
// trace lines of the offending events (ascending), and one sentence. It
// accepts any Trace that parse_trace() returned; it does not re-validate fields.
// Deterministic: the same trace gives the same violations in the same order.
//
// What a violation is, its root cause and its printed forms: violation.hpp.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "oracle/check/violation.hpp"
#include "oracle/trace/reader.hpp"

namespace turnstile::oracle {

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

}  // namespace turnstile::oracle
