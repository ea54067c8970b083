// turnstile/testing/explore.hpp: model-check your own program. explore() runs a
// program on a fresh ManualScheduler once per schedule and reports the first
// schedule under which it fails, with a replay token, the schedule shrunk to
// its fewest deviations and the failing run's trace (spec/testing.md, EXP-).
// Library target turnstile::testing (GoogleTest glue: explore_gtest.hpp).
//
//   ExploreOptions o;                       // exhaustive, at most 2 deviations
//   ExploreResult r = explore(o, [](ManualScheduler& s) -> Task<> {
//     Account a(s);                         // the program's world, in its frame
//     auto both = when_all(a.deposit(1), a.deposit(1));
//     co_await std::move(both);             // a named local (GCC 12)
//     check_that(a.balance() == 2, "a lost update");
//   });
//   if (r.failure) std::cout << r.summary();  // token, shrunk schedule, trace
//
// What a schedule is ([EXP-1.1], [EXP-1.2]). Under a ManualScheduler the only
// nondeterminism is which ready item runs next, and when virtual time moves.
// A *choice point* is a step at which more than one item is ready; timers due
// at the same instant are posted together and become ready items, so their
// order is a choice point too. A schedule is the list of indices (for
// run_next(i), 0 = the oldest) taken at the choice points of one run, in order;
// every other step runs the only ready item. Time moves only when nothing is
// ready: to the earliest armed deadline (ManualScheduler::run_until_quiescent).
// A *deviation* is a choice other than 0 (running a ready item other than the
// oldest); the FIFO schedule has none. The same schedule replays the same run.
//
// Where the program runs ([EXP-1.3]). On the thread that called explore(), once
// per schedule, each time on a new ManualScheduler whose chooser is the
// explorer. Two forms:
//   - Task<> program(ManualScheduler&): started as a fiber on the scheduler,
//     which the explorer then runs until quiescent. Its world lives in its frame;
//     a run that hangs leaks that frame rather than destroy an activation or a
//     lane with work still queued (their destructors stop the process).
//   - void program(ManualScheduler&): builds its world and drives it itself
//     with run_until_quiescent(), run_until_idle() or sync_wait(s, task); each
//     of those picks through the explorer. A hang unwinds through its locals,
//     so prefer the Task form for programs that can hang.
// The program must be deterministic given the schedule: everything it runs is
// posted to that scheduler (no other threads, no wall clock, no randomness).
// A replayed prefix that no longer fits is reported as `nondeterminism`.
//
// What fails a run ([EXP-2.1] to [EXP-2.5]), the first one seen:
//   exception       an exception escaped the program, a detached fiber or a
//                   timer callback (the unhandled-exception handler);
//   hang            the run is quiescent (nothing ready, no timer armed) and a
//                   fiber homed on the scheduler (the program's included) has
//                   not finished;
//   reentrancy      with fail_on_reentrancy: any LaneReentrancyError or
//                   TurnReentrancyError, thrown anywhere, caught or not;
//   check           check_that() failed in the program, or options.check threw
//                   (it runs after each run that did not fail otherwise);
//   step_limit      a run took more than max_steps items (a livelock);
//   nondeterminism  a prefix could not be followed (see above).
//
// Strategies ([EXP-3.1] to [EXP-3.5]):
//   exhaustive  depth-first over every schedule with at most max_deviations
//               deviations, each exactly once; `complete` when the bounded tree
//               (of this shard) was explored within the budgets.
//   pct         PCT (Burckhardt et al., ASPLOS 2010) with depth pct_depth, seeded:
//               each item inherits the priority of the item that posted it
//               (the first post of an item; later posts start new chains at a
//               fresh random priority), the highest-priority ready item runs,
//               and at pct_depth - 1 random steps the running chain drops below
//               all others.
//   random      a uniformly random ready item at every choice point, seeded.
// Budgets: max_schedules and max_time stop any strategy (with neither, pct and
// random stop after 1,000,000 schedules). shard {K, N} (exhaustive)
// splits the search tree by the choices at its first shard_depth choice points:
// the distinct prefixes, in depth-first order, go round-robin to the N shards;
// a shard runs its own schedules and one run per prefix it does not own.
//
// On failure ([EXP-4.1] to [EXP-4.4]): the schedule as found; the same kind of
// failure at its fewest deviations (greedy removal, then an exhaustive search
// below that bound within shrink_budget runs: `minimal` says the search
// finished); a token ("ex1" then "-<point>.<index>" per deviation) that
// replay() and TURNSTILE_EXPLORE_REPLAY=<token> rerun exactly; and the shrunk
// run's trace, the JSON lines of JsonLinesTraceSink (spec/trace-format.md).
//
// Thread safety: explore() and replay() install process-wide hooks for each run
// (the unhandled-exception handler, and a trace sink when they watch for
// reentrancy errors or record a trace), restoring the previous ones after;
// run one exploration at a time per process. Under AddressSanitizer the runs
// are not leak-checked: a hung run leaks its world on purpose.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "turnstile/scheduler.hpp"
#include "turnstile/task.hpp"

