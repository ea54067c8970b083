// oracle/scenario.hpp: portable scenarios (spec/trace-format.md section 2): parse,
// generate, and check a trace against a scenario's `expect`s.
//
// Contract: generate_scenarios() is deterministic in (seed, count, contracts): the
// same arguments give byte-identical scenarios on every platform. Every `expect`
// it writes lists every outcome the spec permits for that operation under any
// schedule. parse_scenario() never throws on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/check.hpp"
#include "oracle/trace.hpp"

namespace turnstile::oracle {

struct Scenario {
  std::string id;
  std::string contract;  // "lane" | "fiber-local" | "turns"
  nlohmann::json doc;    // the whole validated scenario object
};

std::variant<Scenario, InputError> parse_scenario(const nlohmann::json& doc,
                                                  std::string source);

// contracts empty = all three.
std::vector<nlohmann::json> generate_scenarios(std::uint64_t seed, std::size_t count,
                                               const std::vector<std::string>& contracts);

// Violations of the scenario's `expect`s (reported under each op's `rule`), and
// of the trace not executing the scenario (an op with `expect` that left no
// outcome in the trace).
// An op whose body never ran because its item's turn never started leaves no
// outcome: reported as a consequence (`consequence_of`) of [LANE-8.1].
std::vector<Violation> check_expectations(const Scenario& scenario, const Trace& trace);

// check_trace() then, with a scenario, check_expectations(): an expectation
// violation whose outcome comes from an event a trace check already reports
// (or whose body never ran because of one) is marked as that violation's
// consequence. What `check` and `serve` report.
std::vector<Violation> check_with_scenario(const Trace& trace, const Scenario* scenario);

// An error (line 1, field `scenario`) when the trace's header names another
// scenario than the one it is checked against; nullopt when it names it or
// none.
std::optional<InputError> scenario_mismatch(const Scenario& scenario, const Trace& trace);

}  // namespace turnstile::oracle
