// call_wait.cpp: the wait refusal of [TURN-7.1]: the process's wait graph, the
// turn marker key, CallWait and the description of a refused cycle.
#include "turnstile/detail/turn_call.hpp"

#include <vector>

#include "turnstile/detail/turn_trace.hpp"
#include "turnstile/trace.hpp"

namespace turnstile::detail {

namespace {
FrameRef carry_turn_marker(FrameRef onto, const Frame* running) {
  return FiberLocalAccess::carry_position(turn_marker(), std::move(onto), running);
}

// "turn 'deposit' of 'acc/1'" / "call 'audit' into 'acc/1'".
std::string describe(const TurnMarker& m, bool as_turn) {
  return (as_turn ? "turn '" : "call '") + m.method + (as_turn ? "' of '" : "' into '") +
         *m.activation + "'" + (m.serial() ? "" : " (interleaved)");
}

// Every hop of a refused cycle, starting with the waiter: who awaits what, and
// which turn each queued call waits behind.
std::string describe_cycle(const std::vector<WaitGraph::Hop>& cycle) {
  std::string out;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    const auto& m = static_cast<const TurnMarker&>(*cycle[i].node);
    const bool queued = cycle[i].queued_behind;
    out += i == 0 ? describe(m, true) : (queued ? "which is queued" : "which awaits");
    if (i == 0) {
      out += " awaits ";
    } else {
      out += queued ? " behind " : " ";
    }
    const auto& next = static_cast<const TurnMarker&>(*cycle[(i + 1) % cycle.size()].node);
    out += describe(next, queued);
    if (i + 1 < cycle.size()) out += ", ";
  }
  return out;
}
}  // namespace

// A position key ([FL-3.8]): FiberContext::run inside a serial turn keeps the
// turn's marker, so a self-call made under it still throws ([TURN-7.1]).
const FiberLocal<TurnMarkerRef>& turn_marker() noexcept {
  static const FiberLocal<TurnMarkerRef>& marker = [] () -> const FiberLocal<TurnMarkerRef>& {
    static const FiberLocal<TurnMarkerRef> key("turnstile.turn_marker");
    register_position_key(&carry_turn_marker);
    return key;
  }();
  return marker;
}

WaitGraph& wait_graph() noexcept {
  static WaitGraph graph;
  return graph;
}

CallWait::CallWait(const TurnMarker& target, std::string_view trace_call) {
  const TurnMarkerRef* me = turn_marker().try_get();
  const bool traced = trace::on() && !trace_call.empty();
  if (traced) [[unlikely]] turn_trace::event("turn.await", *target.activation, trace_call);  // [TRACE-4.3]
  if (me == nullptr || !*me) return;  // no turn waits on this fiber: no cycle can close here
  waiter_ = *me;
  edge_.emplace(const_cast<TurnMarker*>(waiter_.get()), const_cast<TurnMarker*>(&target));
  std::vector<WaitGraph::Hop> cycle;
  if (wait_graph().begin_wait(*edge_, cycle)) return;  // [WAIT-I1]
  edge_.reset();
  std::string msg = "awaiting " + describe(target, false) +
                    " would wait for itself: " + describe_cycle(cycle) +
                    ". Await it after the turn, or leave it unawaited (it runs after the turn) "
                    "[TURN-7.1]";
  if (trace::on() && !trace_call.empty()) [[unlikely]]  // [TRACE-4.3]
    turn_trace::event("turn.await_refused", *target.activation, trace_call, "reason", "wait-cycle");
  throw TurnReentrancyError(msg);  // [TURN-7.1] at the co_await, never a hang
}

CallWait::~CallWait() {
  if (edge_) wait_graph().end_wait(*edge_);  // [WAIT-I3]
}

}  // namespace turnstile::detail
