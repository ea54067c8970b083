// model/model_main.hpp: the command line shared by every model binary.
//
//   <model> [--suite NAME] [--search full|bound|random] [--context-bound K]
//           [--iterations N] [--save FILE] [--replay FILE] [--expect-failure[=KINDS]]
//           [--progress] [--verbose] [--list]
//
// Each suite has a list of default searches (chosen so the default ctest run is
// quick); --search/--context-bound/--iterations replace them with one search for
// every suite (--context-bound alone implies bound, --iterations alone random).
// Suites run in order; the first failure stops the run, its Relacy state is saved
// (default `<binary>.failure-state`, or --save FILE) and the replay command is
// printed. --replay FILE re-runs exactly that failing execution (same suite,
// search and bounds, starting at the saved iteration/schedule) and prints its
// history. Exit status: 0 all suites passed; 1 a failure was found; 2 bad usage.
// With --expect-failure the sense is inverted (used by the mutant tests): 0 iff a
// failure was found (and, with =KINDS, its kind is one of the comma-separated
// kinds, e.g. data-race,memory-leak), 1 otherwise.
//
// Include after relacy_sync.hpp (needs <relacy/relacy.hpp>).
#pragma once

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace turnstile::model {

struct Search {
  rl::scheduler_type_e type = rl::sched_bound;
  unsigned context_bound = 2;           // used by the context-bound search only
  unsigned long long iterations = 1000;  // used by the random search only
};

inline Search full_search() { return Search{rl::sched_full, 0, 0}; }
inline Search bounded(unsigned k) { return Search{rl::sched_bound, k, 0}; }
inline Search random_search(unsigned long long n) { return Search{rl::sched_random, 0, n}; }

struct SuiteSpec {
  const char* name;    // CLI name, e.g. "set-vs-wait"
  const char* checks;  // one line: what a pass means
  std::vector<Search> defaults;  // run in order when no search is given on the command line
  bool (*run)(rl::test_params&);  // rl::simulate<Suite>; null: not built (kBuiltSuite)
};

template <class Suite>
bool run_suite(rl::test_params& p) {
  return rl::simulate<Suite>(p);
}

// A model binary built for one suite (-DTURNSTILE_MODEL_ONLY_SUITE="<name>": a mutant
// whose ctest runs that suite only, model/CMakeLists.txt) instantiates that suite's
// Relacy search alone. rl::simulate<Suite> is most of a model's compile, so such a
// binary builds in a fraction of the time; its other suites are listed but not
// built, and naming one with --suite is an error.
#ifdef TURNSTILE_MODEL_ONLY_SUITE
inline constexpr std::string_view kBuiltSuite = TURNSTILE_MODEL_ONLY_SUITE;
#else
inline constexpr std::string_view kBuiltSuite{};
#endif

// A suite's CLI name as a template argument, so whether it is built is decided at
// compile time.
template <std::size_t N>
struct SuiteName {
  char text[N]{};
  constexpr SuiteName(const char (&s)[N]) {  // NOLINT(google-explicit-constructor): a literal
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }
  constexpr std::string_view view() const { return {text, N - 1}; }
};

// The SuiteSpec of the rl::test_suite `Suite` named `Name` on the command line, whose
// `static constexpr const char* kChecks` says what a pass means (one line, printed
// with every run): suite<Submitters, "submitters">({default searches}). Its search is
// instantiated only when this binary builds every suite or this one (kBuiltSuite).
template <class Suite, SuiteName Name>
SuiteSpec suite(std::vector<Search> defaults) {
  if constexpr (kBuiltSuite.empty() || Name.view() == kBuiltSuite) {
    return SuiteSpec{Name.text, Suite::kChecks, std::move(defaults), &run_suite<Suite>};
  } else {
    return SuiteSpec{Name.text, Suite::kChecks, std::move(defaults), nullptr};
  }
}

namespace cli {

inline const char* search_name(rl::scheduler_type_e t) {
  switch (t) {
    case rl::sched_full: return "full";
    case rl::sched_bound: return "bound";
    case rl::sched_random: return "random";
    default: return "?";
  }
}

inline bool parse_search(const std::string& s, rl::scheduler_type_e& out) {
  if (s == "full") out = rl::sched_full;
  else if (s == "bound") out = rl::sched_bound;
  else if (s == "random") out = rl::sched_random;
  else return false;
  return true;
}

// What the search covers, worded so a bounded or sampled search is never called
// exhaustive.
inline std::string describe(const Search& s) {
  std::ostringstream o;
  switch (s.type) {
    case rl::sched_full:
      o << "full search: every interleaving of the scheduling points (stale atomic "
           "reads explored one store back; see model/README.md)";
      break;
    case rl::sched_bound:
      o << "context-bound search, bound " << s.context_bound
        << ": every interleaving with at most " << s.context_bound
        << " preemptive context switch(es) -- bounded, not exhaustive";
      break;
    case rl::sched_random:
      o << "random search, " << s.iterations
        << " iterations (seeded by iteration number, reproducible) -- sampled, not exhaustive";
      break;
    default: o << "?"; break;
  }
  return o.str();
}

// "DATA RACE" -> "data-race"
inline std::string kind_of(rl::test_result_e r) {
  std::string k = rl::test_result_str(r);
  for (char& c : k) c = (c == ' ') ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

inline bool kind_listed(const std::string& kinds, const std::string& k) {
  std::stringstream ss(kinds);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item == k) return true;
  return false;
}

// Collects Relacy's report. Relacy writes it from inside the simulation, where
// the global operator new is Relacy's, so the buffer uses the C allocator
// directly (the parenthesised names escape Relacy's malloc/realloc/free macros).
class CaptureBuf : public std::streambuf {
 public:
  CaptureBuf() = default;
  ~CaptureBuf() override { (::free)(data_); }
  void dump(std::ostream& out) const {
    if (size_ != 0) out.write(data_, static_cast<std::streamsize>(size_));
  }

 protected:
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) put(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) put(s[i]);
    return n;
  }

 private:
  void put(char c) {
    if (size_ == cap_) {
      const std::size_t cap = cap_ == 0 ? 4096 : cap_ * 2;
      auto* grown = static_cast<char*>((::realloc)(data_, cap));
      if (grown == nullptr) return;  // out of memory: drop the report, keep the verdict
      data_ = grown;
      cap_ = cap;
    }
    data_[size_++] = c;
  }
  char* data_ = nullptr;
  std::size_t size_ = 0, cap_ = 0;
};

