// oracle/cmd_scenarios.cpp: the `scenarios` and `run` subcommands
// (spec/trace-format.md section 2).
#include <charconv>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "oracle/commands.hpp"
#include "oracle/run/runner.hpp"
#include "oracle/scenario/scenario.hpp"

namespace turnstile::oracle {

namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

int usage(const char* what) {
  std::fprintf(stderr, "turnstile-oracle: %s\n", what);
  return 2;
}

// Splits "a,b" into its parts.
void add_contracts(std::string_view s, std::vector<std::string>& out) {
  while (!s.empty()) {
    const auto comma = s.find(',');
    out.emplace_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
}

bool valid_contract(const std::string& c) { return c == "lane" || c == "fiber-local" || c == "turns"; }

}  // namespace

int cmd_scenarios(Args args) {
  std::uint64_t seed = 0, count = 0;
  bool have_seed = false, have_count = false;
  std::vector<std::string> contracts;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    if (args[i] == "--seed" && has_value) {
      if (!parse_u64(args[++i], seed)) return usage("scenarios: --seed takes a non-negative integer");
      have_seed = true;
    } else if (args[i] == "--count" && has_value) {
      if (!parse_u64(args[++i], count)) return usage("scenarios: --count takes a non-negative integer");
      have_count = true;
    } else if (args[i] == "--contract" && has_value) {
      add_contracts(args[++i], contracts);
    } else {
      return usage("usage: scenarios --seed S --count N [--contract C[,C...]] (C: lane, fiber-local, turns)");
    }
  }
  if (!have_seed || !have_count) return usage("scenarios: --seed and --count are required");
  for (const auto& c : contracts)
    if (!valid_contract(c)) return usage(("scenarios: unknown contract '" + c + "'").c_str());
  for (const auto& s : generate_scenarios(seed, count, contracts)) std::cout << s.dump() << '\n';
  std::cout.flush();
  return 0;
}

int cmd_run(Args args) {
  std::string file, out_file;
  RunOptions options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    std::uint64_t v = 0;
    if (args[i] == "--schedule-seed" && has_value) {
      if (!parse_u64(args[++i], v)) return usage("run: --schedule-seed takes a non-negative integer");
      options.schedule_seed = v;
    } else if (args[i] == "--threads" && has_value) {
      if (!parse_u64(args[++i], v) || v > 64) return usage("run: --threads takes 0..64");
      options.threads = static_cast<std::size_t>(v);
    } else if (args[i] == "-o" && has_value) {
      out_file = std::string(args[++i]);
    } else if (file.empty() && (args[i] == "-" || !args[i].starts_with("-"))) {
      file = std::string(args[i]);
    } else {
      return usage("usage: run SCENARIO|- [--schedule-seed S] [--threads N] [-o FILE]");
    }
  }
  if (file.empty()) return usage("run: a scenario file (or - for stdin) is required");
  std::stringstream text;
  if (file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) return usage(("run: cannot read '" + file + "'").c_str());
    text << in.rdbuf();
  }
  // One scenario object; a `scenarios` listing (JSON Lines) runs its first line.
  std::string content = text.str();
  nlohmann::json doc = nlohmann::json::parse(content, nullptr, false);
  if (doc.is_discarded()) {
    std::string first;
    std::getline(std::istringstream(content) >> std::ws, first);
    doc = nlohmann::json::parse(first, nullptr, false);
  }
  if (doc.is_discarded()) {
    std::fprintf(stderr, "%s:1: the scenario is not valid JSON\n", file.c_str());
    return 2;
  }
  auto parsed = parse_scenario(doc, file == "-" ? "<stdin>" : file);
  if (auto* e = std::get_if<InputError>(&parsed)) {
    std::fprintf(stderr, "%s\n", e->to_string().c_str());
    return 2;
  }
  const std::string trace = run_scenario(std::get<Scenario>(parsed), options);
  if (out_file.empty()) {
    std::cout << trace;
    std::cout.flush();
  } else {
    std::ofstream out(out_file, std::ios::binary);
    out << trace;
    if (!out) return usage(("run: cannot write '" + out_file + "'").c_str());
  }
  return 0;
}

}  // namespace turnstile::oracle
