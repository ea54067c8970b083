// tests/corpus_support.hpp: reading the trace corpus (checks/conformance/corpus).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "oracle/check/trace_checker.hpp"
#include "oracle/pipeline.hpp"
#include "oracle/scenario/scenario.hpp"
#include "oracle/trace/reader.hpp"

namespace turnstile::oracle::testing {

inline std::filesystem::path corpus_dir() { return TURNSTILE_CORPUS_DIR; }

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The corpus files of `kind` ("good" or "bad") whose name starts with `prefix`, sorted.
inline std::vector<std::filesystem::path> corpus_files(const std::string& kind,
                                                       const std::string& prefix = "") {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(corpus_dir() / kind)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".jsonl" && name.rfind(prefix, 0) == 0) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Parses a corpus file, failing the test when it is unusable.
inline Trace parse_corpus_file(const std::filesystem::path& path) {
  auto parsed = parse_trace_text(read_file(path), path.filename().string());
  if (auto* e = std::get_if<InputError>(&parsed)) {
    ADD_FAILURE() << "corpus file is unusable: " << e->to_string();
    return Trace{};
  }
  return std::get<Trace>(std::move(parsed));
}

inline std::string describe(const std::vector<Violation>& violations) {
  std::string out;
  for (const auto& v : violations) out += "\n  " + to_string(v);
  return out.empty() ? " (none)" : out;
}

// The violations of a corpus trace, with its scenario's `expect`s when a
// <name>.scenario.json sits beside it.
inline std::vector<Violation> check_corpus_file(const std::filesystem::path& file, Trace* parsed = nullptr) {
  const Trace trace = parse_corpus_file(file);
  if (parsed != nullptr) *parsed = trace;
  auto sidecar = file;
  sidecar.replace_extension(".scenario.json");
  if (!std::filesystem::exists(sidecar)) return check_trace(trace);
  const auto doc = nlohmann::json::parse(read_file(sidecar), nullptr, false);
  auto scenario = parse_scenario(doc, sidecar.filename().string());
  if (auto* e = std::get_if<InputError>(&scenario)) {
    ADD_FAILURE() << "corpus scenario is unusable: " << e->to_string();
    return check_trace(trace);
  }
  return check_with_scenario(trace, &std::get<Scenario>(scenario));
}

// The violations of bad/<name>.jsonl (with its scenario, if any).
inline std::vector<Violation> bad_violations(const std::string& name) {
  return check_corpus_file(corpus_dir() / "bad" / (name + ".jsonl"));
}

}  // namespace turnstile::oracle::testing
