// turnstile_test/records.hpp: what a generated scenario saw, for the property
// suites whose fibers record and whose properties judge (an RC_ASSERT inside a
// fiber would end the fiber, not the test).
//
// ErrorBook keeps errors by category and a trace of notes, each stamped with the
// scheduler step it happened at. record_error() also notes the error in the trace.
// Not thread safe: scenarios on a ManualScheduler record from one driver thread.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace turnstile_test {

struct ErrorBook {
  std::map<std::string, std::vector<std::string>> errors;  // by category
  std::vector<std::string> trace;
  std::size_t trace_limit = std::numeric_limits<std::size_t>::max();  // notes kept at most

  void record_error(std::size_t step, const std::string& category, const std::string& what) {
    errors[category].push_back("s" + std::to_string(step) + " " + what);
    record_note(step, "ERROR [" + category + "] " + what);
  }
  void record_note(std::size_t step, const std::string& what) {
    if (trace.size() < trace_limit) trace.push_back("s" + std::to_string(step) + " " + what);
  }
  // No error of `category` was recorded.
  bool ok(const std::string& category) const {
    const auto it = errors.find(category);
    return it == errors.end() || it->second.empty();
  }
  // No error at all was recorded.
  bool ok() const {
    for (const auto& [cat, list] : errors)
      if (!list.empty()) return false;
    return true;
  }
  std::string dump() const {
    std::ostringstream os;
    for (const auto& [cat, list] : errors)
      for (const auto& e : list) os << "  error [" << cat << "] " << e << "\n";
    os << "  trace:\n";
    for (const auto& t : trace) os << "    " << t << "\n";
    return os.str();
  }
};

}  // namespace turnstile_test
