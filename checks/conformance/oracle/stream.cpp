// oracle/stream.cpp: check_stream(), read_trace() feeding the checkers directly.
#include "oracle/stream.hpp"

#include <memory>
#include <optional>
#include <string>

namespace turnstile::oracle {

namespace {

template <typename Read>
StreamResult check_with(const std::string& source, const Scenario* scenario, Read read) {
  TraceChecker checker;
  std::unique_ptr<ExpectationChecker> expectations;
  if (scenario != nullptr) expectations = std::make_unique<ExpectationChecker>(*scenario);
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
    checker.on_event(e);
    if (expectations) expectations->on_event(e);
  });
  if (!result.error && mismatch) {  // a bad line comes first
    result.error = std::move(mismatch);
    result.wrong_scenario = true;
  }
  if (result.error) return result;
  result.violations = checker.finish();
  if (expectations) {
    auto more = expectations->finish(&result.violations);
    result.violations.insert(result.violations.end(), more.begin(), more.end());
  }
  return result;
}

}  // namespace

StreamResult check_stream(std::istream& in, const std::string& source, const Scenario* scenario) {
  return check_with(source, scenario, [&](const EventSink& sink) { return read_trace(in, source, sink); });
}

StreamResult check_stream_text(std::string_view text, const std::string& source,
                               const Scenario* scenario) {
  return check_with(source, scenario, [&](const EventSink& sink) { return read_trace_text(text, source, sink); });
}

}  // namespace turnstile::oracle
