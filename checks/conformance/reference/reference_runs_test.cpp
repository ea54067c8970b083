// The reference core's traces from generated scenarios (spec/trace-format.md
// [TRACE-2.1], [TRACE-2.2]): every trace passes every check and meets every
// `expect`; scenarios and runs are deterministic.
//
// The *Conform tests use the real checker (parse_trace_text + check_trace);
// the *Local tests frame the traces with reference_support.hpp's local_parse
// and check only the scenario's expectations and a structural sanity pass.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reference_support.hpp"


namespace {

using namespace turnstile::oracle;
using reference::json;

constexpr std::size_t kPerContract = 1000;  // x 3 contracts x 2 schedules = 6000 runs

// Runs every generated scenario of `contract` (seed `seed`) under the scenario's
// own schedule and under a seeded choice; checks each trace with the checker.
void conform(const std::string& contract, std::uint64_t seed, std::size_t count) {
  std::size_t runs = 0;
  for (const json& doc : generate_scenarios(seed, count, {contract})) {
    const Scenario s = reference::as_scenario(doc);
    for (std::optional<std::uint64_t> sched : {std::optional<std::uint64_t>{}, std::optional<std::uint64_t>{seed * 31 + runs}}) {
      const std::string text = run_scenario(s, RunOptions{sched, 0});
      auto parsed = parse_trace_text(text, s.id);
      ASSERT_TRUE(std::holds_alternative<Trace>(parsed))
          << std::get<InputError>(parsed).to_string() << "\n" << doc.dump() << "\n" << text;
      const Trace& t = std::get<Trace>(parsed);
      auto violations = check_trace(t);
      auto unmet = check_expectations(s, t);
      violations.insert(violations.end(), unmet.begin(), unmet.end());
      ASSERT_TRUE(violations.empty()) << reference::describe(violations) << doc.dump() << "\n" << text;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 2 * count);
}

// Frames each trace locally and checks the scenario's expectations only.
void conform_local(const std::string& contract, std::uint64_t seed, std::size_t count,
                   std::size_t threads) {
  for (const json& doc : generate_scenarios(seed, count, {contract})) {
    const Scenario s = reference::as_scenario(doc);
    for (std::uint64_t sched : {1u, 2u, 3u}) {
      const std::string text = run_scenario(s, RunOptions{sched + seed, threads});
      std::string why;
      auto t = reference::local_parse(text, why);
      ASSERT_TRUE(t.has_value()) << why << "\n" << text;
      EXPECT_EQ(t->end_status, "quiescent");
      const std::string sanity = reference::local_sanity(*t);
      ASSERT_TRUE(sanity.empty()) << sanity << "\n" << doc.dump() << "\n" << text;
      const auto unmet = check_expectations(s, *t);
      ASSERT_TRUE(unmet.empty()) << reference::describe(unmet) << doc.dump() << "\n" << text;
      if (threads > 0) break;  // one run per scenario on real carriers
    }
  }
}

// spec: [TRACE-2.2] [LANE-5.1] [LANE-5.2] [LANE-8.1] [LANE-5.3] [LANE-8.4] [LANE-8.7] [LANE-7.7] [LANE-7.4] [LANE-7.6] [LANE-5.6] [LANE-7.5]
TEST(ReferenceRuns, LaneScenariosConform) { conform("lane", 101, kPerContract); }

// spec: [TRACE-2.2] [FL-3.1] [FL-3.2] [FL-3.3] [FL-3.4] [FL-3.5] [FL-3.6]
TEST(ReferenceRuns, FiberLocalScenariosConform) { conform("fiber-local", 202, kPerContract); }

// spec: [TRACE-2.2] [TURN-3.1] [TURN-2.2] [TURN-2.1] [TURN-7.1] [TURN-5.2]
TEST(ReferenceRuns, TurnScenariosConform) { conform("turns", 303, kPerContract); }

// spec: [TRACE-2.2]
TEST(ReferenceRuns, ThreadPoolRunsConform) {
  for (const json& doc : generate_scenarios(404, 150, {})) {
    const Scenario s = reference::as_scenario(doc);
    const std::string text = run_scenario(s, RunOptions{std::nullopt, 2});
    auto parsed = parse_trace_text(text, s.id);
    ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
    auto violations = check_trace(std::get<Trace>(parsed));
    auto unmet = check_expectations(s, std::get<Trace>(parsed));
    violations.insert(violations.end(), unmet.begin(), unmet.end());
    ASSERT_TRUE(violations.empty()) << reference::describe(violations) << doc.dump() << "\n" << text;
  }
}

// spec: [TRACE-2.1] [TRACE-2.2]
TEST(ReferenceRuns, LaneExpectationsMetLocal) { conform_local("lane", 11, 400, 0); }

// spec: [TRACE-2.1] [TRACE-2.2]
TEST(ReferenceRuns, FiberLocalExpectationsMetLocal) { conform_local("fiber-local", 12, 400, 0); }

// spec: [TRACE-2.1] [TRACE-2.2]
TEST(ReferenceRuns, TurnExpectationsMetLocal) { conform_local("turns", 13, 400, 0); }

// spec: [TRACE-2.1] [TRACE-2.2]
TEST(ReferenceRuns, ThreadPoolExpectationsMetLocal) {
  for (const char* c : {"lane", "fiber-local", "turns"}) conform_local(c, 14, 60, 2);
}

// spec: [TRACE-2.1]
TEST(ScenarioDeterminism, SameArgumentsSameScenarios) {
  const auto a = generate_scenarios(42, 60, {});
  const auto b = generate_scenarios(42, 60, {});
  ASSERT_EQ(a.size(), 60u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].dump(), b[i].dump());
  // Scenario i does not depend on how many were asked for.
  const auto c = generate_scenarios(42, 7, {});
  for (std::size_t i = 0; i < c.size(); ++i) EXPECT_EQ(a[i].dump(), c[i].dump());
  // Another seed gives other scenarios; round robin over the three contracts.
  const auto d = generate_scenarios(43, 60, {});
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i].dump() == d[i].dump();
  EXPECT_LT(same, 10u);
  EXPECT_EQ(a[0]["contract"], "lane");
  EXPECT_EQ(a[1]["contract"], "fiber-local");
  EXPECT_EQ(a[2]["contract"], "turns");
}

