// tests/cli_test.cpp: `turnstile-oracle check` and `explain` as a port's CI runs
// them: exit codes 0/1/2, the text and --json reports, known failures apart
// (spec/trace-format.md section 4).
#include <sys/wait.h>

#include <cstdlib>

#include "corpus_support.hpp"
#include "oracle/check/rules.hpp"

namespace turnstile::oracle::testing {
namespace {

struct OracleRun {
  int exit_code = -1;
  std::string out, err;
};

std::filesystem::path temp_dir() {
  // One directory per test and process: ctest runs these tests in parallel.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::path(::testing::TempDir()) /
             ("turnstile-oracle-cli-" + std::to_string(::getpid()) + "-" +
              (info != nullptr ? info->name() : "none"));
  std::filesystem::create_directories(dir);
  return dir;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs the oracle with `args` (each quoted), stdin from `input` when set.
OracleRun oracle(const std::vector<std::string>& args, const std::string& input = "") {
  const auto dir = temp_dir();
  const auto out = dir / "stdout", err = dir / "stderr", in = dir / "stdin";
  std::string command = shell_quote(TURNSTILE_ORACLE_EXE);
  for (const auto& a : args) command += " " + shell_quote(a);
  if (!input.empty()) {
    std::ofstream(in, std::ios::binary) << input;
    command += " <" + shell_quote(in.string());
  } else {
    command += " </dev/null";
  }
  command += " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
  const int status = std::system(command.c_str());  // NOLINT(concurrency-mt-unsafe): one test thread
  OracleRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_file(out);
  run.err = read_file(err);
  return run;
}

std::string bad(const std::string& name) { return (corpus_dir() / "bad" / (name + ".jsonl")).string(); }
std::string good(const std::string& name) { return (corpus_dir() / "good" / (name + ".jsonl")).string(); }

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = temp_dir() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// spec: [TRACE-4.2]
TEST(OracleCli, CleanTracesExitZero) {
  std::vector<std::string> args{"check"};
  for (const auto& f : corpus_files("good")) args.push_back(f.string());
  const OracleRun r = oracle(args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, ": pass")) << r.out;
  EXPECT_FALSE(contains(r.out, "fail")) << r.out;
}

// spec: [TRACE-4.2]
TEST(OracleCli, ViolationExitsOneNamingRuleAndLines) {
  const std::string file = bad("LANE-5.1.overlapping-turns");
  const OracleRun r = oracle({"check", good("lane-post-from-own-turn"), file});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, file + ":6,7: [LANE-5.1] ")) << r.out;
  EXPECT_TRUE(contains(r.out, file + ": fail")) << r.out;
}

// spec: [TRACE-4.1] [TRACE-4.2]
TEST(OracleCli, UnusableInputExitsTwoAndOthersAreStillChecked) {
  const std::string broken = write_temp("broken.jsonl", R"({"seq":1,"ev":"trace","format":1,"impl":"x"})"
                                                        "\n"
                                                        R"({"seq":3,"ev":"end","status":"quiescent"})"
                                                        "\n");
  const std::string violating = bad("TURN-3.1.serial-overlap");
  const OracleRun r = oracle({"check", broken, violating, (temp_dir() / "no-such-file.jsonl").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, broken + ":2: field 'seq': ")) << r.err;
  EXPECT_TRUE(contains(r.err, "no-such-file.jsonl:0: cannot open")) << r.err;
  EXPECT_TRUE(contains(r.out, violating + ":4,5: [TURN-3.1] ")) << r.out;
}

// spec: [TRACE-4.1]
TEST(OracleCli, BinaryInputExitsTwo) {
  std::string junk(4096, '\0');
  for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 7919) & 0xFF);
  const OracleRun r = oracle({"check", write_temp("junk.bin", junk)});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "junk.bin:1: ")) << r.err;
}

