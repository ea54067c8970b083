// oracle/commands.hpp: the subcommands of turnstile-oracle. Each takes the
// arguments after its name and returns the process exit code (0 clean,
// 1 violations, 2 unusable input or usage error).
#pragma once

#include <span>
#include <string_view>

namespace turnstile::oracle {

using Args = std::span<const std::string_view>;

int cmd_check(Args args);      // check TRACE... [--json] [--known-failures F] [--scenario F]
int cmd_explain(Args args);    // explain ID
int cmd_scenarios(Args args);  // scenarios --seed S --count N [--contract C[,C...]]
int cmd_run(Args args);        // run SCENARIO [--schedule-seed S] [--threads N] [-o FILE]
int cmd_serve(Args args);      // serve (stdin/stdout JSON Lines, spec/trace-format.md s3)

}  // namespace turnstile::oracle
