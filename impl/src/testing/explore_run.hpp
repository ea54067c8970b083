// impl/src/testing/explore_run.hpp: the explorer's mechanism, shared by its
// sources (turnstile/testing/explore.hpp is the contract).
//   explore_run.cpp       one run of the program under a Policy: the chooser,
//                         the hooks, what failed
//   explore_policies.cpp  the policies: a prefix (DFS, replay, shrink), random, PCT
//   explore_shrink.cpp    shrinking a failing schedule, recording its trace
//   explore_token.cpp     Schedule: tokens, description; names of the enums
//   explore.cpp           the strategies, budgets, shards, the result
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "turnstile/testing/explore.hpp"

namespace turnstile::testing::detail {

// How a run picks the item to run at each step ([EXP-1.2]).
class Policy {
 public:
  virtual ~Policy() = default;
  // step: items run before this one in this run; point: this choice point's
  // index (only meaningful when width > 1); chains: the chain of each ready
  // item (PCT's threads: an item inherits the chain of the item that posted it
  // first). Returns an index below width; 0 when width == 1.
  virtual std::uint32_t pick(std::size_t step, std::size_t point, std::uint32_t width,
                             const std::vector<std::uint64_t>& chains) = 0;
  // False when a run with `points` choice points did not reach every choice
  // the policy had to make (a strict prefix longer than the run's tree).
  virtual bool reached(std::size_t /*points*/) const { return true; }
};

// A prefix of choices, then the oldest item (0) at every later choice point.
// Strict: a choice that does not fit (index >= width) is nondeterminism;
// lenient (shrinking): it is clamped to the newest item.
class PrefixPolicy final : public Policy {
 public:
  PrefixPolicy(std::vector<std::uint32_t> prefix, bool strict)
      : prefix_(std::move(prefix)), strict_(strict) {}
  std::uint32_t pick(std::size_t step, std::size_t point, std::uint32_t width,
                     const std::vector<std::uint64_t>& chains) override;
  bool reached(std::size_t points) const override { return !strict_ || points >= prefix_.size(); }

 private:
  std::vector<std::uint32_t> prefix_;
  bool strict_;
};

// A uniformly random ready item at every choice point ([EXP-3.3]).
class RandomPolicy final : public Policy {
 public:
  explicit RandomPolicy(std::uint64_t seed) : state_(seed) {}
  std::uint32_t pick(std::size_t step, std::size_t point, std::uint32_t width,
                     const std::vector<std::uint64_t>& chains) override;

 private:
  std::uint64_t state_;
};

// PCT with depth d ([EXP-3.2]): random chain priorities, d - 1 change points
// among the first `steps` steps.
class PctPolicy final : public Policy {
 public:
  PctPolicy(std::uint64_t seed, unsigned depth, std::size_t steps);
  std::uint32_t pick(std::size_t step, std::size_t point, std::uint32_t width,
                     const std::vector<std::uint64_t>& chains) override;

 private:
  std::uint64_t priority_of(std::uint64_t chain);
  std::uint64_t state_;
  std::vector<std::size_t> change_steps_;  // change_steps_[i]: the step where a chain drops to i + 1
  std::vector<std::pair<std::uint64_t, std::uint64_t>> priorities_;  // chain -> priority
};

// splitmix64: the explorer's one generator (the same numbers on every platform).
std::uint64_t next_random(std::uint64_t& state) noexcept;
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t index) noexcept;

struct RunOutcome {
  Schedule schedule;  // the choices taken, with the widths seen
  std::size_t steps = 0;
  std::optional<FailureKind> kind;
  std::string message;
};

// One run of `program` on a new ManualScheduler under `policy` ([EXP-1.3],
// [EXP-2.1] to [EXP-2.5]); with `trace`, the run's JSON lines go there.
RunOutcome run_once(const ExploreOptions& o, const Program& program, Policy& policy,
                    std::string* trace = nullptr);

// The result of shrinking a failure of kind `kind` found under `found`.
struct Shrunk {
  Schedule schedule;
  FailureKind kind = FailureKind::check;
  std::string message;
  bool minimal = false;
  std::size_t runs = 0;
};
Shrunk shrink_failure(const ExploreOptions& o, const Program& program, const RunOutcome& found);

// Fills a failure from what was found (and shrinks it when o.shrink), records
// the trace of the shrunk schedule when o.trace; returns the runs it took.
std::size_t complete_failure(const ExploreOptions& o, const Program& program,
                             const RunOutcome& found, ExploreFailure& out);

}  // namespace turnstile::testing::detail
