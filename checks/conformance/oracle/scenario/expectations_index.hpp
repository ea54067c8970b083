// oracle/scenario/expectations_index.hpp (internal, for expectations.cpp): the
// trace events a scenario's `expect`s look up, indexed by the ids they carry,
// and the trace violations their consequences name (spec/trace-format.md
// section 4.1, A0 to A4). Thread safety: used by one ExpectationChecker.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/check/violation.hpp"
#include "oracle/trace/event.hpp"

namespace turnstile::oracle::expectations_detail {

using nlohmann::json;

// A string field of `e`, or "?" when the trace left it out.
inline std::string text_or_unknown(const Event& e, const char* field) {
  return e.has(field) ? e.text(field) : std::string("?");
}

// The trace events check_expectations needs, indexed by the ids they carry,
// built as the trace streams by. Only events the scenario's ops can look up
// are kept (the names below), so its size is bounded by the scenario's.
struct Index {
  std::map<std::string, const Event*> submit, answer, resumed, turn_start;  // lane: by item
  std::map<std::string, const Event*> read;                     // by op
  std::map<std::string, const Event*> call;                     // turn.call by op, reentry by call
  std::map<std::string, const Event*> call_answer;              // refused / end by call
  std::map<std::string, const Event*> await_refused;            // turn.await_refused by call
  std::set<std::string> drained;                                // lanes
  std::size_t end_line = 0;
  // What the trace checks found (set for the duration of a finish()).
  mutable const std::vector<Violation>* trace_violations = nullptr;

  // The root of a trace violation: itself, or the root it names (A0).
  static Cause root_of(const Violation& v) {
    return v.consequence_of ? *v.consequence_of : Cause{v.rule, v.lines};
  }

  // The first trace violation at one of `lines`, as a cause (its root).
  std::optional<Cause> blamed(const std::vector<std::size_t>& lines) const {
    if (trace_violations == nullptr) return std::nullopt;
    for (const auto& v : *trace_violations)
      for (const auto line : lines)
        if (std::find(v.lines.begin(), v.lines.end(), line) != v.lines.end()) return root_of(v);
    return std::nullopt;
  }

  // [A3] the first trace violation whose span holds the event at `line` on `fiber`.
  std::optional<Cause> blamed_span(const std::string& fiber, std::size_t line) const {
    if (trace_violations == nullptr || line == 0) return std::nullopt;
    for (const auto& v : *trace_violations)
      for (const auto& span : v.spans)
        if (span.fiber == fiber && span.first <= line && line <= span.last) return root_of(v);
    return std::nullopt;
  }

  // [A4] the first possible hang the trace checks report (its root).
  std::optional<Cause> first_hang() const {
    if (trace_violations == nullptr) return std::nullopt;
    for (const auto& v : *trace_violations)
      if (v.hang) return root_of(v);
    return std::nullopt;
  }

  explicit Index(const json& doc) {
    for (const auto& f : doc["fibers"]) name_ops(f["ops"]);
  }

  void add(const Event& e) {
    end_line = e.line;
    auto s = [&](const char* f) { return e.text(f); };
    const EventKind kind = e.kind;
    if (kind == EventKind::kLaneSubmit || kind == EventKind::kLaneAccepted || kind == EventKind::kLaneRefused ||
        kind == EventKind::kLaneResumed || kind == EventKind::kLaneTurnStart) {
      std::string k = s("lane") + "\n" + s("item");
      if (items_.count(k) == 0) return;
      auto& m = kind == EventKind::kLaneSubmit      ? submit
                : kind == EventKind::kLaneResumed   ? resumed
                : kind == EventKind::kLaneTurnStart ? turn_start
                                                 : answer;
      if (m.count(k) == 0) m.emplace(std::move(k), keep(e));
    } else if (kind == EventKind::kLaneDrained) {
      if (close_lanes_.count(s("lane")) != 0) drained.insert(s("lane"));
    } else if (kind == EventKind::kFlRead && !s("op").empty()) {
      if (reads_.count(s("op")) != 0 && read.count(s("op")) == 0) read.emplace(s("op"), keep(e));
    } else if ((kind == EventKind::kTurnCall && !s("op").empty()) || kind == EventKind::kTurnReentry) {
      const std::string id = kind == EventKind::kTurnCall ? s("op") : s("call");
      std::string k = s("act") + "\n" + id;
      if ((calls_.count(k) != 0 || turns_.count(id) != 0) && call.count(k) == 0) {
        call.emplace(std::move(k), keep(e));
        made_.insert(s("act") + "\n" + s("call"));
      }
    } else if (kind == EventKind::kTurnRefused || kind == EventKind::kTurnEnd || kind == EventKind::kTurnAwaitRefused) {
      // Answers of calls the index holds (a call is made before it is answered).
      std::string k = s("act") + "\n" + s("call");
      auto& m = kind == EventKind::kTurnAwaitRefused ? await_refused : call_answer;
      if (made_.count(k) != 0 && m.count(k) == 0) m.emplace(std::move(k), keep(e));
    }
  }

  std::size_t size() const { return kept_.size() + drained.size(); }

 private:
  void name_ops(const json& ops) {
    for (const auto& op : ops) {
      const std::string what = op["do"].get<std::string>();
      const std::string id = op["id"].get<std::string>();
      if (what == "run" || what == "post") items_.insert(op["lane"].get<std::string>() + "\n" + id);
      else if (what == "close") close_lanes_.insert(op["lane"].get<std::string>());
      else if (what == "read") reads_.insert(id);
      else if (what == "call") calls_.insert(op["act"].get<std::string>() + "\n" + id);
      else if (what == "turn") turns_.insert(id);
      if (op.contains("body")) name_ops(op["body"]);
    }
  }

  const Event* keep(const Event& e) {
    kept_.push_back(e);
    return &kept_.back();
  }

  std::set<std::string> items_, close_lanes_, reads_, calls_, turns_;  // what the ops look up
  std::set<std::string> made_;  // act\ncall of the calls in `call`
  std::deque<Event> kept_;      // the events the maps point to
};

}  // namespace turnstile::oracle::expectations_detail
