// oracle/stream.hpp: checking a trace in one pass, as `check` and `serve` do.
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

#include "oracle/check.hpp"
#include "oracle/scenario.hpp"
#include "oracle/trace.hpp"

namespace turnstile::oracle {

struct StreamResult {
  std::optional<InputError> error;    // set: the input is unusable
  bool wrong_scenario = false;        // `error` is that the trace names another scenario
  std::vector<Violation> violations;  // empty when `error` is set
};

StreamResult check_stream(std::istream& in, const std::string& source, const Scenario* scenario);
StreamResult check_stream_text(std::string_view text, const std::string& source,
                               const Scenario* scenario);

}  // namespace turnstile::oracle
