// TEMPORARY stub (owner: checker helper). Replaced before landing.
#include <cstdio>
#include "oracle/check.hpp"
#include "oracle/commands.hpp"
#include "oracle/rules.hpp"
#include "oracle/trace.hpp"
namespace turnstile::oracle {
ParseResult parse_trace(std::istream&, std::string source) { return InputError{source, 0, "", "not implemented"}; }
ParseResult parse_trace_text(std::string_view, std::string source) { return InputError{source, 0, "", "not implemented"}; }
const std::string& Event::str(const char*) const { static const std::string e; return e; }
bool Event::flag(const char*) const { return false; }
std::string InputError::to_string() const { return source + ": " + message; }
std::vector<Violation> check_trace(const Trace&) { return {}; }
std::string to_string(const Violation& v) { return v.rule; }
nlohmann::json to_json(const Violation& v) { return {{"rule", v.rule}}; }
std::span<const RuleText> all_rules() { return {}; }
const RuleText* find_rule(std::string_view) { return nullptr; }
int cmd_check(Args) { std::fputs("check: not implemented\n", stderr); return 2; }
int cmd_explain(Args) { std::fputs("explain: not implemented\n", stderr); return 2; }
}  // namespace turnstile::oracle
