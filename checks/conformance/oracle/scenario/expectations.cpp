// oracle/scenario/expectations.cpp: check_expectations (each op's `expect`, reported under
// its `rule`), in one pass (ExpectationChecker) or over a whole trace, and
// scenario_mismatch (oracle/scenario/expectations.hpp; parse_scenario: parse.cpp).
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oracle/scenario/expectations.hpp"
#include "oracle/scenario/expectations_index.hpp"

namespace turnstile::oracle {

namespace {

using nlohmann::json;

using expectations_detail::Index;
using expectations_detail::text_or_unknown;

struct Outcome {
  bool found = false;
  json value;                      // the outcome string, or a read's value
  std::vector<std::size_t> lines;  // the events it came from
  bool body_ran = false;           // the op's body was executed
  std::size_t lost_body = 0;       // accepted (at this line) but its turn never started
  std::size_t answer = 0;          // run/post: the line of its `lane.accepted`/`lane.refused`
  std::string fiber;               // the fiber of the outcome's last event
};

// Why the ops of a body left nothing in the trace: the enclosing op's lines,
// and the violation they follow from when the body never ran.
struct Enclosing {
  std::vector<std::size_t> lines;
  std::optional<Cause> cause;
  // Set after an op of this list (or an enclosing one) awaited something that
  // never came back: an op after it that left no outcome follows from this (A4).
  std::optional<Cause> stuck = std::nullopt;
};

Outcome outcome_of(const json& op, const Index& ix) {
  Outcome o;
  const std::string what = op["do"].get<std::string>();
  const std::string id = op["id"].get<std::string>();
  auto add = [&](const Event* e) {
    o.lines.push_back(e->line);
    o.fiber = e->fiber;
  };
  if (what == "run" || what == "post") {
    const std::string k = op["lane"].get<std::string>() + "\n" + id;
    auto sub = ix.submit.find(k);
    if (sub == ix.submit.end()) return o;
    add(sub->second);
    auto ans = ix.answer.find(k);
    if (ans == ix.answer.end()) return o;
    add(ans->second);
    o.answer = ans->second->line;
    if (ans->second->ev == "lane.refused") {
      const std::string r = ans->second->text("reason");
      o.found = true;
      o.value = "refused:" + (r.empty() ? std::string("?") : r);
      return o;
    }
    // [LANE-8.1] an accepted item's body runs in its turn: without a
    // `lane.turn_start` it never ran (the trace checks report the item).
    const auto start = ix.turn_start.find(k);
    o.body_ran = start != ix.turn_start.end();
    if (o.body_ran) add(start->second);
    else o.lost_body = ans->second->line;
    if (what == "post") {
      o.found = true;
      o.value = "accepted";
      return o;
    }
    auto res = ix.resumed.find(k);
    if (res == ix.resumed.end()) return o;
    add(res->second);
    o.found = true;
    o.value = text_or_unknown(*res->second, "outcome");
    return o;
  }
  if (what == "close") {
    o.found = ix.drained.count(op["lane"].get<std::string>()) != 0;
    o.value = "ok";
    return o;
  }
  if (what == "read") {
    auto r = ix.read.find(id);
    if (r == ix.read.end()) return o;
    add(r->second);
    o.found = true;
    const Event& d = *r->second;
    o.value = d.has("value") ? d.value("value") : json(nullptr);
    if (d.flag("unbound")) o.value = nullptr;
    return o;
  }
  if (what == "call" || what == "turn") {
    const std::string act = what == "call" ? op["act"].get<std::string>() : std::string();
    const Event* c = nullptr;
    if (what == "call") {
      auto it = ix.call.find(act + "\n" + id);
      if (it != ix.call.end()) c = it->second;
    } else {
      for (const auto& [k, e] : ix.call)  // a reentry's act is the task's activation
        if (e->ev == "turn.reentry" && e->text("call") == id) c = e;
    }
    if (c == nullptr) return o;
    add(c);
    const std::string k = c->text("act") + "\n" + c->text("call");
    auto ans = ix.call_answer.find(k);
    // [TURN-7.1] a refused await is the op's outcome; the call is not cancelled
    // (its body runs later, after the turn it would have waited for).
    if (auto ref = ix.await_refused.find(k); ref != ix.await_refused.end()) {
      add(ref->second);
      o.found = true;
      o.value = "refused:" + text_or_unknown(*ref->second, "reason");
      o.body_ran = ans != ix.call_answer.end() && ans->second->ev == "turn.end";
      return o;
    }
    if (ans == ix.call_answer.end()) return o;
    add(ans->second);
    o.found = true;
    if (ans->second->ev == "turn.refused") {  // obsolete: a call refused at the call
      o.value = "refused:" + text_or_unknown(*ans->second, "reason");
    } else {
      o.body_ran = true;
      o.value = text_or_unknown(*ans->second, "outcome");
    }
    return o;
  }
  o.body_ran = true;  // where, spawn, detach, install, task: the body always runs
  return o;
}

void check_list(const json& ops, const Index& ix, const Enclosing& in, std::vector<Violation>& out);

// Why a found outcome is not an expected one, when a trace check says (A2, A3):
// the violation at the outcome's last event, else at a run's or post's
// answer, else the root whose span holds that event.
std::optional<Cause> outcome_cause(const Outcome& o, const Index& ix) {
  if (o.lines.empty()) return std::nullopt;
  if (auto c = ix.blamed({o.lines.back()})) return c;
  if (o.answer != 0)
    if (auto c = ix.blamed({o.answer})) return c;
  return ix.blamed_span(o.fiber, o.lines.back());
}

// Checks one op; returns true when it awaits something and left no outcome:
// its op list never went on past it (A4).
bool check_op(const json& op, const Index& ix, const Enclosing& in, std::vector<Violation>& out) {
  const Outcome o = in.cause ? Outcome{} : outcome_of(op, ix);
  const std::string id = op["id"].get<std::string>();
  if (op.contains("expect")) {
    const std::string rule = op.contains("rule") ? op["rule"].get<std::string>() : "TRACE-2.1";
    if (in.cause) {  // its body never ran: a consequence, at the enclosing op's lines
      out.push_back(Violation{rule, in.lines,
                              "operation '" + id + "' (" + op["do"].get<std::string>() +
                                  ") left no outcome in the trace because the body it is in never "
                                  "ran; expected one of " + op["expect"].dump(),
                              false, in.cause});
    } else if (!o.found) {
      // Where it is missing: its own events, else the enclosing op's, else `end`.
      std::vector<std::size_t> lines = !o.lines.empty() ? o.lines : in.lines;
      if (lines.empty()) lines.push_back(ix.end_line);
      // [A4] no event of its own to blame: its fiber never got past an earlier
      // op that was stuck, or waits in a reported hang.
      std::optional<Cause> cause = ix.blamed(o.lines);
      if (!cause) cause = in.stuck;
      if (!cause) cause = ix.first_hang();
      out.push_back(Violation{rule, lines,
                              "operation '" + id + "' (" + op["do"].get<std::string>() +
                                  ") left no outcome in the trace; expected one of " +
                                  op["expect"].dump(),
                              false, cause});
    } else {
      bool ok = false;
      for (const auto& x : op["expect"]) ok = ok || x == o.value;
      // An outcome read from an event a trace check already reports: that
      // check found the cause, the expectation repeats it.
      if (!ok)
        out.push_back(Violation{rule, o.lines,
                                "operation '" + id + "' (" + op["do"].get<std::string>() +
                                    ") had outcome " + o.value.dump() + ", not one of " +
                                    op["expect"].dump(),
                                false, outcome_cause(o, ix)});
    }
  }
  const std::string what = op["do"].get<std::string>();
  const bool awaits = what == "run" || what == "close" || what == "turn" ||
                      (what == "call" && op.value("await", true));
  const bool stuck = !in.cause && !o.found && awaits;
  if (!op.contains("body")) return stuck;
  if (in.cause) {
    check_list(op["body"], ix, in, out);
    return false;
  }
  // A refused op's body never ran; one whose outcome is missing is already
  // reported. An accepted item whose turn never started: its body's ops are
  // consequences of that (reported by the trace checks under [LANE-8.1]).
  if (o.body_ran) {
    check_list(op["body"], ix, Enclosing{o.lines, std::nullopt, in.stuck}, out);
  } else if (o.lost_body != 0) {
    // The root: the trace violation that reports the item (else its acceptance).
    const Cause root = ix.blamed({o.lost_body}).value_or(Cause{"LANE-8.1", {o.lost_body}});
    check_list(op["body"], ix, Enclosing{o.lines, root}, out);
  }
  return stuck;
}

void check_list(const json& ops, const Index& ix, const Enclosing& in, std::vector<Violation>& out) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const json& op = ops[i];
    if (op["do"] == "throw") return;  // the rest of this body never runs
    const std::size_t before = out.size();
    if (!check_op(op, ix, in, out) || in.cause || in.stuck) continue;
    // [A4] the op awaited something that never came back: the rest of its list
    // (and the lists enclosing it) never ran past it. What they left missing
    // follows from why the op was stuck: the cause of its own report, else
    // that report, else the first reported hang.
    std::optional<Cause> why;
    if (out.size() > before) why = out[before].consequence_of ? *out[before].consequence_of
                                                              : Cause{out[before].rule, out[before].lines};
    if (!why) why = ix.first_hang();
    if (!why) continue;  // nothing to follow from: the ops after it are checked as they are
    json rest = json::array();
    for (std::size_t k = i + 1; k < ops.size(); ++k) rest.push_back(ops[k]);
    check_list(rest, ix, Enclosing{in.lines, std::nullopt, why}, out);
    return;
  }
}

}  // namespace


