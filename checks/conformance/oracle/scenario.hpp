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
  std::vector<Violation> finish() const;
  std::size_t retained() const;  // events kept

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace turnstile::oracle
