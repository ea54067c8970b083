// turnstile/testing/explore_gtest.hpp: an exploration as a GoogleTest test
// ([EXP-5.1]). Header-only; the including target links GTest and turnstile::testing.
//
//   TURNSTILE_EXPLORE_TEST(Bank, TransfersKeepTheTotal, bank_options(),
//                          [](ManualScheduler& s) -> Task<> { ... });
//
// Guarantees
//   - The test fails (a non-fatal gtest failure) iff the exploration found a
//     failing schedule; the failure message is ExploreResult::summary(): the
//     kind and message, the found and shrunk tokens, the shrunk schedule's
//     deviations and the replay line `TURNSTILE_EXPLORE_REPLAY=<token>`.
//   - The shrunk run's trace (JSON lines, spec/trace-format.md) is written to
//     the file named by TURNSTILE_EXPLORE_TRACE_DIR (a directory; default
//     ::testing::TempDir()), <Suite>.<Name>.trace.jsonl, and its path printed.
//   - With TURNSTILE_EXPLORE_REPLAY=<token> set, the test runs exactly that
//     schedule instead of the search (explore() honours it, [EXP-4.3]) and says
//     so on stdout.
//   - A passing exploration prints one line: how many schedules, whether the
//     bounded search was complete, and the time.
// Thread safety: as explore(): one exploration at a time per process.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>

#include "turnstile/testing/explore.hpp"

namespace turnstile::testing {

// Runs explore(options, program) in the current test and reports it as above.
template <class F>
ExploreResult expect_explore_passes(const ExploreOptions& options, F&& program) {
  if (const char* t = std::getenv("TURNSTILE_EXPLORE_REPLAY"); t && *t && options.honour_replay_env)
    std::cout << "[ explore  ] replaying TURNSTILE_EXPLORE_REPLAY=" << t << "\n";
  ExploreResult r = explore(options, std::forward<F>(program));
  ::testing::Test::RecordProperty("explore_schedules", static_cast<int>(r.schedules));
  if (!r.failure) {
    std::cout << "[ explore  ] " << r.summary();
    return r;
  }
  // [EXP-5.1] the token, the shrunk schedule and the trace's path.
  ::testing::Test::RecordProperty("explore_token", r.failure->token());
  std::string where = "(no trace recorded)";
  if (!r.failure->trace.empty()) {
    const char* dir = std::getenv("TURNSTILE_EXPLORE_TRACE_DIR");
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string path = (dir && *dir) ? std::string(dir) + "/" : ::testing::TempDir();
    if (info != nullptr) path += std::string(info->test_suite_name()) + "." + info->name();
    path += ".trace.jsonl";
    std::ofstream(path) << r.failure->trace;
    where = path;
  }
  ADD_FAILURE() << r.summary() << "  trace: " << where;
  return r;
}

}  // namespace turnstile::testing

// A test Suite.Name whose body is expect_explore_passes(options, program); the
// program is the rest of the arguments (a lambda, commas allowed).
#define TURNSTILE_EXPLORE_TEST(Suite, Name, options, ...) \
  TEST(Suite, Name) { ::turnstile::testing::expect_explore_passes((options), __VA_ARGS__); }
