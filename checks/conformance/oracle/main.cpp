// turnstile-oracle: checks runtime traces against turnstile's spec
// (spec/trace-format.md). Dispatches to the subcommands of oracle/commands.hpp.
#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include "oracle/commands.hpp"

namespace {

constexpr const char* kUsage =
    "usage: turnstile-oracle COMMAND [ARGS]\n"
    "  check TRACE... [--json] [--known-failures FILE] [--scenario FILE]\n"
    "                      check traces against the spec; exit 0 clean, 1 violations,\n"
    "                      2 unusable input\n"
    "  scenarios --seed S --count N [--contract C[,C...]]\n"
    "                      print portable scenarios, one JSON object per line;\n"
    "                      C: lane, fiber-local, turns (default all three; several\n"
    "                      cross contracts, e.g. --contract lane,fiber-local)\n"
    "  run SCENARIO [--schedule-seed S] [--threads N] [-o FILE]\n"
    "                      execute a scenario on the reference core, write its trace\n"
    "  serve               JSON Lines protocol on stdin/stdout for port test runners\n"
    "  explain ID          print a rule of the spec\n"
    "formats: spec/trace-format.md\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string_view command = args[0];
  const turnstile::oracle::Args rest(args.data() + 1, args.size() - 1);
  try {
    if (command == "check") return turnstile::oracle::cmd_check(rest);
    if (command == "explain") return turnstile::oracle::cmd_explain(rest);
    if (command == "scenarios") return turnstile::oracle::cmd_scenarios(rest);
    if (command == "run") return turnstile::oracle::cmd_run(rest);
    if (command == "serve") return turnstile::oracle::cmd_serve(rest);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "turnstile-oracle %.*s: internal error: %s\n",
                 static_cast<int>(command.size()), command.data(), e.what());
    return 2;
  }
  std::fprintf(stderr, "turnstile-oracle: unknown command '%.*s'\n%s",
               static_cast<int>(command.size()), command.data(), kUsage);
  return 2;
}
