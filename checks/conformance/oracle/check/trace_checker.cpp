// oracle/check/trace_checker.cpp: TraceChecker and check_trace(), the rules of
// spec/trace-format.md section 5, over the three per-contract checkers
// (lane.cpp, fiber_local.cpp, turns.cpp) fed in one pass.
#include "oracle/check/trace_checker.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "oracle/check/contract_checker.hpp"

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
  if (e.kind == EventKind::kEnd) {
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
  std::vector<detail::Report::Unsettled> kept;
  for (auto& u : report.unsettled) {
    if (!u.fiber.empty() && report.stuck_fibers.count(u.fiber) != 0) continue;
    if (!u.scope.empty() && blocked_scopes.count(u.scope) != 0) continue;
    kept.push_back(std::move(u));
  }
  // A bind or install left open on a fiber whose turn never ended follows
  // from that turn ([FL-3.1], [FL-3.6] at a quiescent `end`).
  std::map<std::string, Cause> open_turn_of;
  for (const auto& u : kept) {
    if (!u.open_turn) continue;
    // The earliest open turn on the fiber (checkers may visit what is open in any order).
    const auto first = [](const std::vector<std::size_t>& l) {
      return l.empty() ? std::size_t{0} : *std::min_element(l.begin(), l.end());
    };
    const auto [it, fresh] = open_turn_of.emplace(u.fiber, Cause{u.violation.rule, u.violation.lines});
    if (!fresh && first(u.violation.lines) < first(it->second.lines))
      it->second = Cause{u.violation.rule, u.violation.lines};
  }
  for (auto& u : kept) {
    if (u.violation.rule.rfind("FL-", 0) == 0 && !u.violation.consequence_of) {
      if (const auto it = open_turn_of.find(u.fiber); it != open_turn_of.end())
        u.violation.consequence_of = it->second;
    }
    report.violations.push_back(std::move(u.violation));
  }

  auto out = std::move(report.violations);
  const auto tidy = [](std::vector<std::size_t>& lines) {
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  };
  for (auto& v : out) {
    tidy(v.lines);
    if (v.consequence_of) tidy(v.consequence_of->lines);
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

}  // namespace turnstile::oracle