// spec: [TRACE-4.2] [TRACE-4.1]
TEST(OracleCli, JsonReportShape) {
  const std::string file = bad("LANE-5.2.out-of-order");
  const OracleRun r = oracle({"check", "--json", file, good("turns-task-reentry"), write_temp("empty.jsonl", "")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const auto doc = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << r.out;
  EXPECT_EQ(doc["exit"], 2);
  EXPECT_EQ(doc["verdict"], "unusable");
  EXPECT_EQ(doc["trace_format"], 1);
  ASSERT_EQ(doc["traces"].size(), 3u);
  const auto& t0 = doc["traces"][0];
  EXPECT_EQ(t0["source"], file);
  EXPECT_EQ(t0["verdict"], "fail");
  EXPECT_EQ(t0["new_failures"], 1);
  EXPECT_EQ(t0["known_failures"], 0);
  EXPECT_TRUE(t0["error"].is_null());
  ASSERT_EQ(t0["violations"].size(), 1u);
  const auto& v = t0["violations"][0];
  EXPECT_EQ(v["rule"], "LANE-5.2");
  EXPECT_EQ(v["lines"], nlohmann::json({3, 5, 6}));
  EXPECT_TRUE(v["message"].is_string());
  EXPECT_EQ(v["known"], false);
  EXPECT_EQ(doc["traces"][1]["verdict"], "pass");
  EXPECT_EQ(doc["traces"][2]["verdict"], "unusable");
  EXPECT_EQ(doc["traces"][2]["error"]["line"], 0);
  // Without the unusable input, the exit is 1.
  const OracleRun r1 = oracle({"check", "--json", file});
  EXPECT_EQ(r1.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(r1.out)["verdict"], "fail");
}

// spec: [TRACE-4.2]
TEST(OracleCli, KnownFailuresAreReportedApart) {
  const std::string known = write_temp("known.txt", "# rules this port does not meet yet\n\nLANE-5.1  # overlap\n");
  const std::string file = bad("LANE-5.1.overlapping-turns");
  const OracleRun text = oracle({"check", "--known-failures", known, file});
  EXPECT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_TRUE(contains(text.out, "known failure: 6,7: [LANE-5.1]")) << text.out;
  const OracleRun json = oracle({"check", "--json", "--known-failures", known, file, bad("LANE-5.2.out-of-order")});
  EXPECT_EQ(json.exit_code, 1) << json.out;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["traces"][0]["verdict"], "pass");
  EXPECT_EQ(doc["traces"][0]["known_failures"], 1);
  EXPECT_EQ(doc["traces"][0]["new_failures"], 0);
  EXPECT_EQ(doc["traces"][0]["violations"][0]["known"], true);
  EXPECT_EQ(doc["traces"][1]["verdict"], "fail");
  // An unknown rule ID in the list is a usage error, not silently ignored.
  const OracleRun typo = oracle({"check", "--known-failures", write_temp("typo.txt", "LANE-55.1\n"), file});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_TRUE(contains(typo.err, "typo.txt:1: unknown rule ID")) << typo.err;
}

// spec: [TRACE-4.1] [TRACE-4.2]
TEST(OracleCli, StdinAndUsage) {
  const OracleRun r = oracle({"check", "-"}, read_file(bad("FL-3.4.handoff-carries-binding")));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "<stdin>:3,4: [FL-3.4]")) << r.out;
  EXPECT_EQ(oracle({"check", "-"}, read_file(good("turns-task-reentry"))).exit_code, 0);
  EXPECT_EQ(oracle({"check"}).exit_code, 2);
  EXPECT_EQ(oracle({"check", "--frobnicate", good("turns-task-reentry")}).exit_code, 2);
  EXPECT_EQ(oracle({"check", good("turns-task-reentry"), "--scenario"}).exit_code, 2);
  EXPECT_EQ(oracle({"check", "--scenario", (temp_dir() / "none.json").string(), good("turns-task-reentry")}).exit_code, 2);
}

