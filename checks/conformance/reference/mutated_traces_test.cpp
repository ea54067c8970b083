// Reference traces mutated to break one rule are always rejected with that
// rule's ID (spec/trace-format.md [TRACE-5.1]); a trace that misses a scenario's
// `expect` is reported under the op's `rule` (check_expectations).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "reference_support.hpp"

namespace {

using namespace turnstile::oracle;
using reference::json;
using Lines = std::vector<json>;

Lines lines_of(const std::string& text) {
  Lines out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

std::string text_of(Lines lines) {
  std::string s;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i]["seq"] = i + 1;  // renumbered: the mutation keeps the framing valid
    s += lines[i].dump() + "\n";
  }
  return s;
}

std::string key(const json& e, const char* a, const char* b) { return e.value(a, "") + "\n" + e.value(b, ""); }

// A mutation edits the lines (returns false when the trace offers no place for it).
using Mutation = std::function<bool(Lines&)>;

// Drops the first lane.turn_end.
bool drop_turn_end(Lines& l) {
  for (std::size_t i = 0; i < l.size(); ++i)
    if (l[i]["ev"] == "lane.turn_end") return l.erase(l.begin() + static_cast<long>(i)), true;
  return false;
}

// Two turns of one lane, each a bare start/end pair, both accepted before the
// first starts: the later one moves first.
bool swap_turn_starts(Lines& l) {
  std::vector<std::size_t> bare;  // index of a turn_start directly followed by its turn_end
  std::map<std::string, std::size_t> accepted;
  for (std::size_t i = 0; i + 1 < l.size(); ++i) {
    if (l[i]["ev"] == "lane.accepted") accepted[key(l[i], "lane", "item")] = i;
    if (l[i]["ev"] == "lane.turn_start" && l[i + 1]["ev"] == "lane.turn_end" &&
        key(l[i], "lane", "item") == key(l[i + 1], "lane", "item"))
      bare.push_back(i);
  }
  for (std::size_t a = 0; a < bare.size(); ++a)
    for (std::size_t b = a + 1; b < bare.size(); ++b)
      if (l[bare[a]]["lane"] == l[bare[b]]["lane"] &&
          accepted[key(l[bare[b]], "lane", "item")] < bare[a]) {
        for (std::size_t k = 0; k < 2; ++k) std::swap(l[bare[a] + k], l[bare[b] + k]);
        return true;
      }
  return false;
}

// Moves the first line `is_end` picks after the first later line `starts_after(end,
// start)` picks: the two spans overlap. False when no such pair exists.
template <class IsEnd, class StartsAfter>
bool move_end_after_next_start(Lines& l, IsEnd is_end, StartsAfter starts_after) {
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (!is_end(l[i])) continue;
    for (std::size_t j = i + 1; j < l.size(); ++j)
      if (starts_after(l[i], l[j])) {
        json end = l[i];
        l.insert(l.begin() + static_cast<long>(j) + 1, end);
        l.erase(l.begin() + static_cast<long>(i));
        return true;
      }
  }
  return false;
}

// A lane.turn_end moved after the next turn_start of the same lane: two turns overlap.
bool overlap_lane_turns(Lines& l) {
  return move_end_after_next_start(
      l, [](json& e) { return e["ev"] == "lane.turn_end"; },
      [](json& end, json& s) { return s["ev"] == "lane.turn_start" && s["lane"] == end["lane"]; });
}

// A reentrant refusal turned into an acceptance.
bool accept_reentrant(Lines& l) {
  for (auto& e : l)
    if (e["ev"] == "lane.refused" && e["reason"] == "reentrant") {
      e["ev"] = "lane.accepted";
      e.erase("reason");
      return true;
    }
  return false;
}

// Two serial turns of one activation overlapped: a turn.end moved after the
// next turn.start of the same activation whose call was serial.
bool overlap_serial_turns(Lines& l) {
  std::map<std::string, bool> serial;
  for (auto& e : l) {
    if (e["ev"] == "turn.call") serial[key(e, "act", "call")] = e["mode"] == "serial";
    if (e["ev"] == "turn.reentry") serial[key(e, "act", "call")] = true;
  }
  return move_end_after_next_start(
      l, [&](json& e) { return e["ev"] == "turn.end" && serial[key(e, "act", "call")]; },
      [&](json& end, json& s) {
        return s["ev"] == "turn.start" && s["act"] == end["act"] && serial[key(s, "act", "call")];
      });
}

// An await refusal dropped ([TURN-7.1]): the await that closes a cycle of
// waits (a self-call awaited from its own turn, or through a chain of calls, or
// across two requests) is left standing: a possible hang.
bool drop_await_refusal(Lines& l) {
  for (std::size_t i = 0; i < l.size(); ++i)
    if (l[i]["ev"] == "turn.await_refused") return l.erase(l.begin() + static_cast<long>(i)), true;
  return false;
}