// A golden digest of `scenarios --seed 1 --count 40`: the bytes are fixed on
// every platform (own PRNG, integer arithmetic, sorted keys). A deliberate
// change of the generator updates the constant.
// spec: [TRACE-2.1]
TEST(ScenarioDeterminism, GoldenDigest) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  for (const json& s : generate_scenarios(1, 40, {})) {
    for (const char ch : s.dump() + "\n") {
      h ^= static_cast<unsigned char>(ch);
      h *= 1099511628211ULL;
    }
  }
  EXPECT_EQ(h, 0xc0408c13db925c4cULL) << std::hex << "digest 0x" << h;
}

// spec: [TRACE-2.1]
TEST(ScenarioDeterminism, EveryGeneratedScenarioParses) {
  std::size_t with_schedule = 0;
  for (const json& doc : generate_scenarios(5, 900, {})) {
    auto parsed = parse_scenario(doc, "<generated>");
    ASSERT_TRUE(std::holds_alternative<Scenario>(parsed))
        << std::get<InputError>(parsed).to_string() << "\n" << doc.dump();
    with_schedule += doc.contains("schedule");
  }
  EXPECT_GT(with_schedule, 100u);  // deterministic vectors come alongside the random ones
}

// spec: [TRACE-2.2]
TEST(RunDeterminism, SameScenarioAndSeedSameTrace) {
  for (const json& doc : generate_scenarios(77, 90, {})) {
    const Scenario s = reference::as_scenario(doc);
    const std::string a = run_scenario(s, RunOptions{9, 0});
    const std::string b = run_scenario(s, RunOptions{9, 0});
    ASSERT_EQ(a, b) << doc.dump();
  }
}

// spec: [TRACE-2.2]
TEST(RunDeterminism, ScheduleSeedsExploreInterleavings) {
  std::size_t differ = 0;
  for (const json& doc : generate_scenarios(78, 60, {})) {
    const Scenario s = reference::as_scenario(doc);
    std::set<std::string> seen;
    for (std::uint64_t seed = 0; seed < 4; ++seed) seen.insert(run_scenario(s, RunOptions{seed, 0}));
    differ += seen.size() > 1;
  }
  EXPECT_GT(differ, 10u);
}

