// impl/src/testing/explore.cpp: the strategies, their budgets and shards, the
// replay variable and the result (turnstile/testing/explore.hpp).
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "explore_run.hpp"

namespace turnstile::testing::detail {
namespace {

using WallClock = std::chrono::steady_clock;

struct Search {
  Search(const ExploreOptions& opts, const Program& p) : o(opts), program(p) {}
  const ExploreOptions& o;
  const Program& program;
  WallClock::time_point start = WallClock::now();
  ExploreResult r;

  // [EXP-3.4] the budgets: schedules counted, wall time.
  bool over_budget() {
    if ((o.max_schedules != 0 && r.schedules >= o.max_schedules) ||
        (o.max_time.count() != 0 && WallClock::now() - start >= o.max_time)) {
      r.budget_exhausted = true;
      return true;
    }
    return false;
  }

  // Counts a schedule of this search; true when it failed (the failure is filled).
  bool counted(const RunOutcome& out) {
    ++r.schedules;
    if (o.on_schedule) o.on_schedule(out.schedule);
    if (!out.kind) return false;
    r.failure.emplace();  // [EXP-4.1] the first failing schedule ends the search
    r.runs += complete_failure(o, program, out, *r.failure);
    return true;
  }

  RunOutcome run(Policy& p) {
    ++r.runs;
    return run_once(o, program, p);
  }

  // [EXP-3.1] depth-first over every schedule with at most max_deviations
  // deviations; [EXP-3.5] shards own the subtrees of their prefixes.
  void exhaustive() {
    const Shard sh = o.shard;
    if (sh.count == 0 || sh.index >= sh.count)
      throw std::invalid_argument("explore: shard index must be below the shard count [EXP-3.5]");
    std::vector<std::uint32_t> prefix;
    std::vector<std::uint32_t> last_key;
    std::size_t key_index = 0;
    bool first = true;
    for (;;) {
      if (over_budget()) return;
      PrefixPolicy policy(prefix, true);
      const RunOutcome out = run(policy);
      if (out.kind == FailureKind::nondeterminism) {  // the tree itself is not fixed
        counted(out);
        return;
      }
      const auto& c = out.schedule.choices;
      const auto& w = out.schedule.widths;
      const std::size_t depth = std::min(o.shard_depth, c.size());
      std::vector<std::uint32_t> key(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(depth));
      if (first || key != last_key) {  // a new prefix, in depth-first order
        key_index += first ? 0 : 1;
        first = false;
        last_key = std::move(key);
      }
      const bool owned = key_index % sh.count == sh.index;  // [EXP-3.5] round robin
      if (owned && counted(out)) return;
      // Backtrack: the deepest choice with a sibling left within the bound. A
      // prefix this shard does not own is left at its shard depth.
      const std::size_t limit = owned ? c.size() : depth;
      std::size_t devs = 0;
      for (std::size_t j = 0; j < limit; ++j) devs += c[j] != 0 ? 1 : 0;
      bool next = false;
      for (std::size_t j = limit; j-- > 0;) {
        devs -= c[j] != 0 ? 1 : 0;  // deviations before j
        // A sibling: the next index; from 0 it costs one deviation [EXP-1.1].
        if (c[j] + 1 < w[j] && (c[j] != 0 || devs + 1 <= o.max_deviations)) {
          prefix.assign(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(j));
          prefix.push_back(c[j] + 1);
          next = true;
          break;
        }
      }
      if (!next) {
        r.complete = true;
        return;
      }
    }
  }

  // [EXP-3.2] PCT; [EXP-3.3] random. Schedule i's seed is mixed from (seed, i).
  void sampled() {
    std::size_t steps = 0;  // PCT's k: the longest run seen so far
    for (std::uint64_t i = 0;; ++i) {
      if (over_budget()) return;
      const std::uint64_t seed = mix_seed(o.seed, i);
      RunOutcome out;
      if (o.strategy == Strategy::pct) {
        PctPolicy policy(seed, std::max(1u, o.pct_depth), steps);
        out = run(policy);
      } else {
        RandomPolicy policy(seed);
        out = run(policy);
      }
      steps = std::max(steps, out.steps);
      if (counted(out)) return;
      if (o.max_schedules == 0 && o.max_time.count() == 0 && r.schedules >= 1'000'000) return;
    }
  }
};

}  // namespace

ExploreResult replay(const ExploreOptions& o, const Program& program, const Schedule& s) {
  Search search{o, program};
  PrefixPolicy policy(s.choices, true);  // [EXP-4.3] exactly this schedule
  RunOutcome out = search.run(policy);
  search.r.replayed = true;
  ++search.r.schedules;
  if (o.on_schedule) o.on_schedule(out.schedule);
  if (out.kind) {
    ExploreOptions once = o;
    once.shrink = false;  // the replayed schedule is the one reported
    search.r.failure.emplace();
    search.r.runs += complete_failure(once, program, out, *search.r.failure);
  }
  search.r.elapsed = WallClock::now() - search.start;
  return search.r;
}

ExploreResult explore(const ExploreOptions& o, const Program& program) {
  if (o.honour_replay_env) {
    if (const char* token = std::getenv("TURNSTILE_EXPLORE_REPLAY"); token && *token) {
      const auto s = Schedule::from_token(token);  // [EXP-4.3]
      if (!s)
        throw std::invalid_argument(std::string("TURNSTILE_EXPLORE_REPLAY='") + token +
                                    "' is not a schedule token (ex1-<point>.<index>...)");
      return replay(o, program, *s);
    }
  }
  Search search{o, program};
  if (o.strategy == Strategy::exhaustive) search.exhaustive();
  else search.sampled();
  search.r.elapsed = WallClock::now() - search.start;
  return search.r;
}

}  // namespace turnstile::testing::detail

namespace turnstile::testing {

std::string ExploreResult::summary() const {
  std::ostringstream os;
  const double ms = static_cast<double>(elapsed.count()) / 1e6;
  os << (replayed ? "replayed " : "explored ") << schedules << " schedule(s) in " << runs
     << " run(s), " << ms << " ms";
  if (complete) os << "; the bounded search is complete";
  if (budget_exhausted) os << "; stopped by its budget (incomplete)";
  if (!failure) return os.str() + "; no failure\n";
  const ExploreFailure& f = *failure;
  os << "\nFAILED (" << to_string(f.kind) << "): " << f.message << "\n  found:  " << f.found.token()
     << " (" << f.found.deviations() << " deviation(s))\n  shrunk: " << f.shrunk.token() << " ("
     << to_string(f.shrunk_kind) << ", " << f.shrunk.deviations() << " deviation(s)"
     << (f.minimal ? ", minimal" : ", not proven minimal") << "): " << f.shrunk_message << "\n  "
     << f.shrunk.describe() << "\n  replay: TURNSTILE_EXPLORE_REPLAY=" << f.token() << "\n";
  return os.str();
}

}  // namespace turnstile::testing
