// impl/src/testing/explore_shrink.cpp: a failing schedule shrunk to its fewest
// deviations, the same kind of failure ([EXP-4.2]), and its trace ([EXP-4.4]).
#include "explore_run.hpp"

namespace turnstile::testing::detail {
namespace {

// The first schedule with at most `bound` deviations that fails with `kind`,
// depth-first ([EXP-3.1]); `runs` counts down the budget.
std::optional<RunOutcome> search_below(const ExploreOptions& o, const Program& program,
                                       FailureKind kind, std::size_t bound, std::size_t& runs,
                                       bool& complete) {
  std::vector<std::uint32_t> prefix;
  for (;;) {
    if (runs == 0) {
      complete = false;
      return std::nullopt;
    }
    --runs;
    PrefixPolicy policy(prefix, true);
    RunOutcome out = run_once(o, program, policy);
    if (out.kind == kind) return out;  // [EXP-4.2] the same kind only
    const auto& c = out.schedule.choices;
    const auto& w = out.schedule.widths;
    std::size_t devs = out.schedule.deviations();
    bool next = false;
    for (std::size_t j = c.size(); j-- > 0;) {
      devs -= c[j] != 0 ? 1 : 0;  // deviations before j
      if (c[j] + 1 < w[j] && (c[j] != 0 || devs + 1 <= bound)) {
        prefix.assign(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(j));
        prefix.push_back(c[j] + 1);
        next = true;
        break;
      }
    }
    if (!next) return std::nullopt;
  }
}

}  // namespace

Shrunk shrink_failure(const ExploreOptions& o, const Program& program, const RunOutcome& found) {
  Shrunk best{found.schedule, *found.kind, found.message, false, 0};
  std::size_t runs = o.shrink_budget;
  // Greedy: drop one deviation at a time while the run still fails the same way.
  for (bool improved = true; improved && runs > 0;) {
    improved = false;
    for (std::size_t j = 0; j < best.schedule.choices.size() && runs > 0; ++j) {
      if (best.schedule.choices[j] == 0) continue;
      std::vector<std::uint32_t> cand = best.schedule.choices;
      cand[j] = 0;
      --runs;
      PrefixPolicy policy(cand, false);
      RunOutcome out = run_once(o, program, policy);
      if (out.kind == best.kind && out.schedule.deviations() < best.schedule.deviations()) {
        best.schedule = std::move(out.schedule);  // [EXP-4.2] the same kind, fewer deviations
        best.message = std::move(out.message);
        improved = true;
        break;
      }
    }
  }
  // Then every bound below it, from 0: the first failure of the kind is minimal.
  best.minimal = true;
  for (std::size_t k = 0; k < best.schedule.deviations(); ++k) {
    bool complete = true;
    if (auto out = search_below(o, program, best.kind, k, runs, complete)) {
      best.schedule = std::move(out->schedule);
      best.kind = *out->kind;
      best.message = std::move(out->message);
      break;
    }
    if (!complete) {
      best.minimal = false;  // the budget ran out before this bound was searched
      break;
    }
  }
  best.runs = o.shrink_budget - runs;
  return best;
}

std::size_t complete_failure(const ExploreOptions& o, const Program& program,
                             const RunOutcome& found, ExploreFailure& f) {
  std::size_t runs = 0;
  f.kind = *found.kind;
  f.message = found.message;
  f.found = found.schedule;
  f.shrunk = found.schedule;
  f.shrunk_kind = f.kind;
  f.shrunk_message = f.message;
  if (o.shrink && f.kind != FailureKind::nondeterminism) {
    Shrunk s = shrink_failure(o, program, found);
    runs += s.runs;
    f.shrunk = std::move(s.schedule);
    f.shrunk_kind = s.kind;
    f.shrunk_message = std::move(s.message);
    f.minimal = s.minimal;
  }
  if (o.trace && f.kind != FailureKind::nondeterminism) {
    // [EXP-4.4] the shrunk run once more, traced.
    PrefixPolicy policy(f.shrunk.choices, true);
    RunOutcome again = run_once(o, program, policy, &f.trace);
    ++runs;
    if (again.kind != f.shrunk_kind)
      f.trace += "{\"note\": \"the traced rerun did not fail the same way: nondeterminism?\"}\n";
  }
  return runs;
}

}  // namespace turnstile::testing::detail
