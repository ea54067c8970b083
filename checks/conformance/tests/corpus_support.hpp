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

}  // namespace turnstile::oracle::testing
