// oracle/cmd_check.cpp: `check` and `explain` (spec/trace-format.md section 4).
//
// check: every input is checked even when an earlier one is unusable; exit 2
// if any input (or the command line) is unusable, else 1 if any trace has a
// violation that is not a known failure, else 0 ([TRACE-4.1], [TRACE-4.2]).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "oracle/check/rules.hpp"
#include "oracle/check/trace_checker.hpp"
#include "oracle/commands.hpp"
#include "oracle/pipeline.hpp"
#include "oracle/scenario/scenario.hpp"
#include "oracle/trace/reader.hpp"

namespace turnstile::oracle {

namespace {

constexpr const char* kCheckUsage =
    "usage: turnstile-oracle check TRACE... [--json] [--known-failures FILE] [--scenario FILE]\n"
    "  TRACE '-' reads stdin; exit 0 clean, 1 violations, 2 unusable input\n";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Known-failures file: one rule ID per line, `#` comments, blank lines ignored.
std::variant<std::set<std::string>, InputError> read_known_failures(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InputError{path, 0, "", "cannot open the known-failures file"};
  std::set<std::string> ids;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    line = trim(line);
    if (line.empty()) continue;
    const RuleText* rule = find_rule(line);
    if (rule == nullptr) return InputError{path, number, "", "unknown rule ID '" + line + "'"};
    ids.insert(std::string(rule->id));
  }
  return ids;
}

std::variant<Scenario, InputError> read_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InputError{path, 0, "", "cannot open the scenario file"};
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) return InputError{path, 0, "", "the scenario is not valid JSON"};
  return parse_scenario(doc, path);
}

struct Outcome {
  std::string source;
  std::optional<InputError> error;
  std::vector<Violation> violations;
  std::size_t new_failures = 0, known_failures = 0;
};

const char* verdict(const Outcome& o) {
  if (o.error) return "unusable";
  return o.new_failures > 0 ? "fail" : "pass";
}

nlohmann::json error_json(const InputError& e) {
  return {{"source", e.source}, {"line", e.line}, {"field", e.field}, {"message", e.message}};
}

}  // namespace

int cmd_check(Args args) {
  std::vector<std::string> inputs;
  bool json = false;
  std::optional<std::string> known_path, scenario_path;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--known-failures" || a == "--scenario") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "check: %.*s needs a FILE\n%s", static_cast<int>(a.size()), a.data(), kCheckUsage);
        return 2;
      }
      (a == "--scenario" ? scenario_path : known_path) = std::string(args[++i]);
    } else if (a.size() > 1 && a.front() == '-') {
      std::fprintf(stderr, "check: unknown option '%.*s'\n%s", static_cast<int>(a.size()), a.data(), kCheckUsage);
      return 2;
    } else {
      inputs.emplace_back(a);
    }
  }
  if (inputs.empty()) {
    std::fputs(kCheckUsage, stderr);
    return 2;
  }

  std::vector<InputError> setup_errors;
  std::set<std::string> known;
  if (known_path) {
    auto k = read_known_failures(*known_path);
    if (auto* e = std::get_if<InputError>(&k)) setup_errors.push_back(*e);
    else known = std::get<std::set<std::string>>(std::move(k));
  }
  std::optional<Scenario> scenario;
  if (scenario_path) {
    auto s = read_scenario(*scenario_path);
    if (auto* e = std::get_if<InputError>(&s)) setup_errors.push_back(*e);
    else scenario = std::get<Scenario>(std::move(s));
  }

  std::vector<Outcome> outcomes;
  for (const auto& input : inputs) {
    Outcome o;
    StreamResult checked;  // one pass over the input ([TRACE-4.1] errors as parse_trace's)
    const Scenario* s = scenario ? &*scenario : nullptr;
    if (input == "-") {
      o.source = "<stdin>";
      checked = check_stream(std::cin, o.source, s);
    } else {
      o.source = input;
      std::ifstream file(input, std::ios::binary);
      if (!file) checked.error = InputError{input, 0, "", "cannot open the file"};
      else checked = check_stream(file, input, s);
    }
    if (checked.error) {
      o.error = std::move(checked.error);  // unusable, or checked against another scenario
    } else {
      o.violations = std::move(checked.violations);
      std::tie(o.new_failures, o.known_failures) = mark_known(o.violations, known);
    }
    outcomes.push_back(std::move(o));
  }

  bool unusable = !setup_errors.empty();
  bool failed = false;
  for (const auto& o : outcomes) {
    unusable = unusable || o.error.has_value();
    failed = failed || o.new_failures > 0;
  }
  const int exit_code = unusable ? 2 : failed ? 1 : 0;

  if (json) {
    nlohmann::json traces = nlohmann::json::array();
    for (const auto& o : outcomes) {
      nlohmann::json vs = nlohmann::json::array();
      for (const auto& v : o.violations) vs.push_back(to_json(v));
      traces.push_back({{"source", o.source}, {"verdict", verdict(o)}, {"violations", vs},
                        {"new_failures", o.new_failures}, {"known_failures", o.known_failures},
                        {"error", o.error ? error_json(*o.error) : nlohmann::json(nullptr)}});
    }
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& e : setup_errors) errors.push_back(error_json(e));
    const nlohmann::json out = {
        {"trace_format", kTraceFormat}, {"exit", exit_code},
        {"verdict", unusable ? "unusable" : failed ? "fail" : "pass"},
        {"errors", errors}, {"traces", traces}};
    std::cout << out.dump() << '\n';
    return exit_code;
  }

  for (const auto& e : setup_errors) std::cerr << e.to_string() << '\n';
  for (const auto& o : outcomes) {
    if (o.error) {  // [TRACE-4.1] FILE:LINE: field 'F': what is wrong
      std::cerr << o.error->to_string() << '\n';
      std::cout << o.source << ": unusable\n";
      continue;
    }
    for (const auto& v : o.violations) {  // [TRACE-4.2] rule, lines, one sentence
      // "FILE:LINES: [RULE] ..." or, with no lines, "FILE: [RULE] ..."
      if (!v.known) std::cout << o.source << (v.lines.empty() ? ": " : ":") << to_string(v) << '\n';
    }
    for (const auto& v : o.violations) {
      if (v.known) std::cout << o.source << ": known failure: " << to_string(v) << '\n';
    }
    std::cout << o.source << ": " << verdict(o);
    if (!o.violations.empty()) {
      std::cout << " (" << o.new_failures << " new, " << o.known_failures << " known violations)";
    }
    std::cout << '\n';
  }
  return exit_code;
}

int cmd_explain(Args args) {
  if (args.size() != 1) {
    std::fputs("usage: turnstile-oracle explain ID   (e.g. LANE-5.2)\n", stderr);
    return 2;
  }
  const RuleText* rule = find_rule(args[0]);
  if (rule == nullptr) {
    std::fprintf(stderr, "explain: unknown rule '%.*s' (IDs look like LANE-5.2, FL-3.1, TURN-7.1)\n",
                 static_cast<int>(args[0].size()), args[0].data());
    return 2;
  }
  std::cout << '[' << rule->id << "] " << rule->title << "  (" << rule->file << ")\n"
            << rule->text << '\n';
  return 0;
}

}  // namespace turnstile::oracle