namespace turnstile::testing {

enum class Strategy { exhaustive, pct, random };
enum class FailureKind { check, exception, hang, reentrancy, step_limit, nondeterminism };
const char* to_string(Strategy s) noexcept;
const char* to_string(FailureKind k) noexcept;

// The choices of one run at its choice points ([EXP-1.1]).
struct Schedule {
  std::vector<std::uint32_t> choices;  // index taken at each choice point
  std::vector<std::uint32_t> widths;   // items ready there (empty if unknown: parsed)

  std::size_t deviations() const noexcept;
  // "ex1" then "-<point>.<index>" per deviation ([EXP-4.3]).
  std::string token() const;
  // Parses a token; std::nullopt if it is not one.
  static std::optional<Schedule> from_token(std::string_view token);
  // One line per deviation: "choice point 3: item 1 of 2 ready (not the oldest)".
  std::string describe() const;
  // The same choices, trailing FIFO choices aside (what a token keeps).
  bool operator==(const Schedule& o) const noexcept;
};

// Thrown by check_that; a failure of kind `check` wherever it is thrown.
class CheckFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Fails the run (kind `check`) with `what` unless `ok`.
void check_that(bool ok, std::string_view what);

struct Shard {
  unsigned index = 0;  // K, 0-based
  unsigned count = 1;  // N
};

struct ExploreOptions {
  Strategy strategy = Strategy::exhaustive;
  std::size_t max_deviations = 2;  // exhaustive: the bound k; SIZE_MAX: every schedule
  unsigned pct_depth = 3;          // pct: d >= 1
  std::uint64_t seed = 1;          // pct, random
  std::size_t max_schedules = 100'000;    // budget; 0: none
  std::chrono::milliseconds max_time{0};  // wall-time budget; 0: none
  std::size_t max_steps = 100'000;        // items per run before step_limit
  Shard shard;                            // exhaustive only
  std::size_t shard_depth = 3;
  bool fail_on_reentrancy = false;
  std::function<void()> check;  // after each run; throws (check_that) to fail it
  bool shrink = true;
  std::size_t shrink_budget = 5'000;  // runs the shrink may take
  bool trace = true;                  // record the shrunk run's trace
  bool honour_replay_env = true;      // TURNSTILE_EXPLORE_REPLAY replaces the search
  // Observer: every counted schedule, after its run (exactness tests use it).
  std::function<void(const Schedule&)> on_schedule;
};

struct ExploreFailure {
  FailureKind kind = FailureKind::check;
  std::string message;
  Schedule found;          // the schedule as the search found it
  Schedule shrunk;         // same kind, fewest deviations found
  FailureKind shrunk_kind = FailureKind::check;
  std::string shrunk_message;
  bool minimal = false;    // no schedule with fewer deviations fails this way
  std::string trace;       // JSON lines of the shrunk run (empty: not recorded)
  std::string token() const { return shrunk.token(); }
};

struct ExploreResult {
  std::size_t schedules = 0;  // schedules run and checked (this shard's)
  std::size_t runs = 0;       // program runs, shrinking and shard prefixes included
  bool complete = false;      // exhaustive: the bounded tree was explored
  bool budget_exhausted = false;
  bool replayed = false;      // one schedule, from a token
  std::chrono::nanoseconds elapsed{0};
  std::optional<ExploreFailure> failure;
  // A few lines: what ran, and for a failure its kind, message, both tokens,
  // the shrunk schedule and how to replay it.
  std::string summary() const;
};

namespace detail {
struct Program {
  std::function<void(ManualScheduler&)> plain;
  std::function<Task<>(ManualScheduler&)> task;
};
ExploreResult explore(const ExploreOptions& options, const Program& program);
ExploreResult replay(const ExploreOptions& options, const Program& program, const Schedule& s);

template <class F>
Program program_of(F&& f) {
  Program p;
  if constexpr (std::is_same_v<std::invoke_result_t<F&, ManualScheduler&>, Task<>>)
    p.task = std::forward<F>(f);
  else
    p.plain = std::forward<F>(f);
  return p;
}
}  // namespace detail

// Runs `program` once per schedule of the strategy until one fails or the
// search ends; with TURNSTILE_EXPLORE_REPLAY set (and honour_replay_env), runs
// only that schedule ([EXP-4.3]).
template <class F>
ExploreResult explore(const ExploreOptions& options, F&& program) {
  return detail::explore(options, detail::program_of(std::forward<F>(program)));
}

// Runs exactly `schedule` (a token: Schedule::from_token) once, with the same
// checks; a failure carries that schedule as found and shrunk, and its trace.
template <class F>
ExploreResult replay(const ExploreOptions& options, F&& program, const Schedule& schedule) {
  return detail::replay(options, detail::program_of(std::forward<F>(program)), schedule);
}

}  // namespace turnstile::testing
