// oracle/stream.cpp: check_stream(), read_trace() feeding the checkers directly.
#include "oracle/stream.hpp"

#include <memory>

namespace turnstile::oracle {

namespace {

template <typename Read>
StreamResult check_with(const Scenario* scenario, Read read) {
  TraceChecker checker;
  std::unique_ptr<ExpectationChecker> expectations;
  if (scenario != nullptr) expectations = std::make_unique<ExpectationChecker>(*scenario);
  StreamResult result;
  result.error = read([&](const Event& e) {
    checker.on_event(e);
    if (expectations) expectations->on_event(e);
  });
  if (result.error) return result;
  result.violations = checker.finish();
  if (expectations) {
    auto more = expectations->finish();
    result.violations.insert(result.violations.end(), more.begin(), more.end());
  }
  return result;
}

}  // namespace

StreamResult check_stream(std::istream& in, const std::string& source, const Scenario* scenario) {
  return check_with(scenario, [&](const EventSink& sink) { return read_trace(in, source, sink); });
}

StreamResult check_stream_text(std::string_view text, const std::string& source,
                               const Scenario* scenario) {
  return check_with(scenario, [&](const EventSink& sink) { return read_trace_text(text, source, sink); });
}

}  // namespace turnstile::oracle