// An await that closes no cycle refused ([TURN-7.1]): a false refusal. The
// await of a call that is not refused gets a `turn.await_refused` right after.
bool refuse_free_await(Lines& l) {
  std::map<std::string, bool> refused;
  for (const auto& e : l)
    if (e["ev"] == "turn.await_refused") refused[key(e, "act", "call")] = true;
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (l[i]["ev"] != "turn.await" || refused[key(l[i], "act", "call")]) continue;
    json r = l[i];
    r["ev"] = "turn.await_refused";
    r["reason"] = "wait-cycle";
    l.insert(l.begin() + static_cast<long>(i) + 1, r);
    return true;
  }
  return false;
}

// A refusal moved from the await to the call (the rule before [TURN-7.1]
// moved): `turn.refused` answering the `turn.call` of a call whose await was
// refused, and the call's turn dropped.
bool refuse_at_the_call(Lines& l) {
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (l[i]["ev"] != "turn.await_refused") continue;
    const std::string k = key(l[i], "act", "call");
    Lines out;
    bool done = false;
    for (auto& e : l) {
      const bool same = e.contains("act") && e.contains("call") && key(e, "act", "call") == k;
      if (same && (e["ev"] == "turn.await" || e["ev"] == "turn.await_refused" || e["ev"] == "turn.start" ||
                   e["ev"] == "turn.end"))
        continue;
      if (e["ev"] == "fiber.spawn" && e.value("child", "") == l[i].value("act", "") + ":" + l[i].value("call", ""))
        continue;  // the refused call's turn fiber never runs
      out.push_back(e);
      if (same && e["ev"] == "turn.call" && !done) {
        json r = e;
        r["ev"] = "turn.refused";
        r["reason"] = "self-call";
        for (const char* f : {"method", "mode", "op"}) r.erase(f);
        out.push_back(r);
        done = true;
      }
    }
    l = std::move(out);
    return done;
  }
  return false;
}

// The closer's fiber reports its close() returned (`lane.close_returned`)
// right after its close request, or, `after_drain`, right after the lane's
// `lane.drained` (where a conforming close returns). False when no close of
// the trace is followed by its lane's drain.
bool close_returns(Lines& l, bool after_drain) {
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (l[i]["ev"] != "lane.close_requested") continue;
    for (std::size_t j = i + 1; j < l.size(); ++j) {
      if (l[j]["ev"] != "lane.drained" || l[j]["lane"] != l[i]["lane"]) continue;
      const json returned = {{"seq", 0}, {"ev", "lane.close_returned"}, {"fiber", l[i]["fiber"]}, {"lane", l[i]["lane"]}};
      l.insert(l.begin() + static_cast<long>(after_drain ? j : i) + 1, returned);
      return true;
    }
  }
  return false;
}
bool close_returns_early(Lines& l) { return close_returns(l, false); }

// An accepted item the lane dropped unrun (a library's clear()): the first
// item whose turn is a bare start/end pair begun after another event since its
// acceptance loses its turn to a `lane.dropped` at the start's place; its
// awaiter, if a run, resumes with `error`.
bool drop_queued_item(Lines& l) {
  std::map<std::string, std::size_t> accepted;
  for (std::size_t i = 0; i + 1 < l.size(); ++i) {
    const std::string k = key(l[i], "lane", "item");
    if (l[i]["ev"] == "lane.accepted") accepted[k] = i;
    if (l[i]["ev"] != "lane.turn_start" || l[i + 1]["ev"] != "lane.turn_end" || key(l[i + 1], "lane", "item") != k)
      continue;
    const auto a = accepted.find(k);
    if (a == accepted.end() || a->second + 1 >= i) continue;
    l[i]["ev"] = "lane.dropped";
    l[i]["reason"] = "clear";
    l.erase(l.begin() + static_cast<long>(i) + 1);
    for (std::size_t j = i + 1; j < l.size(); ++j)
      if (l[j]["ev"] == "lane.resumed" && key(l[j], "lane", "item") == k) l[j]["outcome"] = "error";
    return true;
  }
  return false;
}

// A restore (outside any install) dropped where a later read of that key on
// that fiber would see it.
bool drop_restore(Lines& l) {
  std::map<std::string, int> installs;  // open installs per fiber
  for (std::size_t i = 0; i < l.size(); ++i) {
    const std::string fiber = l[i].value("fiber", "");
    if (l[i]["ev"] == "fl.install") ++installs[fiber];
    if (l[i]["ev"] == "fl.uninstall") --installs[fiber];
    if (l[i]["ev"] != "fl.restore" || installs[fiber] != 0) continue;
    for (std::size_t j = i + 1; j < l.size(); ++j) {
      if (l[j].value("fiber", "") != fiber) continue;
      if (l[j]["ev"] == "fl.install" || l[j]["ev"] == "fl.uninstall") break;
      if (l[j]["ev"] == "fl.bind" && l[j]["key"] == l[i]["key"]) break;
      if (l[j]["ev"] == "fl.read" && l[j]["key"] == l[i]["key"]) {
        l.erase(l.begin() + static_cast<long>(i));
        return true;
      }
    }
  }
  return false;
}

