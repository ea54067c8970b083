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
#include <memory>
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

// check_expectations() over a stream of events (those read_trace() hands out,
// in order): keeps only the events the scenario's ops name. `scenario` must
// outlive it.
class ExpectationChecker {
 public:
  explicit ExpectationChecker(const Scenario& scenario);
  ~ExpectationChecker();
  ExpectationChecker(const ExpectationChecker&) = delete;
  ExpectationChecker& operator=(const ExpectationChecker&) = delete;

  void on_event(const Event& e);
  // After `end`. Given the trace checks' violations (TraceChecker::finish()),
  // an expectation violation that follows from one of them carries it as
  // `consequence_of` (as check_with_scenario() does).
  std::vector<Violation> finish(const std::vector<Violation>* trace_violations = nullptr) const;
  std::size_t retained() const;  // events kept

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// check_trace() then, with a scenario, check_expectations(): an expectation
// violation whose outcome comes from an event a trace check already reports
// (or whose body never ran because of one) is marked as that violation's
// consequence. What `check` and `serve` report (check_stream() in one pass).
std::vector<Violation> check_with_scenario(const Trace& trace, const Scenario* scenario);

// An error (line 1, field `scenario`) when the trace's header names another
// scenario than the one it is checked against; nullopt when it names it or
// none. The second form takes the header's `scenario` field and the source.
std::optional<InputError> scenario_mismatch(const Scenario& scenario, const Trace& trace);
std::optional<InputError> scenario_mismatch(const Scenario& scenario,
                                            const std::optional<std::string>& trace_scenario,
                                            const std::string& source);

}  // namespace turnstile::oracle
