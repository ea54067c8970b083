// property_tests/turns/turns_workload.hpp: the turns suite's generated workload
// (TurnOp, TurnsConfig) and its generators, declared here and defined once in
// turns_workload.cpp. No product header (generators.hpp), so that object is the
// same for the clean suite and every mutant binary, and a mutant that patches a
// header recompiles only the scenario and the properties (turns_scenario.hpp).
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "generators.hpp"

namespace turnstile::prop::turns {

// ------------------------------------------------------------------ workload

enum class CallKind { kSerial, kInterleaved, kYield };
enum class AwaitMode { kNow, kLater, kNever };

struct TurnOp {
  CallKind kind = CallKind::kSerial;
  std::size_t yields = 0;        // awaits inside the body, 0..3
  AwaitMode await = AwaitMode::kNow;
  std::size_t gate = 0;          // 0: none; else which gate (mod the gates of its kind) + 1
  bool throws = false;
};

struct TurnsConfig {
  std::vector<std::vector<TurnOp>> callers;
  std::size_t g_gates = 0;  // serial bodies wait, interleaved turns open (0..2)
  std::size_t h_gates = 0;  // interleaved bodies wait, serial turns open (0..2)
  std::size_t releaser_yields = 0;
};

void showValue(const TurnOp& op, std::ostream& os);
void showValue(const TurnsConfig& c, std::ostream& os);

// Every field shrinks towards the simplest value: a serial call, no awaits,
// awaited now, no gate, no failure.
rc::Gen<TurnOp> gen_turn_op();
rc::Gen<TurnsConfig> gen_turns_config(std::size_t max_callers = 3, std::size_t max_ops = 6);

}  // namespace turnstile::prop::turns
