// reference_support.hpp: helpers of the reference-run tests.
//
// local_parse() is a development aid, not the checker: it frames a trace (JSON
// per line, header first, seq 1..n, end last, `fiber` on every event) and builds
// an oracle::Trace from it, so that check_expectations can run on the reference
// traces independently of parse_trace. The real checks use parse_trace_text.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/check/trace_checker.hpp"
#include "oracle/run/runner.hpp"
#include "oracle/scenario/expectations.hpp"
#include "oracle/scenario/scenario.hpp"
#include "oracle/trace/reader.hpp"

namespace reference {

using nlohmann::json;
using turnstile::oracle::Event;
using turnstile::oracle::Trace;

inline std::optional<Trace> local_parse(const std::string& text, std::string& why) {
  Trace t;
  t.source = "<local>";
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return why = "line " + std::to_string(n) + ": not a JSON object", std::nullopt;
    if (!j.contains("seq") || j["seq"] != n) return why = "line " + std::to_string(n) + ": seq", std::nullopt;
    if (!j.contains("ev") || !j["ev"].is_string()) return why = "line " + std::to_string(n) + ": ev", std::nullopt;
    Event e;
    e.line = n;
    e.seq = static_cast<std::int64_t>(n);
    e.ev = j["ev"].get<std::string>();
    e.kind = turnstile::oracle::event_kind(e.ev);
    if (e.ev != "trace" && e.ev != "end") {
      if (!j.contains("fiber") || !j["fiber"].is_string() || j["fiber"].get<std::string>().empty())
        return why = "line " + std::to_string(n) + ": fiber", std::nullopt;
      e.fiber = j["fiber"].get<std::string>();
    }
    if ((n == 1) != (e.ev == "trace")) return why = "line " + std::to_string(n) + ": header", std::nullopt;
    e.assign(j);
    t.events.push_back(std::move(e));
  }
  if (t.events.empty() || t.events.back().ev != "end") return why = "no end marker", std::nullopt;
  for (std::size_t i = 0; i + 1 < t.events.size(); ++i)
    if (t.events[i].ev == "end") return why = "end before the last line", std::nullopt;
  t.end_status = t.events.back().text("status");
  return t;
}

// Every lane.submit answered once; every accepted item starts and ends once;
// every call answered: a quick structural sanity check of a reference trace.
inline std::string local_sanity(const Trace& t) {
  std::map<std::string, int> submit, answer, start, end;
  std::map<std::string, bool> accepted;
  std::map<std::string, int> calls, call_answers;
  for (const Event& e : t.events) {
    auto k = [&](const char* a, const char* b) { return e.text(a) + "\n" + e.text(b); };
    if (e.ev == "lane.submit") ++submit[k("lane", "item")];
    if (e.ev == "lane.accepted") { ++answer[k("lane", "item")]; accepted[k("lane", "item")] = true; }
    if (e.ev == "lane.refused") ++answer[k("lane", "item")];
    if (e.ev == "lane.turn_start") ++start[k("lane", "item")];
    if (e.ev == "lane.turn_end") ++end[k("lane", "item")];
    if (e.ev == "turn.call" || e.ev == "turn.reentry") ++calls[k("act", "call")];
    if (e.ev == "turn.refused" || e.ev == "turn.end") ++call_answers[k("act", "call")];
  }
  for (auto& [item, c] : submit)
    if (c != 1 || answer[item] != 1) return "lane item not answered once: " + item;
  for (auto& [item, a] : accepted)
    if (start[item] != 1 || end[item] != 1) return "accepted item not run once: " + item;
  for (auto& [call, c] : calls)
    if (c != 1 || call_answers[call] != 1) return "call not answered once: " + call;
  return {};
}

inline turnstile::oracle::Scenario as_scenario(const json& doc) {
  auto parsed = turnstile::oracle::parse_scenario(doc, "<generated>");
  if (auto* e = std::get_if<turnstile::oracle::InputError>(&parsed))
    throw std::runtime_error(e->to_string());
  return std::get<turnstile::oracle::Scenario>(parsed);
}

inline std::string describe(const std::vector<turnstile::oracle::Violation>& vs) {
  std::string s;
  for (const auto& v : vs) s += "[" + v.rule + "] " + v.message + "\n";
  return s;
}

}  // namespace reference