// spec: [TRACE-2.2]
TEST(ParseScenario, RejectsBadScenariosNamingTheField) {
  json good = generate_scenarios(3, 1, {"lane"})[0];
  ASSERT_TRUE(std::holds_alternative<Scenario>(parse_scenario(good, "g")));
  struct Case { std::string field; json doc; };
  std::vector<Case> cases;
  json j = good; j["format"] = 2; cases.push_back({"format", j});
  j = good; j.erase("fibers"); cases.push_back({"fibers", j});
  j = good; j["contract"] = "other"; cases.push_back({"contract", j});
  j = good; j["fibers"][0]["ops"][0]["do"] = "dance"; cases.push_back({"do", j});
  j = good; j["fibers"][0]["ops"][0]["lane"] = "nowhere"; cases.push_back({"lane", j});
  j = good; j["schedule"] = json::array({-1}); cases.push_back({"schedule", j});
  j = good; j["fibers"][0]["ops"].push_back(j["fibers"][0]["ops"][0]); cases.push_back({"id", j});
  cases.push_back({"", json::array()});
  for (const auto& c : cases) {
    auto parsed = parse_scenario(c.doc, "bad.json");
    ASSERT_TRUE(std::holds_alternative<InputError>(parsed)) << c.doc.dump();
    EXPECT_EQ(std::get<InputError>(parsed).field, c.field) << std::get<InputError>(parsed).message;
    EXPECT_EQ(std::get<InputError>(parsed).source, "bad.json");
  }
}

}  // namespace

namespace {

// Two activations calling each other from serial turns on two fibers: under
// [TURN-7.1] this is no deadlock. Every schedule ends quiescent with a trace
// that passes every check; where both turns are running when they await, the
// await that would close the cycle is refused (`turn.await_refused`), the other
// completes, and the refused call still runs after the turn it waited for.
// (No scenario can deadlock the reference core any more: every wait a scenario
// can make is an await of a call, a lane turn, which is synchronous, or the
// join of children that are part of their turn. The runner's `timeout` ending
// stays for ports and for cores that break [TURN-7.1].)
// spec: [TRACE-2.2] [TURN-7.1]
TEST(CrossRequestCycle, RefusedAtTheAwaitNeverTimesOut) {
  const json doc = json::parse(R"({"scenario": "two-requests", "format": 1, "contract": "turns",
    "lanes": [], "keys": [], "activations": [{"act": "A0"}, {"act": "A1"}],
    "fibers": [
      {"fiber": "f0", "ops": [{"id": "o1", "do": "call", "act": "A0", "method": "m", "expect": ["ok"], "body": [
        {"id": "o2", "do": "yield"},
        {"id": "o3", "do": "call", "act": "A1", "method": "m", "body": [],
         "expect": ["ok", "refused:wait-cycle"], "rule": "TURN-7.1"}]}]},
      {"fiber": "f1", "ops": [{"id": "o4", "do": "call", "act": "A1", "method": "m", "expect": ["ok"], "body": [
        {"id": "o5", "do": "yield"},
        {"id": "o6", "do": "call", "act": "A0", "method": "m", "body": [],
         "expect": ["ok", "refused:wait-cycle"], "rule": "TURN-7.1"}]}]}]})");
  const Scenario s = reference::as_scenario(doc);
  std::size_t refused = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    const std::string text = run_scenario(s, RunOptions{seed, 0});
    auto parsed = parse_trace_text(text, s.id);
    ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
    const Trace& t = std::get<Trace>(parsed);
    EXPECT_EQ(t.end_status, "quiescent") << text;
    auto vs = check_trace(t);
    const auto unmet = check_expectations(s, t);
    vs.insert(vs.end(), unmet.begin(), unmet.end());
    EXPECT_TRUE(vs.empty()) << reference::describe(vs) << text;
    std::size_t here = 0;
    for (const Event& e : t.events) here += e.ev == "turn.await_refused";
    EXPECT_LE(here, 1u) << "both awaits of one cycle refused:\n" << text;
    refused += here;
  }
  EXPECT_GT(refused, 0u);
}

}  // namespace