struct Options {
  std::string only_suite;
  bool search_set = false, bound_set = false, iterations_set = false;
  Search override_;
  std::string save;
  std::string replay;
  bool expect_failure = false;
  std::string expect_kinds;  // empty: any failure
  bool list = false;
  bool progress = false;
  bool verbose = false;
};

inline void usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " [--suite NAME] [--search full|bound|random] [--context-bound K]\n"
               "         [--iterations N] [--save FILE] [--replay FILE]\n"
               "         [--expect-failure[=KIND,...]] [--progress] [--verbose] [--list]\n";
}

inline bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    try {
      if (a == "--suite") {
        if (!value(o.only_suite)) return false;
      } else if (a == "--search") {
        if (!value(v) || !parse_search(v, o.override_.type)) return false;
        o.search_set = true;
      } else if (a == "--context-bound") {
        if (!value(v)) return false;
        o.override_.context_bound = static_cast<unsigned>(std::stoul(v));
        o.bound_set = true;
      } else if (a == "--iterations") {
        if (!value(v)) return false;
        o.override_.iterations = std::stoull(v);
        o.iterations_set = true;
      } else if (a == "--save") {
        if (!value(o.save)) return false;
      } else if (a == "--replay") {
        if (!value(o.replay)) return false;
      } else if (a == "--expect-failure") {
        o.expect_failure = true;
      } else if (a.rfind("--expect-failure=", 0) == 0) {
        o.expect_failure = true;
        o.expect_kinds = a.substr(std::strlen("--expect-failure="));
      } else if (a == "--verbose") {
        o.verbose = true;
      } else if (a == "--progress") {
        o.progress = true;
      } else if (a == "--list") {
        o.list = true;
      } else {
        return false;
      }
    } catch (const std::exception&) {
      return false;
    }
  }
  return true;
}

