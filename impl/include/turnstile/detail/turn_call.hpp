// turnstile/detail/turn_call.hpp: a call as the wait graph sees it, and the
// wait refusal of [TURN-7.1] (call_wait.cpp).
//
// Every call is a node of the process's one wait-for relation
// (detail/wait_graph.hpp, BasicWaitGraph<StdSync>): its TurnMarker. While its
// turn runs, the marker is the ambient turn marker of the fibers that are part
// of the turn. Awaiting a call's result builds a CallWait, which adds the edge
// "the awaiting turn waits for that call" or, when the edge would close a
// cycle, throws TurnReentrancyError naming every hop. The product's chain of
// serial turns (detail/turn_chain.hpp) is instantiated here too, beside the
// wait graph, for Activation.
//
// Thread safety: wait_graph() and CallWait from any thread; a TurnMarker's
// fields are written once, before the call is visible.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "turnstile/detail/block_cache.hpp"
#include "turnstile/detail/turn_chain.hpp"
#include "turnstile/detail/wait_graph.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/sync.hpp"

namespace turnstile {

// An await of a call that would wait for a turn it is part of. [TURN-7.1]
class TurnReentrancyError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {

using WaitGraph = BasicWaitGraph<StdSync>;
// The one wait-for relation of the process (all activations): [TURN-7.1].
WaitGraph& wait_graph() noexcept;
// The serial chain of one activation's calls ([TURN-2.2], [CHAIN-I2]); its
// links come from the block cache of the thread ([RT-1.7]).
using TurnChain = BasicTurnChain<StdSync, NoLinkPayload, BlockAllocator<std::byte>>;

// A call, and while its turn runs, the ambient turn marker of the fibers that
// are part of the turn: its body and the Scope children it joins. A position
// key ([FL-3.8]): it is reset at every turn boundary (a call's turn starts with
// the caller's bindings but not the caller's marker) and kept by
// FiberContext::run. Its node in the wait graph is how an await is attributed
// to the turn that waits ([TURN-7.1]).
struct TurnMarker : WaitGraph::Node {
  TurnMarker(WaitGraph::Lane* lane, const std::string* activation_id, std::string m, bool serial)
      : WaitGraph::Node(lane, serial), activation(activation_id), method(std::move(m)) {}
  const std::string* activation;  // the activation's id; it outlives its calls [TURN-1.1]
  const std::string method;
};
using TurnMarkerRef = std::shared_ptr<const TurnMarker>;
const FiberLocal<TurnMarkerRef>& turn_marker() noexcept;

// The frame that binds turn_marker() to a call for its turn, embedded in the
// call's record instead of allocated ([FL-3.8]): the turn's fiber starts with it
// as its context head. Its value owns the record (a reference to the record that
// holds the frame), so the record lives while the frame is held (by the fiber, a
// child, a snapshot); the last release of the frame drops that reference
// ([FRAME-I3]), which may free the record and the frame with it.
class TurnMarkerFrame final : public TypedFrame<TurnMarkerRef> {
 public:
  TurnMarkerFrame(Frame* prev_adopted, TurnMarkerRef record) noexcept
      : TypedFrame<TurnMarkerRef>(&turn_marker(), prev_adopted, std::move(record)) {}

 protected:
  void destroy() noexcept override {
    TurnMarkerRef last = take_value();  // [FRAME-I3] no holder is left: nobody reads it
    this->~TurnMarkerFrame();
  }  // `last` dropped here: it may free the record, and this frame with it
};

// The await of a call's result ([TURN-7.1]): records that the current fiber's
// turn (if any) waits for `target`, or throws TurnReentrancyError naming every
// hop when that wait would close a cycle. Ends the wait at destruction.
// `trace_call`: the awaited call's id while traced (turn.await, and
// turn.await_refused on a refusal), else empty.
class CallWait {
 public:
  CallWait(const TurnMarker& target, std::string_view trace_call);
  ~CallWait();
  CallWait(const CallWait&) = delete;
  CallWait& operator=(const CallWait&) = delete;

 private:
  TurnMarkerRef waiter_;  // keeps the waiter's node alive while the edge exists
  std::optional<WaitGraph::Edge> edge_;
};

}  // namespace detail
}  // namespace turnstile
