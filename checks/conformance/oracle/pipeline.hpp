// oracle/pipeline.hpp: the checking pipeline, reader -> checkers -> expectations
// -> violations (oracle/README.md), as `check` and `serve` run it.
//
// Contract: check_stream() reads the trace once, line by line, validating each
// line (read_trace) and feeding it to a TraceChecker and, given a scenario, an
// ExpectationChecker, so memory is bounded by what is open in the trace (and
// the scenario's size), never by the trace's length. The result is the one of
// parse_trace() + scenario_mismatch() + check_with_scenario(): the same error
// for unusable input (a bad line, else a trace of another scenario; then no
// violations), else the same violations in the same order (the trace's own
// first, then the scenario's, consequences marked).
// Thread safety: pure functions; no shared state.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oracle/check/trace_checker.hpp"
#include "oracle/scenario/expectations.hpp"
#include "oracle/scenario/scenario.hpp"
#include "oracle/trace/reader.hpp"

namespace turnstile::oracle {

struct StreamResult {
  std::optional<InputError> error;    // set: the input is unusable
  bool wrong_scenario = false;        // `error` is that the trace names another scenario
  std::vector<Violation> violations;  // empty when `error` is set
};

// check_trace() then, with a scenario, check_expectations(): an expectation
// violation whose outcome comes from an event a trace check already reports
// (or whose body never ran because of one) is marked as that violation's
// consequence. What `check` and `serve` report (check_stream() in one pass).
std::vector<Violation> check_with_scenario(const Trace& trace, const Scenario* scenario);

StreamResult check_stream(std::istream& in, const std::string& source, const Scenario* scenario);
StreamResult check_stream_text(std::string_view text, const std::string& source,
                               const Scenario* scenario);

}  // namespace turnstile::oracle