// The one search to run when the command line names any of --search,
// --context-bound, --iterations. --context-bound alone implies the bounded
// search and --iterations alone the random one; unspecified numbers come from the
// suite's default of that kind (else bound 2, 100000 iterations).
inline Search overridden(const Options& o, const SuiteSpec& spec) {
  Search s;
  s.type = o.search_set ? o.override_.type
           : o.bound_set ? rl::sched_bound
           : rl::sched_random;
  s.context_bound = 2;
  s.iterations = 100000;
  for (const auto& d : spec.defaults) {
    if (d.type != s.type) continue;
    s.context_bound = d.context_bound;
    s.iterations = d.iterations;
    break;
  }
  if (o.bound_set) s.context_bound = o.override_.context_bound;
  if (o.iterations_set) s.iterations = o.override_.iterations;
  return s;
}

struct SavedState {
  std::string model, suite, state;
  Search search;
};

inline bool write_state(const std::string& path, const SavedState& s) {
  std::ofstream f(path);
  if (!f) return false;
  f << "# turnstile Relacy failure state; replay with: <model binary> --replay " << path << "\n"
    << "model=" << s.model << "\n"
    << "suite=" << s.suite << "\n"
    << "search=" << search_name(s.search.type) << "\n"
    << "context_bound=" << s.search.context_bound << "\n"
    << "iterations=" << s.search.iterations << "\n"
    << "state=" << s.state << "\n";
  return static_cast<bool>(f);
}

inline bool read_state(const std::string& path, SavedState& s) {
  std::ifstream f(path);
  if (!f) return false;
  std::string line;
  bool have_state = false;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) return false;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    try {
      if (k == "model") s.model = v;
      else if (k == "suite") s.suite = v;
      else if (k == "search") { if (!parse_search(v, s.search.type)) return false; }
      else if (k == "context_bound") s.search.context_bound = static_cast<unsigned>(std::stoul(v));
      else if (k == "iterations") s.search.iterations = std::stoull(v);
      else if (k == "state") { s.state = v; have_state = true; }
    } catch (const std::exception&) {
      return false;
    }
  }
  return have_state && !s.suite.empty();
}

}  // namespace cli

