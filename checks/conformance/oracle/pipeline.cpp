// oracle/pipeline.cpp: check_with_scenario() over a whole trace, and check_stream(),
// read_trace() feeding the checkers directly.
#include "oracle/pipeline.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace turnstile::oracle {

namespace {

// The checkers of one trace, fed in trace order: its own rules, then, given a
// scenario, the scenario's `expect`s, whose violations may follow from the
// trace's (consequences marked).
class Checkers {
 public:
  explicit Checkers(const Scenario* scenario) {
    if (scenario != nullptr) expectations_ = std::make_unique<ExpectationChecker>(*scenario);
  }
  void on_event(const Event& e) {
    trace_.on_event(e);
    if (expectations_) expectations_->on_event(e);
  }
  std::vector<Violation> finish() {
    std::vector<Violation> out = trace_.finish();
    if (!expectations_) return out;
    std::vector<Violation> more = expectations_->finish(&out);
    out.insert(out.end(), more.begin(), more.end());
    return out;
  }

 private:
  TraceChecker trace_;
  std::unique_ptr<ExpectationChecker> expectations_;
};

template <typename Read>
StreamResult check_with(const std::string& source, const Scenario* scenario, Read read) {
  Checkers checkers(scenario);
  std::optional<InputError> mismatch;
  StreamResult result;
  result.error = read([&](const Event& e) {
    if (mismatch) return;  // unusable: the rest is only validated
    if (scenario != nullptr && e.kind == EventKind::kTrace) {
      std::optional<std::string> named;
      if (e.has("scenario")) named = e.str("scenario");
      mismatch = scenario_mismatch(*scenario, named, source);
      if (mismatch) return;
    }
    checkers.on_event(e);
  });
  if (!result.error && mismatch) {  // a bad line comes first
    result.error = std::move(mismatch);
    result.wrong_scenario = true;
  }
  if (result.error) return result;
  result.violations = checkers.finish();
  return result;
}

}  // namespace

std::vector<Violation> check_with_scenario(const Trace& trace, const Scenario* scenario) {
  Checkers checkers(scenario);
  for (const Event& e : trace.events) checkers.on_event(e);
  return checkers.finish();
}

StreamResult check_stream(std::istream& in, const std::string& source, const Scenario* scenario) {
  return check_with(source, scenario, [&](const EventSink& sink) { return read_trace(in, source, sink); });
}

StreamResult check_stream_text(std::string_view text, const std::string& source,
                               const Scenario* scenario) {
  return check_with(source, scenario, [&](const EventSink& sink) { return read_trace_text(text, source, sink); });
}

}  // namespace turnstile::oracle