// Issue 14, finding 5: a trace checked against a scenario other than the one
// its header names is unusable (exit 2, line 1, field `scenario`); a header
// that names the scenario, or none, is checked.
// spec: [TRACE-4.1] [TRACE-2.2]
TEST(OracleCli, TraceOfAnotherScenarioIsUnusable) {
  const std::string scenario = (corpus_dir() / "bad" / "LANE-8.1.body-never-ran.scenario.json").string();
  const std::string own = bad("LANE-8.1.body-never-ran");
  std::string text = read_file(own);
  text.replace(text.find("\"body-never-ran\""), 16, "\"another-one\"");
  const std::string other = write_temp("other.jsonl", text);
  const OracleRun r = oracle({"check", "--scenario", scenario, other, own});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, other + ":1: field 'scenario': the trace executes scenario 'another-one' "
                                      "but is checked against scenario 'body-never-ran'")) << r.err;
  EXPECT_TRUE(contains(r.out, own + ":3,4: [LANE-8.1] ")) << r.out;  // the other input is still checked
  EXPECT_EQ(oracle({"check", "--scenario", scenario, own}).exit_code, 1);
}

// Issue 14, finding 8: an op that left no outcome is reported at a line (the
// `end` marker when nothing of it is in the trace), and a violation without
// lines prints as "FILE: [RULE] ...", never "FILE:: [RULE]".
// spec: [TRACE-4.2]
TEST(OracleCli, EveryViolationLineIsReadable) {
  const std::string scenario = write_temp(
      "close.json", R"({"scenario": "close-only", "format": 1, "contract": "lane", "lanes": ["L0"], "keys": [],)"
                    R"( "activations": [], "fibers": [{"fiber": "f0", "ops": [)"
                    R"({"id": "o1", "do": "close", "lane": "L0", "expect": ["ok"]}]}]})");
  const std::string trace = write_temp("close.jsonl", R"({"seq":1,"ev":"trace","format":1,"impl":"x"})"
                                                      "\n"
                                                      R"({"seq":2,"ev":"end","status":"quiescent"})"
                                                      "\n");
  const OracleRun r = oracle({"check", "--scenario", scenario, trace});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, trace + ":2: [TRACE-2.1] operation 'o1' (close) left no outcome")) << r.out;
  EXPECT_FALSE(contains(r.out, "::")) << r.out;
  const Violation none{"LANE-8.1", {}, "no lines", false};
  EXPECT_EQ(to_string(none), "[LANE-8.1] no lines");
  EXPECT_TRUE(to_json(none)["consequence_of"].is_null());
}

// spec: [TRACE-4.2]
TEST(OracleCli, ExplainPrintsTheRule) {
  const OracleRun r = oracle({"explain", "LANE-5.2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[LANE-5.2] fifo")) << r.out;
  EXPECT_TRUE(contains(r.out, "spec/state-lane.md")) << r.out;
  EXPECT_TRUE(contains(r.out, "Turns run in the order their submissions took effect")) << r.out;
  EXPECT_TRUE(contains(r.out, "verify: ")) << r.out;
  const OracleRun t = oracle({"explain", "[TRACE-4.1]"});
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_TRUE(contains(t.out, "unusable-input-is-named")) << t.out;
  const OracleRun unknown = oracle({"explain", "LANE-99.9"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(contains(unknown.err, "unknown rule 'LANE-99.9'")) << unknown.err;
}

// spec: [TRACE-4.2]
TEST(OracleRules, EveryCheckedRuleHasItsTextEmbedded) {
  for (const auto& file : corpus_files("bad")) {
    const std::string name = file.filename().string();
    const std::string rule = name.substr(0, name.find('.', name.find('.') + 1));
    const RuleText* text = find_rule(rule);
    ASSERT_NE(text, nullptr) << rule;
    EXPECT_EQ(text->id, rule);
    EXPECT_FALSE(text->title.empty());
    EXPECT_NE(text->text.find("verify:"), std::string_view::npos) << rule;
  }
  EXPECT_GE(all_rules().size(), 100u);
  EXPECT_EQ(find_rule("NOPE-1.1"), nullptr);
}

}  // namespace
}  // namespace turnstile::oracle::testing
