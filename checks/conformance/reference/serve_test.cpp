// `turnstile-oracle serve` driven through a pipe (spec/trace-format.md
// section 3, [TRACE-3.1]): one response line per request line, in order,
// echoing `id`; errors never end the session; known failures are reported
// apart.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "reference_support.hpp"

namespace {

using reference::json;

struct Session {
  std::vector<json> responses;
  int status = -1;
};

// Writes the request lines to a file and runs `serve` with it on stdin.
Session serve(const std::vector<std::string>& requests) {
  const std::string in = ::testing::TempDir() + "serve_requests_" +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl";
  {
    std::ofstream f(in, std::ios::binary);
    for (const auto& r : requests) f << r << "\n";
  }
  Session s;
  const std::string cmd = std::string("'") + TURNSTILE_ORACLE_EXE + "' serve < '" + in + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return s;
  std::string line;
  char buf[65536];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      s.responses.push_back(json::parse(line, nullptr, false));
      line.clear();
    }
  }
  s.status = pclose(p);
  return s;
}

std::string reference_trace(json* scenario) {
  *scenario = turnstile::oracle::generate_scenarios(9, 1, {"lane"})[0];
  return turnstile::oracle::run_scenario(reference::as_scenario(*scenario), {1, 0});
}

// spec: [TRACE-3.1]
TEST(Serve, AnswersEveryRequestInOrderEchoingId) {
  const Session s = serve({
      R"({"id": 1, "method": "hello", "protocol": 1, "port": "test"})",
      R"({"id": "two", "method": "scenarios", "seed": 5, "count": 4, "contract": ["lane", "turns"]})",
      R"({"id": [3], "method": "scenarios", "seed": 5, "count": 2, "contract": "fiber-local"})",
  });
  EXPECT_EQ(s.status, 0);
  ASSERT_EQ(s.responses.size(), 3u);
  EXPECT_EQ(s.responses[0]["id"], 1);
  EXPECT_EQ(s.responses[0]["ok"], true);
  EXPECT_EQ(s.responses[0]["protocol"], 1);
  EXPECT_EQ(s.responses[0]["trace_format"], 1);
  EXPECT_EQ(s.responses[0]["scenario_format"], 1);
  EXPECT_TRUE(s.responses[0]["oracle"].is_string());
  EXPECT_EQ(s.responses[1]["id"], "two");
  ASSERT_EQ(s.responses[1]["scenarios"].size(), 4u);
  EXPECT_EQ(s.responses[1]["scenarios"][0]["contract"], "lane");
  EXPECT_EQ(s.responses[1]["scenarios"][1]["contract"], "turns");
  // The same scenarios as the library (and `scenarios`) produce.
  EXPECT_EQ(s.responses[1]["scenarios"][0], turnstile::oracle::generate_scenarios(5, 4, {"lane", "turns"})[0]);
  EXPECT_EQ(s.responses[2]["id"], json::array({3}));
  EXPECT_EQ(s.responses[2]["scenarios"][1]["contract"], "fiber-local");
}

// spec: [TRACE-3.1]
TEST(Serve, BadRequestsGetErrorsAndTheSessionGoesOn) {
  const Session s = serve({
      R"({"id": 1, "method": "dance"})",
      R"(this is not json)",
      R"({"id": 3, "method": "hello", "protocol": 2})",
      R"({"id": 4, "method": "scenarios", "seed": -1, "count": 1})",
      R"({"id": 5, "method": "check", "trace": "{\"seq\": 1}\n"})",
      R"({"id": 6, "method": "check"})",
      R"({"method": "hello", "protocol": 1})",
      R"({"id": 8, "method": "hello", "protocol": 1})",
  });
  EXPECT_EQ(s.status, 0);
  ASSERT_EQ(s.responses.size(), 8u);
  const char* codes[] = {"unknown-method", "bad-request", "unsupported-version", "bad-request",
                         "unusable-trace", "bad-request", "bad-request"};
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(s.responses[i]["ok"], false) << i;
    EXPECT_EQ(s.responses[i]["error"]["code"], codes[i]) << s.responses[i].dump();
    EXPECT_TRUE(s.responses[i]["error"]["message"].is_string());
  }
  EXPECT_EQ(s.responses[0]["id"], 1);
  EXPECT_TRUE(s.responses[1]["id"].is_null());
  EXPECT_EQ(s.responses[7]["ok"], true);
  EXPECT_EQ(s.responses[7]["id"], 8);
}

// spec: [TRACE-3.1]
TEST(Serve, ByeEndsTheSession) {
  const Session s = serve({R"({"id": 1, "method": "bye"})", R"({"id": 2, "method": "hello", "protocol": 1})"});
  EXPECT_EQ(s.status, 0);
  ASSERT_EQ(s.responses.size(), 1u);
  EXPECT_EQ(s.responses[0]["ok"], true);
}

