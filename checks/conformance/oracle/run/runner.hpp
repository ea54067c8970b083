// oracle/run/runner.hpp: executes a scenario on the reference core (turnstile itself)
// with a TraceSink installed and returns the trace it wrote.
//
// Under ManualScheduler (the default) the run is deterministic in
// (scenario, schedule_seed): the scenario's `schedule` is followed first, then
// choices drawn from schedule_seed. With threads > 0 it runs on a ThreadPool of
// that many threads instead (not deterministic).
//
// A run that cannot finish (a deadlock: on a core that keeps [TURN-7.1], no
// scenario has one; two activations awaiting each other are refused at the
// await) ends with an `end` of status "timeout":
// under ManualScheduler when nothing is left to run but a fiber has not
// finished, on a ThreadPool after 30 s. Its objects are then kept alive for
// the rest of the process (suspended fibers still refer to them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "oracle/scenario/scenario.hpp"

namespace turnstile::oracle {

struct RunOptions {
  std::optional<std::uint64_t> schedule_seed;
  std::size_t threads = 0;  // 0: ManualScheduler
};

std::string run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace turnstile::oracle
