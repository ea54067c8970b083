// oracle/check.hpp: the rules of spec/trace-format.md section 5, checked on a trace.
//
// Contract: check_trace() reports every violation it finds (not only the first),
// each naming one rule ID of spec/ (without brackets, e.g. "LANE-5.2"), the
// trace lines of the offending events (ascending), and one sentence. It
// accepts any Trace that parse_trace() returned; it does not re-validate fields.
// Deterministic: the same trace gives the same violations in the same order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "oracle/trace.hpp"

namespace turnstile::oracle {

struct Violation {
  std::string rule;                // "LANE-5.2"
  std::vector<std::size_t> lines;  // offending events' line numbers
  std::string message;             // one sentence
  bool known = false;              // set by callers from a known-failures list
};

std::vector<Violation> check_trace(const Trace& trace);

// "LINE[,LINE...]: [RULE] message" for text output.
std::string to_string(const Violation& v);
nlohmann::json to_json(const Violation& v);

}  // namespace turnstile::oracle