// Runs the model's suites according to the command line; returns the exit status.
inline int model_main(int argc, char** argv, const char* model, const std::vector<SuiteSpec>& suites) {
  cli::Options o;
  if (!cli::parse(argc, argv, o)) {
    cli::usage(argv[0]);
    return 2;
  }
  bool built_any = false;
  for (const auto& s : suites) built_any = built_any || s.run != nullptr;
  if (!built_any) {
    std::cerr << model << ": built for suite '" << kBuiltSuite
              << "' (TURNSTILE_MODEL_ONLY_SUITE), which this model does not have\n";
    return 2;
  }
  if (o.list) {
    for (const auto& s : suites) {
      std::cout << s.name << (s.run ? "" : "  (not built into this binary)") << "\n    checks: " << s.checks
                << "\n";
      for (const auto& d : s.defaults) std::cout << "    default: " << cli::describe(d) << "\n";
    }
    return 0;
  }

  cli::SavedState replay;
  if (!o.replay.empty()) {
    if (!cli::read_state(o.replay, replay)) {
      std::cerr << model << ": cannot read failure state from " << o.replay << "\n";
      return 2;
    }
    if (replay.model != model) {
      std::cerr << model << ": " << o.replay << " was saved by model '" << replay.model << "'\n";
      return 2;
    }
    o.only_suite = replay.suite;
  }

  const std::string save_path = o.save.empty() ? std::string(argv[0]) + ".failure-state" : o.save;
  bool ran_any = false;
  bool failed = false;
  rl::test_result_e failure_kind = rl::test_result_success;

  const auto run_start = std::chrono::steady_clock::now();
  int runs = 0;
  for (const auto& spec : suites) {
    if (failed) break;  // first failure ends the run
    if (!o.only_suite.empty() && o.only_suite != spec.name) continue;
    if (spec.run == nullptr) {
      if (!o.only_suite.empty()) {
        std::cerr << model << ": suite '" << spec.name << "' is not built into this binary (built for '"
                  << kBuiltSuite << "' only)\n";
        return 2;
      }
      std::cout << "== " << model << " / " << spec.name << ": not built into this binary (built for '"
                << kBuiltSuite << "' only)\n";
      continue;
    }
    ran_any = true;

    std::vector<Search> searches;
    if (!o.replay.empty()) {
      searches.push_back(replay.search);
    } else if (o.search_set || o.bound_set || o.iterations_set) {
      searches.push_back(cli::overridden(o, spec));
    } else {
      searches = spec.defaults;
    }

    for (const Search& s : searches) {
      ++runs;
      rl::test_params p;
      std::ostream progress_sink(nullptr);  // discards Relacy's percentage lines unless --progress
      if (!o.progress) p.progress_stream = &progress_sink;
      p.search_type = s.type;
      p.context_bound = s.context_bound;
      p.iteration_count = s.iterations;
      if (!o.replay.empty()) p.initial_state.assign(replay.state.begin(), replay.state.end());

      std::cout << "== " << model << " / " << spec.name << (o.replay.empty() ? "" : " (replay)") << "\n"
                << "   checks: " << spec.checks << "\n"
                << "   search: " << cli::describe(s) << "\n"
                << std::flush;
      // Relacy's own report (test name, totals; on failure the execution history)
      // is printed only when the suite fails, or always with --verbose.
      cli::CaptureBuf relacy_buf;
      std::ostream relacy_out(&relacy_buf);
      if (!o.verbose) p.output_stream = &relacy_out;
      const auto t0 = std::chrono::steady_clock::now();
      const bool ok = spec.run(p);
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();

      if (ok) {
        std::cout << "   result: passed, " << p.stop_iteration << " executions explored in " << ms
                  << " ms\n";
        continue;
      }
      failed = true;
      failure_kind = p.test_result;
      if (!o.verbose) relacy_buf.dump(std::cout);
      std::cout << "   result: FAILED (" << rl::test_result_str(p.test_result) << ", kind "
                << cli::kind_of(p.test_result) << ") at iteration " << p.stop_iteration << " after " << ms
                << " ms\n";
      if (o.replay.empty()) {
        cli::SavedState st{model, spec.name, std::string(p.final_state.begin(), p.final_state.end()), s};
        if (cli::write_state(save_path, st))
          std::cout << "   failure state saved; replay with:\n     " << argv[0] << " --replay "
                    << save_path << "\n";
        else
          std::cout << "   (could not write the failure state to " << save_path << ")\n";
      }
      break;
    }
  }
  const auto total_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - run_start)
                            .count();
  if (ran_any && !failed)
    std::cout << model << ": " << runs << " search(es) passed in " << total_ms << " ms\n";

  if (!ran_any) {
    std::cerr << model << ": no suite named '" << o.only_suite << "' (see --list)\n";
    return 2;
  }
  if (o.expect_failure) {
    if (!failed) {
      std::cout << model << ": expected a failure, but every suite passed: the planted bug was NOT caught\n";
      return 1;
    }
    if (!o.expect_kinds.empty() && !cli::kind_listed(o.expect_kinds, cli::kind_of(failure_kind))) {
      std::cout << model << ": a failure was found, but of kind " << cli::kind_of(failure_kind)
                << ", not one of " << o.expect_kinds << "\n";
      return 1;
    }
    std::cout << model << ": failure found, as expected (the planted bug is caught)\n";
    return 0;
  }
  return failed ? 1 : 0;
}

}  // namespace turnstile::model

// Defines main() for a model: TURNSTILE_MODEL_MAIN("lane", {suite<Submitters,
// "submitters">({default searches}), ...}) runs model_main over those suites. The
// names of turnstile::model (suite, bounded, random_search, ...) are in scope inside
// the list.
#define TURNSTILE_MODEL_MAIN(model_name, ...)               \
  int main(int argc, char** argv) {                        \
    using namespace ::turnstile::model;                    \
    return model_main(argc, argv, model_name, __VA_ARGS__); \
  }
