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

// spec/trace-format.md section 4, "Attribution", over the violations of one
// trace in output order: a root of rule R about scope S after an earlier root
// of R about S is a repeat, a consequence of that first root (A5); then every
// consequence names a root, never another consequence (A0).
namespace {
void attribute_roots(std::vector<Violation>& out) {
  // A3: a wrong read inside a span of an earlier root follows from it.
  for (std::size_t i = 0; i < out.size(); ++i) {
    Violation& v = out[i];
    if (v.consequence_of || v.fiber.empty() || v.lines.empty()) continue;
    const std::size_t line = v.lines.back();
    for (std::size_t k = 0; k < i && !v.consequence_of; ++k) {
      for (const auto& span : out[k].spans)
        if (span.fiber == v.fiber && span.first <= line && line <= span.last)
          v.consequence_of = out[k].consequence_of ? *out[k].consequence_of : Cause{out[k].rule, out[k].lines};
    }
  }
  std::map<std::string, Cause> first;  // rule + '\n' + scope -> the first root there
  for (auto& v : out) {
    if (v.consequence_of || v.scope.empty()) continue;
    const auto [it, fresh] = first.try_emplace(v.rule + '\n' + v.scope, Cause{v.rule, v.lines});
    if (!fresh) v.consequence_of = it->second;
  }
  std::map<std::pair<std::string, std::vector<std::size_t>>, std::size_t> at;  // (rule, lines) -> index
  for (std::size_t i = 0; i < out.size(); ++i) at.try_emplace({out[i].rule, out[i].lines}, i);
  for (auto& v : out) {
    for (std::size_t hops = 0; v.consequence_of && hops < out.size(); ++hops) {
      const auto it = at.find({v.consequence_of->rule, v.consequence_of->lines});
      if (it == at.end() || !out[it->second].consequence_of || &out[it->second] == &v) break;
      v.consequence_of = out[it->second].consequence_of;
    }
  }
}
}  // namespace

struct TraceChecker::State {
  detail::Report report;
  std::unique_ptr<detail::Checker> checkers[3] = {detail::make_lane_checker(report),
                                                  detail::make_fiber_local_checker(report),
                                                  detail::make_turn_checker(report)};
  std::size_t end_line = 0;
};

TraceChecker::TraceChecker() : state_(std::make_unique<State>()) {}
TraceChecker::~TraceChecker() = default;

void TraceChecker::on_event(const Event& e) {
  if (e.kind == EventKind::kEnd) {
    state_->end_line = e.line;
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
    // Reported at `end` (open when the trace ended): a possible hang (A4).
    const std::size_t end_line = state_->end_line;
    v.hang = v.hang || (end_line != 0 && std::binary_search(v.lines.begin(), v.lines.end(), end_line));
  }
  // Deterministic order: by first offending line, then rule. Each checker adds
  // its own violations in trace order, and no two checkers share a rule, so
  // feeding them side by side keeps the order of running them one by one.
  std::stable_sort(out.begin(), out.end(), [](const Violation& a, const Violation& b) {
    const std::size_t la = a.lines.empty() ? 0 : a.lines.front();
    const std::size_t lb = b.lines.empty() ? 0 : b.lines.front();
    return la != lb ? la < lb : a.rule < b.rule;
  });
  attribute_roots(out);
  return out;
}

std::vector<Violation> check_trace(const Trace& trace) {
  TraceChecker checker;
  for (const Event& e : trace.events) checker.on_event(e);
  return checker.finish();
}

}  // namespace turnstile::oracle
