// oracle/scenario/expectations.hpp: a trace checked against a scenario's
// `expect`s (spec/trace-format.md section 2): each op's outcome in the trace,
// reported under the op's `rule`; and whether the trace runs that scenario.
//
// Contract: deterministic (the same scenario and trace give the same
// violations in the same order); never throws on a trace the reader accepted.
// Thread safety: pure functions; an ExpectationChecker is used by one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oracle/check/trace_checker.hpp"
#include "oracle/scenario/scenario.hpp"
#include "oracle/trace/reader.hpp"

namespace turnstile::oracle {

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

// An error (line 1, field `scenario`) when the trace's header names another
// scenario than the one it is checked against; nullopt when it names it or
// none. The second form takes the header's `scenario` field and the source.
std::optional<InputError> scenario_mismatch(const Scenario& scenario, const Trace& trace);
std::optional<InputError> scenario_mismatch(const Scenario& scenario,
                                            const std::optional<std::string>& trace_scenario,
                                            const std::string& source);

}  // namespace turnstile::oracle
