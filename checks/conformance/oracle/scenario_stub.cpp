// TEMPORARY stub (owner: scenario/runner helper). Replaced before landing.
#include <cstdio>
#include "oracle/commands.hpp"
#include "oracle/runner.hpp"
#include "oracle/scenario.hpp"
namespace turnstile::oracle {
std::variant<Scenario, InputError> parse_scenario(const nlohmann::json&, std::string source) { return InputError{source, 0, "", "not implemented"}; }
std::vector<nlohmann::json> generate_scenarios(std::uint64_t, std::size_t, const std::vector<std::string>&) { return {}; }
std::vector<Violation> check_expectations(const Scenario&, const Trace&) { return {}; }
std::string run_scenario(const Scenario&, const RunOptions&) { return {}; }
int cmd_scenarios(Args) { std::fputs("scenarios: not implemented\n", stderr); return 2; }
int cmd_run(Args) { std::fputs("run: not implemented\n", stderr); return 2; }
int cmd_serve(Args) { std::fputs("serve: not implemented\n", stderr); return 2; }
}  // namespace turnstile::oracle
