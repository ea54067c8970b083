// oracle/check.cpp: TraceChecker and check_trace(), the rules of
// spec/trace-format.md section 5, over the three per-contract checkers
// (check_lane.cpp, check_fiber_local.cpp, check_turns.cpp) fed in one pass.
#include "oracle/check.hpp"

#include <algorithm>
#include <set>

#include "oracle/check_internal.hpp"

namespace turnstile::oracle {

struct TraceChecker::State {
  detail::Report report;
  std::unique_ptr<detail::Checker> checkers[3] = {detail::make_lane_checker(report),
                                                  detail::make_fiber_local_checker(report),
                                                  detail::make_turn_checker(report)};
};

TraceChecker::TraceChecker() : state_(std::make_unique<State>()) {}
TraceChecker::~TraceChecker() = default;

void TraceChecker::on_event(const Event& e) {
  if (e.ev == "end") {
    for (auto& c : state_->checkers) c->at_end(e);
  } else {
    for (auto& c : state_->checkers) c->on_event(e);
  }
}

std::size_t TraceChecker::retained() const {
  std::size_t n = 0;
  for (const auto& c : state_->checkers) n += c->retained();
  return n;
}

std::size_t TraceChecker::found() const { return state_->report.violations.size(); }

std::vector<Violation> TraceChecker::finish() {
  detail::Report& report = state_->report;
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

  auto out = std::move(report.violations);
  for (auto& v : out) {
    std::sort(v.lines.begin(), v.lines.end());
    v.lines.erase(std::unique(v.lines.begin(), v.lines.end()), v.lines.end());
  }
  // Deterministic order: by first offending line, then rule. Each checker adds
  // its own violations in trace order, and no two checkers share a rule, so
  // feeding them side by side keeps the order of running them one by one.
  std::stable_sort(out.begin(), out.end(), [](const Violation& a, const Violation& b) {
    const std::size_t la = a.lines.empty() ? 0 : a.lines.front();
    const std::size_t lb = b.lines.empty() ? 0 : b.lines.front();
    return la != lb ? la < lb : a.rule < b.rule;
  });
  return out;
}

std::vector<Violation> check_trace(const Trace& trace) {
  TraceChecker checker;
  for (const Event& e : trace.events) checker.on_event(e);
  return checker.finish();
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
