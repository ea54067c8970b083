// peer_trace.hpp: what the C++ peers of checks/conformance/peers share: a
// format-1 trace (spec/trace-format.md section 1) written from several
// threads, and the built turnstile-oracle's verdict on it (`check --json`).
//
// PeerTrace assigns `seq` under one lock, so the file's order is the order the
// emitting threads took the lock; a peer emits each event inside the critical
// section that makes the change it reports ([TRACE-1.1]) or, where the library
// makes the change, before handing it the work (the event then precedes
// everything the work causes). Thread safety: every member may be called from
// any thread. Needs TURNSTILE_ORACLE_EXE (the oracle's path) defined.
// TURNSTILE_PEER_ECHO=1 in the environment echoes each event to stderr as it is emitted.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnstile_peers {

using nlohmann::json;

class PeerTrace {
 public:
  PeerTrace(const std::string& impl, const std::string& scenario) {
    lines_.push_back(json{{"seq", 1}, {"ev", "trace"}, {"format", 1}, {"impl", impl},
                          {"scenario", scenario}}.dump());
  }
  std::mutex& mu() { return mu_; }
  // Caller holds mu().
  void emit_locked(const std::string& fiber, const std::string& ev, json fields) {
    if (finished_) return;  // a late event (after finish) is not part of the trace
    fields["seq"] = lines_.size() + 1;
    fields["ev"] = ev;
    fields["fiber"] = fiber;
    lines_.push_back(fields.dump());
    if (std::getenv("TURNSTILE_PEER_ECHO") != nullptr) std::fprintf(stderr, "%s\n", lines_.back().c_str());
  }
  void emit(const std::string& fiber, const std::string& ev, json fields) {
    std::lock_guard lock(mu_);
    emit_locked(fiber, ev, std::move(fields));
  }
  // Writes the trace, with its end marker, to `file`; returns the path.
  std::string finish(const std::filesystem::path& file, const std::string& status = "quiescent") {
    std::lock_guard lock(mu_);
    lines_.push_back(json{{"seq", lines_.size() + 1}, {"ev", "end"}, {"status", status}}.dump());
    finished_ = true;
    std::ofstream out(file, std::ios::binary);
    for (const auto& l : lines_) out << l << "\n";
    return file.string();
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  bool finished_ = false;
};

struct Verdict {
  int exit = -1;
  std::vector<json> violations;

  std::set<std::string> rules() const {
    std::set<std::string> r;
    for (const auto& v : violations) r.insert(v.value("rule", "?"));
    return r;
  }
  // Whether violation `v` is a root: the consequence of no other.
  static bool is_root(const json& v) { return !v.contains("consequence_of") || v["consequence_of"].is_null(); }
  // Rules with a violation that is no other's consequence.
  std::set<std::string> roots() const {
    std::set<std::string> r;
    for (const auto& v : violations)
      if (is_root(v)) r.insert(v.value("rule", "?"));
    return r;
  }
  // The violations of `rule`.
  std::vector<json> of(const std::string& rule) const {
    std::vector<json> out;
    for (const auto& v : violations)
      if (v.value("rule", "") == rule) out.push_back(v);
    return out;
  }
  std::string dump() const { return json(violations).dump(2); }
};

// With TURNSTILE_PEER_RESULTS_DIR defined (CMake sets it to the build's
// peers/results), each checked trace is kept there with its verdict
// (NAME.trace.jsonl, NAME.verdict.json) for make_matrix.mjs.
inline void keep_result(const std::string& trace_file, const Verdict& v) {
#ifdef TURNSTILE_PEER_RESULTS_DIR
  namespace fs = std::filesystem;
  std::string name = fs::path(trace_file).filename().string();
  name = name.substr(name.find('_') + 1);             // drop temp_trace's pid prefix
  name = name.substr(0, name.rfind(".jsonl"));
  const fs::path dir(TURNSTILE_PEER_RESULTS_DIR);
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::copy_file(trace_file, dir / (name + ".trace.jsonl"), fs::copy_options::overwrite_existing, ec);
  std::ofstream(dir / (name + ".verdict.json"))
      << json{{"trace", name + ".trace.jsonl"}, {"exit", v.exit}, {"violations", v.violations}}.dump(1) << "\n";
#else
  (void)trace_file;
  (void)v;
#endif
}

inline Verdict oracle_check(const std::string& trace_file) {
  const std::string cmd = std::string("'") + TURNSTILE_ORACLE_EXE + "' check --json '" + trace_file + "'";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = p != nullptr ? pclose(p) : -1;
  Verdict v;
  v.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const json doc = json::parse(out, nullptr, false);
  if (doc.is_object() && doc.contains("traces"))
    for (const auto& t : doc["traces"])
      for (const auto& x : t.value("violations", json::array())) v.violations.push_back(x);
  keep_result(trace_file, v);
  return v;
}

inline std::filesystem::path temp_trace(const std::string& name) {
  return std::filesystem::path(::testing::TempDir()) / (std::to_string(getpid()) + "_" + name);
}

}  // namespace turnstile_peers
