// oracle/runner.hpp: executes a scenario on the reference core (turnstile itself)
// with a TraceSink installed and returns the trace it wrote.
//
// Under ManualScheduler (the default) the run is deterministic in
// (scenario, schedule_seed): the scenario's `schedule` is followed first, then
// choices drawn from schedule_seed. With threads > 0 it runs on a ThreadPool of
// that many threads instead (not deterministic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "oracle/scenario.hpp"

namespace turnstile::oracle {

struct RunOptions {
  std::optional<std::uint64_t> schedule_seed;
  std::size_t threads = 0;  // 0: ManualScheduler
};

std::string run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace turnstile::oracle
