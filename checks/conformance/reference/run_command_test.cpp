// `turnstile-oracle run` and `check` agree (issue 14, finding 6;
// spec/trace-format.md [TRACE-2.2]): every trace `run` writes for generated
// scenarios passes `check` against its scenario, also for scenarios that cross
// contracts, and for the ops a lane turn starts and cannot await (a `run` of
// another lane, a `close`: spec/porting.md section 4).
//
// The command-line test drives the built executable through one shell loop
// (`scenarios`, then `run` and `check --scenario` per scenario); the
// in-process tests run more scenarios, under two schedules each.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "reference_support.hpp"

namespace {

using namespace turnstile::oracle;
using reference::json;

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("run_command_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs and checks every scenario of `scenarios` (a JSON Lines file) with the
// executable; returns the `check` output of each scenario that did not pass
// (empty: all passed) and sets `checked` to how many were checked.
std::string run_and_check_all(const std::filesystem::path& dir, std::size_t& checked) {
  const std::string exe = std::string("'") + TURNSTILE_ORACLE_EXE + "'";
  std::ofstream(dir / "loop.sh", std::ios::binary)
      << "n=0\n"
      << "while IFS= read -r line; do\n"
      << "  n=$((n+1))\n"
      << "  printf '%s\\n' \"$line\" > s.json\n"
      << "  " << exe << " run s.json -o t.jsonl || echo \"run failed: $line\" >> fail.txt\n"
      << "  " << exe << " check --scenario s.json t.jsonl > out.txt 2>&1 || cat out.txt s.json t.jsonl >> fail.txt\n"
      << "done < scenarios.jsonl\n"
      << "echo $n > count.txt\n";
  const std::string command = "cd '" + dir.string() + "' && /bin/sh loop.sh";
  const int status = std::system(command.c_str());  // NOLINT(concurrency-mt-unsafe): one test thread
  EXPECT_EQ(status, 0);
  checked = static_cast<std::size_t>(std::atoll(read_all(dir / "count.txt").c_str()));
  return std::filesystem::exists(dir / "fail.txt") ? read_all(dir / "fail.txt") : std::string();
}

// spec: [TRACE-2.2] [TRACE-2.1]
TEST(RunCommand, EveryTraceRunWritesPassesCheck) {
  const auto dir = fresh_dir("generated");
  {
    std::ofstream out(dir / "scenarios.jsonl", std::ios::binary);
    for (const json& s : generate_scenarios(14, 200, {})) out << s.dump() << "\n";
  }
  std::size_t checked = 0;
  const std::string failures = run_and_check_all(dir, checked);
  EXPECT_EQ(checked, 200u);
  EXPECT_EQ(failures, "");
}

// The minimal case of finding 6: a turn that runs another lane and closes it.
// spec: [TRACE-2.2] [LANE-5.8] [LANE-7.6]
TEST(RunCommand, OpsATurnCannotAwaitAreStartedAndChecked) {
  const auto dir = fresh_dir("finding6");
  {
    std::ofstream out(dir / "scenarios.jsonl", std::ios::binary);
    out << R"({"scenario":"finding-6","format":1,"contract":"lane","lanes":["L0","L1"],"keys":[],)"
           R"("activations":[],"fibers":[{"fiber":"f0","ops":[{"id":"o1","do":"run","lane":"L0",)"
           R"("expect":["ok"],"body":[{"id":"o2","do":"run","lane":"L1","expect":["ok"],"body":[]},)"
           R"({"id":"o3","do":"close","lane":"L1"}]},{"id":"o4","do":"post","lane":"L1",)"
           R"("expect":["refused:closed"],"rule":"LANE-7.4","body":[]}]}]})"
        << "\n";
  }
  std::size_t checked = 0;
  EXPECT_EQ(run_and_check_all(dir, checked), "");
  EXPECT_EQ(checked, 1u);
  // The inner run was awaited (by the runner's tracking fiber), the close drained.
  const std::string trace = read_all(dir / "t.jsonl");
  EXPECT_NE(trace.find(R"("ev":"lane.resumed","fiber":"await:o2")"), std::string::npos) << trace;
  EXPECT_NE(trace.find(R"("ev":"lane.drained")"), std::string::npos) << trace;
}

// In process, more of them: scenarios that cross all three contracts, each
// under its own schedule and a seeded one.
// spec: [TRACE-2.2] [FL-3.8] [FL-3.9] [LANE-6.2] [LANE-5.3] [LANE-8.7]
TEST(RunCommand, MixedScenariosConformUnderTwoSchedules) {
  std::size_t runs = 0;
  for (const json& doc : generate_scenarios(1414, 600, {})) {
    const Scenario s = reference::as_scenario(doc);
    for (std::optional<std::uint64_t> sched : {std::optional<std::uint64_t>{}, std::optional<std::uint64_t>{runs}}) {
      const std::string text = run_scenario(s, RunOptions{sched, 0});
      auto parsed = parse_trace_text(text, s.id);
      ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
      const Trace& t = std::get<Trace>(parsed);
      auto vs = check_trace(t);
      const auto unmet = check_expectations(s, t);
      vs.insert(vs.end(), unmet.begin(), unmet.end());
      ASSERT_TRUE(vs.empty()) << reference::describe(vs) << doc.dump() << "\n" << text;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 1200u);
}

}  // namespace
