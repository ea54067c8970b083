// property_tests/turns/turns_workload.cpp: the turns suite's workload generators
// (turns_workload.hpp), compiled once for the clean suite and every mutant.
#include "turns_workload.hpp"

namespace turnstile::prop::turns {

void showValue(const TurnOp& op, std::ostream& os) {
  if (op.kind == CallKind::kYield) {
    os << "yield";
    return;
  }
  os << (op.kind == CallKind::kSerial ? "S" : "I") << op.yields;
  if (op.gate) os << "g" << op.gate - 1;
  if (op.throws) os << "!";
  os << (op.await == AwaitMode::kNow ? "" : op.await == AwaitMode::kLater ? "/later" : "/never");
}
void showValue(const TurnsConfig& c, std::ostream& os) {
  os << "{callers [";
  show_callers(c.callers, os);
  os << "], g gates " << c.g_gates << ", h gates " << c.h_gates << ", releaser yields "
     << c.releaser_yields << "}";
}

rc::Gen<TurnOp> gen_turn_op() {
  return rc::gen::build<TurnOp>(
      rc::gen::set(&TurnOp::kind, by_weight<CallKind>({{CallKind::kSerial, 2},
                                                       {CallKind::kInterleaved, 2},
                                                       {CallKind::kYield, 1}})),
      rc::gen::set(&TurnOp::yields, uniform_in(0, 3)),
      rc::gen::set(&TurnOp::await, by_weight<AwaitMode>({{AwaitMode::kNow, 2},
                                                         {AwaitMode::kLater, 1},
                                                         {AwaitMode::kNever, 1}})),
      rc::gen::set(&TurnOp::gate, uniform_in(0, 2)),
      rc::gen::set(&TurnOp::throws,
                   rc::gen::map(uniform_in(0, 4), [](std::size_t x) { return x == 4; })));
}

rc::Gen<TurnsConfig> gen_turns_config(std::size_t max_callers, std::size_t max_ops) {
  return rc::gen::build<TurnsConfig>(
      rc::gen::set(&TurnsConfig::callers,
                   vector_of<std::vector<TurnOp>>(1, max_callers,
                                                  vector_of<TurnOp>(0, max_ops, gen_turn_op()))),
      rc::gen::set(&TurnsConfig::g_gates, uniform_in(0, 2)),
      rc::gen::set(&TurnsConfig::h_gates, uniform_in(0, 2)),
      rc::gen::set(&TurnsConfig::releaser_yields, uniform_in(0, 6)));
}

}  // namespace turnstile::prop::turns