// spec: [TRACE-3.1] [TRACE-2.2]
TEST(Serve, CheckPassesAReferenceTraceWithItsScenario) {
  json scenario;
  const std::string trace = reference_trace(&scenario);
  const json req{{"id", 1}, {"method", "check"}, {"trace", trace}, {"scenario", scenario}};
  const Session s = serve({req.dump()});
  ASSERT_EQ(s.responses.size(), 1u);
  EXPECT_EQ(s.responses[0]["ok"], true) << s.responses[0].dump();
  EXPECT_EQ(s.responses[0]["verdict"], "pass") << s.responses[0].dump();
  EXPECT_EQ(s.responses[0]["new_failures"], 0);
  EXPECT_EQ(s.responses[0]["violations"], json::array());
}

// A broken trace fails; with its rule in known_failures it passes, and the
// violation is reported as known.
// spec: [TRACE-3.1]
TEST(Serve, KnownFailuresAreReportedApart) {
  json scenario;
  std::string trace = reference_trace(&scenario);
  // Drop the first lane.turn_end: an accepted item never ends ([LANE-8.1]).
  std::vector<json> lines;
  std::istringstream in(trace);
  std::string line;
  bool dropped = false;
  while (std::getline(in, line)) {
    json e = json::parse(line);
    if (!dropped && e["ev"] == "lane.turn_end") { dropped = true; continue; }
    lines.push_back(e);
  }
  ASSERT_TRUE(dropped);
  std::string broken;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i]["seq"] = i + 1;
    broken += lines[i].dump() + "\n";
  }
  const json fail{{"id", 1}, {"method", "check"}, {"trace", broken}};
  const Session first = serve({fail.dump()});
  ASSERT_EQ(first.responses.size(), 1u);
  ASSERT_EQ(first.responses[0]["ok"], true) << first.responses[0].dump();
  EXPECT_EQ(first.responses[0]["verdict"], "fail");
  ASSERT_FALSE(first.responses[0]["violations"].empty());
  json known = json::array();
  for (const auto& v : first.responses[0]["violations"]) {
    EXPECT_EQ(v["known"], false);
    known.push_back(v["rule"]);
  }
  const json again{{"id", 2}, {"method", "check"}, {"trace", broken}, {"known_failures", known}};
  const Session second = serve({again.dump()});
  ASSERT_EQ(second.responses.size(), 1u);
  EXPECT_EQ(second.responses[0]["verdict"], "pass") << second.responses[0].dump();
  EXPECT_EQ(second.responses[0]["new_failures"], 0);
  EXPECT_EQ(second.responses[0]["known_failures"], first.responses[0]["violations"].size());
  for (const auto& v : second.responses[0]["violations"]) EXPECT_EQ(v["known"], true);
}

// Issue 14, findings 4 and 5: a known-failures list naming no rule is a bad
// request (as `check --known-failures` exits 2: not silently ignored), and so
// is a trace checked against a scenario other than the one its header names.
// The session goes on after both.
// spec: [TRACE-3.1] [TRACE-4.1]
TEST(Serve, UnknownKnownFailureAndScenarioMismatchAreBadRequests) {
  json scenario;
  const std::string trace = reference_trace(&scenario);
  const json typo{{"id", 1}, {"method", "check"}, {"trace", trace}, {"known_failures", {"LANE-55.1"}}};
  json other = scenario;
  other["scenario"] = "another-scenario";
  const json mismatch{{"id", 2}, {"method", "check"}, {"trace", trace}, {"scenario", other}};
  const json fine{{"id", 3}, {"method", "check"}, {"trace", trace}, {"scenario", scenario},
                  {"known_failures", {"[LANE-5.1]"}}};
  const Session s = serve({typo.dump(), mismatch.dump(), fine.dump()});
  ASSERT_EQ(s.responses.size(), 3u);
  EXPECT_EQ(s.responses[0]["ok"], false) << s.responses[0].dump();
  EXPECT_EQ(s.responses[0]["error"]["code"], "bad-request");
  EXPECT_NE(s.responses[0]["error"]["message"].get<std::string>().find("unknown rule ID 'LANE-55.1'"),
            std::string::npos);
  EXPECT_EQ(s.responses[1]["ok"], false) << s.responses[1].dump();
  EXPECT_EQ(s.responses[1]["error"]["code"], "bad-request");
  EXPECT_NE(s.responses[1]["error"]["message"].get<std::string>().find(
                ":1: field 'scenario': the trace executes scenario '" + scenario["scenario"].get<std::string>() +
                "' but is checked against scenario 'another-scenario'"),
            std::string::npos)
      << s.responses[1].dump();
  EXPECT_EQ(s.responses[2]["ok"], true) << s.responses[2].dump();
  EXPECT_EQ(s.responses[2]["verdict"], "pass");
}

// spec: [TRACE-3.1]
TEST(Serve, ExplainNamesTheRule) {
  const Session s = serve({R"({"id": 1, "method": "explain", "rule": "LANE-5.2"})",
                           R"({"id": 2, "method": "explain", "rule": "NOPE-1.1"})"});
  ASSERT_EQ(s.responses.size(), 2u);
  EXPECT_EQ(s.responses[0]["ok"], true) << s.responses[0].dump();
  EXPECT_EQ(s.responses[0]["rule"], "LANE-5.2");
  EXPECT_TRUE(s.responses[0]["title"].is_string());
  EXPECT_TRUE(s.responses[0]["text"].is_string());
  EXPECT_EQ(s.responses[1]["ok"], false);
}

}  // namespace
