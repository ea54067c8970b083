// oracle/check.cpp: check_trace(), the rules of spec/trace-format.md section 5,
// over the three per-contract checkers (check_lane.cpp, check_fiber_local.cpp,
// check_turns.cpp).
#include "oracle/check.hpp"

#include <algorithm>
#include <set>

#include "oracle/check_internal.hpp"

namespace turnstile::oracle {

std::vector<Violation> check_trace(const Trace& trace) {
  detail::Report report;
  detail::check_lanes(trace, report);
  detail::check_fiber_local(trace, report);
  detail::check_turns(trace, report);

  // A scope whose open turn runs on a stuck fiber is blocked by that hang.
  std::set<std::string> blocked_scopes;
  for (const auto& [scope, fiber] : report.open_turns) {
    if (report.stuck_fibers.count(fiber) != 0) blocked_scopes.insert(scope);
  }
  for (auto& u : report.unsettled) {
    if (!u.fiber.empty() && report.stuck_fibers.count(u.fiber) != 0) continue;
    if (!u.scope.empty() && blocked_scopes.count(u.scope) != 0) continue;
    report.violations.push_back(std::move(u.violation));
  }

  auto& out = report.violations;
  for (auto& v : out) {
    std::sort(v.lines.begin(), v.lines.end());
    v.lines.erase(std::unique(v.lines.begin(), v.lines.end()), v.lines.end());
  }
  // Deterministic order: by first offending line, then rule.
  std::stable_sort(out.begin(), out.end(), [](const Violation& a, const Violation& b) {
    const std::size_t la = a.lines.empty() ? 0 : a.lines.front();
    const std::size_t lb = b.lines.empty() ? 0 : b.lines.front();
    return la != lb ? la < lb : a.rule < b.rule;
  });
  return out;
}

std::string to_string(const Violation& v) {
  std::string out;
  for (std::size_t i = 0; i < v.lines.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(v.lines[i]);
  }
  return out + ": [" + v.rule + "] " + v.message;
}

nlohmann::json to_json(const Violation& v) {
  return {{"rule", v.rule}, {"lines", v.lines}, {"message", v.message}, {"known", v.known}};
}

}  // namespace turnstile::oracle