struct ExpectationChecker::State {
  const Scenario& scenario;
  Index index;
};

ExpectationChecker::ExpectationChecker(const Scenario& scenario)
    : state_(std::make_unique<State>(State{scenario, Index(scenario.doc)})) {}
ExpectationChecker::~ExpectationChecker() = default;

void ExpectationChecker::on_event(const Event& e) { state_->index.add(e); }

std::size_t ExpectationChecker::retained() const { return state_->index.size(); }

std::vector<Violation> ExpectationChecker::finish(const std::vector<Violation>* trace_violations) const {
  std::vector<Violation> out;
  const Index& ix = state_->index;
  ix.trace_violations = trace_violations;
  for (const auto& f : state_->scenario.doc["fibers"]) check_list(f["ops"], ix, Enclosing{}, out);
  ix.trace_violations = nullptr;
  return out;
}

std::vector<Violation> check_expectations(const Scenario& scenario, const Trace& trace) {
  ExpectationChecker checker(scenario);
  for (const Event& e : trace.events) checker.on_event(e);
  return checker.finish();
}

std::optional<InputError> scenario_mismatch(const Scenario& scenario,
                                            const std::optional<std::string>& trace_scenario,
                                            const std::string& source) {
  if (!trace_scenario || *trace_scenario == scenario.id) return std::nullopt;
  return InputError{source, 1, "scenario",
                    "the trace executes scenario '" + *trace_scenario +
                        "' but is checked against scenario '" + scenario.id + "'"};
}

std::optional<InputError> scenario_mismatch(const Scenario& scenario, const Trace& trace) {
  return scenario_mismatch(scenario, trace.scenario, trace.source);
}

}  // namespace turnstile::oracle