// A read that sees its own fiber's open bind (no install above it) changed to
// a value no bind ever made.
bool corrupt_read(Lines& l) {
  std::map<std::string, std::vector<std::string>> open;  // per fiber: keys bound, "" = install
  for (auto& e : l) {
    auto& stack = open[e.value("fiber", "")];
    if (e["ev"] == "fl.bind") stack.push_back(e["key"]);
    if (e["ev"] == "fl.install") stack.push_back("");
    if ((e["ev"] == "fl.restore" || e["ev"] == "fl.uninstall") && !stack.empty()) stack.pop_back();
    if (e["ev"] != "fl.read" || !e.contains("value")) continue;
    for (auto it = stack.rbegin(); it != stack.rend() && !it->empty(); ++it)
      if (*it == e["key"]) return e["value"] = "never-bound", true;
  }
  return false;
}

struct Case {
  const char* contract;
  Mutation mutate;
  const char* rule;  // must be among the violations
  // Also accepted: the rule a check names for a special case of `rule` (two
  // serial turns overlapping where one came through turn(): [TURN-5.2]).
  const char* also = nullptr;
};

void always_rejected(const Case& c, std::size_t min_applied) {
  std::size_t applied = 0;
  for (const json& doc : generate_scenarios(606, 300, {c.contract})) {
    const Scenario s = reference::as_scenario(doc);
    Lines l = lines_of(run_scenario(s, RunOptions{1, 0}));
    if (!c.mutate(l)) continue;
    ++applied;
    const std::string text = text_of(l);
    auto parsed = parse_trace_text(text, "mutated");
    ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
    const auto vs = check_trace(std::get<Trace>(parsed));
    bool found = false;
    for (const auto& v : vs)
      found = found || v.rule == c.rule || (c.also != nullptr && v.rule == c.also);
    ASSERT_TRUE(found) << "expected [" << c.rule << "], got:\n" << reference::describe(vs) << text;
  }
  EXPECT_GE(applied, min_applied) << "the mutation found too few places to apply";
}

// spec: [TRACE-5.1] [LANE-8.1]
TEST(MutatedTraces, DroppedTurnEndIsRejected) { always_rejected({"lane", drop_turn_end, "LANE-8.1"}, 100); }

// spec: [TRACE-5.1] [LANE-5.2]
TEST(MutatedTraces, SwappedTurnStartsAreRejected) { always_rejected({"lane", swap_turn_starts, "LANE-5.2"}, 20); }

// spec: [TRACE-5.1] [LANE-5.1]
TEST(MutatedTraces, OverlappedLaneTurnsAreRejected) { always_rejected({"lane", overlap_lane_turns, "LANE-5.1"}, 50); }

// spec: [TRACE-5.1] [LANE-5.3]
TEST(MutatedTraces, AcceptedReentrantRunIsRejected) { always_rejected({"lane", accept_reentrant, "LANE-5.3"}, 50); }

// spec: [TRACE-5.1] [LANE-7.6]
TEST(MutatedTraces, CloseReturnedBeforeTheDrainIsRejected) {
  always_rejected({"lane", close_returns_early, "LANE-7.6"}, 50);
}

// The same traces with the close returning after the drain pass: the optional
// event is checked, not presumed wrong.
// spec: [TRACE-5.1] [LANE-7.6]
TEST(MutatedTraces, CloseReturnedAfterTheDrainPasses) {
  std::size_t applied = 0;
  for (const json& doc : generate_scenarios(606, 300, {"lane"})) {
    Lines l = lines_of(run_scenario(reference::as_scenario(doc), RunOptions{1, 0}));
    if (!close_returns(l, true)) continue;
    ++applied;
    const std::string text = text_of(l);
    auto parsed = parse_trace_text(text, "with close_returned");
    ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
    const auto vs = check_trace(std::get<Trace>(parsed));
    ASSERT_TRUE(vs.empty()) << reference::describe(vs) << text;
  }
  EXPECT_GE(applied, 50u);
}

// spec: [TRACE-5.1] [LANE-8.1]
TEST(MutatedTraces, DroppedQueuedItemIsRejected) { always_rejected({"lane", drop_queued_item, "LANE-8.1"}, 50); }

// The same drop is one root, under [LANE-8.1], whatever else the item's loss
// makes the trace say (its awaiter's error, the drain, the items behind it):
// spec/trace-format.md section 4.1 A6.
// spec: [TRACE-5.1] [TRACE-4.2] [LANE-8.1]
TEST(MutatedTraces, DroppedQueuedItemIsOneRoot) {
  std::size_t applied = 0;
  for (const json& doc : generate_scenarios(606, 300, {"lane"})) {
    Lines l = lines_of(run_scenario(reference::as_scenario(doc), RunOptions{1, 0}));
    if (!drop_queued_item(l)) continue;
    ++applied;
    const std::string text = text_of(l);
    auto parsed = parse_trace_text(text, "dropped");
    ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
    const auto vs = check_trace(std::get<Trace>(parsed));
    std::size_t roots = 0;
    for (const auto& v : vs) {
      if (v.consequence_of) continue;
      ++roots;
      EXPECT_EQ(v.rule, "LANE-8.1") << reference::describe(vs) << text;
      EXPECT_NE(v.message.find("was dropped (clear)"), std::string::npos) << v.message;
    }
    ASSERT_EQ(roots, 1u) << reference::describe(vs) << text;
  }
  EXPECT_GE(applied, 50u);
}

// spec: [TRACE-5.1] [TURN-3.1] [TURN-5.2]
TEST(MutatedTraces, OverlappedSerialTurnsAreRejected) {
  always_rejected({"turns", overlap_serial_turns, "TURN-3.1", "TURN-5.2"}, 50);
}

// spec: [TRACE-5.1] [TURN-7.1]
TEST(MutatedTraces, DroppedAwaitRefusalIsRejected) {
  always_rejected({"turns", drop_await_refusal, "TURN-7.1"}, 20);
}

// spec: [TRACE-5.1] [TURN-7.1]
TEST(MutatedTraces, FalseAwaitRefusalIsRejected) {
  always_rejected({"turns", refuse_free_await, "TURN-7.1"}, 50);
}

// spec: [TRACE-5.1] [TURN-7.1]
TEST(MutatedTraces, RefusalAtTheCallIsRejected) {
  always_rejected({"turns", refuse_at_the_call, "TURN-7.1"}, 20);
}

// spec: [TRACE-5.1] [FL-3.1]
TEST(MutatedTraces, DroppedRestoreIsRejected) { always_rejected({"fiber-local", drop_restore, "FL-3.1"}, 30); }

// spec: [TRACE-5.1] [FL-3.1]
TEST(MutatedTraces, CorruptedReadIsRejected) { always_rejected({"fiber-local", corrupt_read, "FL-3.1"}, 50); }

// check_expectations on a locally framed trace (independent of parse_trace):
// an outcome outside `expect` is reported under the op's rule, with its lines.
// spec: [TRACE-2.1]
TEST(Expectations, UnmetExpectReportedUnderItsRule) {
  std::size_t applied = 0;
  for (const json& doc : generate_scenarios(707, 120, {"lane"})) {
    const Scenario s = reference::as_scenario(doc);
    Lines l = lines_of(run_scenario(s, RunOptions{2, 0}));
    std::string item;
    for (auto& e : l)
      if (e["ev"] == "lane.resumed") {
        e["outcome"] = e["outcome"] == "ok" ? "error" : "ok";
        item = e["item"];
        break;
      }
    if (item.empty()) continue;
    ++applied;
    std::string why;
    auto t = reference::local_parse(text_of(l), why);
    ASSERT_TRUE(t.has_value()) << why;
    const auto vs = check_expectations(s, *t);
    ASSERT_FALSE(vs.empty()) << doc.dump();
    EXPECT_NE(vs[0].message.find("'" + item + "'"), std::string::npos) << vs[0].message;
    EXPECT_FALSE(vs[0].lines.empty());
    EXPECT_TRUE(vs[0].rule.starts_with("LANE-")) << vs[0].rule;
  }
  EXPECT_GT(applied, 30u);
}

// An op with `expect` whose outcome the trace never shows is reported.
// spec: [TRACE-2.1]
TEST(Expectations, MissingOutcomeReported) {
  const json doc = generate_scenarios(708, 1, {"turns"})[0];
  const Scenario s = reference::as_scenario(doc);
  Lines l = lines_of(run_scenario(s, RunOptions{1, 0}));
  Lines kept;
  for (auto& e : l)
    if (e["ev"] != "turn.call") kept.push_back(e);
  std::string why;
  auto t = reference::local_parse(text_of(kept), why);
  ASSERT_TRUE(t.has_value()) << why;
  const auto vs = check_expectations(s, *t);
  ASSERT_FALSE(vs.empty());
  EXPECT_NE(vs[0].message.find("left no outcome"), std::string::npos) << vs[0].message;
}

}  // namespace
