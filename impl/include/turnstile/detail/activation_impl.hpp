// turnstile/detail/activation_impl.hpp: the template bodies of Activation,
// TurnContext and TaskContext (included by activation.hpp only), in the order
// of a call's life: made (call, as_turn_body, Call, start_call), run
// (run_turn, publish_snapshot), awaited (await_result); then what a turn's
// body may use (the contexts, snapshot(), ctx.turn, ctx.task).
#pragma once

#include "turnstile/detail/block_cache.hpp"
#include "turnstile/detail/turn_trace.hpp"

namespace turnstile {

template <class State>
Activation<State>::Activation(std::string id, State initial, ActivationOptions options,
                              Scheduler& scheduler)
    : ActivationBase(std::move(id), std::move(options), scheduler),
      state_(std::move(initial)),
      snapshot_(std::allocate_shared<Snapshot>(detail::BlockAllocator<Snapshot>{}, state_)) {}  // [RT-1.7]

// ------------------------------------------------------------- a call is made

template <class State>
template <class F>
  requires TurnBody<F, State>
auto Activation<State>::call(std::string method, F body) {
  const bool serial = !is_interleaved(method);  // [TURN-3.3] the activation decides
  return start_call(std::move(method), as_turn_body(std::move(body)), serial);
}

template <class State>
template <class F>
auto Activation<State>::as_turn_body(F fn) {
  if constexpr (PlainTurnBody<F, State>) {
    using R = std::remove_cvref_t<std::invoke_result_t<F&, State&>>;
    // [TURN-1.3] the plain body runs as one step of a coroutine body; a returned
    // reference is copied into R here, inside the turn.
    return [fn = std::move(fn)](TurnContext<State>& ctx) mutable -> Task<R> {
      co_return fn(ctx.state());
    };
  } else {
    return fn;
  }
}

template <class State>
template <class R, class F>
struct Activation<State>::Call final : detail::TurnMarker {
  Call(Activation* a, std::string m, bool serial, F b)
      : detail::TurnMarker(&a->wait_lane_, &a->id(), std::move(m), serial), body(std::move(b)) {}
  std::optional<F> body;  // kept alive until the turn settles [TURN-2.2]
  Promise<R> result;
  std::string trace_call;     // [TRACE-4.3] empty while the sink is off
  detail::RunningTurn running;  // [TURN-4.2] its watch while the turn runs
  detail::TurnChain::Link* prev = nullptr;  // [CHAIN-I2] serial: the link it starts after
  detail::TurnChain::Link* mine = nullptr;  // serial: its own link, settled as it ends
  // [CHAIN-I2] A serial call queued behind an unsettled link waits as this
  // node on the link's completion word; its notify posts the turn's start.
  struct StartAfter final : detail::Completion::Waiter {
    Strand* strand = nullptr;
    Runnable* start = nullptr;  // the turn fiber's start step
    void notify() noexcept override { strand->post(*start); }  // [RT-4.2] posted
  } start_after;
  // Storage of the detail::TurnMarkerFrame built in start_call (owned by its
  // references, not by this record: see TurnMarkerFrame).
  alignas(detail::TurnMarkerFrame) std::array<std::byte, sizeof(detail::TurnMarkerFrame)> marker_frame;
};

template <class State>
template <class F>
auto Activation<State>::start_call(std::string method, F body, bool serial,
                                   std::string_view trace_task)
    -> std::invoke_result_t<F&, TurnContext<State>&> {
  using TaskR = std::invoke_result_t<F&, TurnContext<State>&>;
  static_assert(is_task_v<TaskR>, "a turn body is (TurnContext<State>&) -> Task<R> [TURN-1.1]");
  using R = typename TaskR::value_type;

  std::unique_lock<std::mutex> order;  // [TRACE-4.3] turn.call ordered with the chain
  std::string traced;
  if (trace::on()) [[unlikely]] {
    order = trace::order_lock();
    traced = detail::turn_trace::call(id(), method, serial, trace_task);
  }
  // [TURN-7.1] call() always queues: whether this call waits for a turn it is
  // part of is decided where it is awaited (detail::CallWait), not here.
  // [RT-1.7] the record comes from the block cache of this thread, and goes
  // back to that of whichever thread drops it last.
  auto pending = std::allocate_shared<Call<R, F>>(detail::BlockAllocator<Call<R, F>>{}, this,
                                                  std::move(method), serial, std::move(body));
  std::string fiber;
  if (!traced.empty()) [[unlikely]] {  // the turn is a fiber that sees the caller's bindings
    fiber = detail::turn_trace::turn_fiber(id(), traced);
    pending->trace_call = std::move(traced);
  }

  // The turn runs as a fiber on the strand with the caller's bindings, but not
  // the caller's position: no lane marker, and its own turn marker ([FL-3.8]
  // table), bound by the frame in the call's record for the whole fiber.
  detail::FrameRef start = detail::clear_position(detail::current_context());
  auto* frame = new (pending->marker_frame.data()) detail::TurnMarkerFrame(start.release(), pending);
  detail::FrameRef marked = detail::FrameRef::adopt(frame);  // [FRAME-I2] owns `start` now
  detail::FiberRoot root = run_turn<R, F>(this, pending.get());  // `marked` keeps it alive
  if (serial) {
    try {
      pending->mine = chain_.attach(pending->prev);  // [TURN-2.2] arrival order is call order
    } catch (...) {
      root.handle.destroy();  // never started: nothing else refers to it
      throw;
    }
    queued_.fetch_add(1, std::memory_order_relaxed);
  }
  Runnable& begin = detail::prepare_fiber(*strand_, root, std::move(marked), std::move(fiber));
  // [CHAIN-I2] a serial turn starts once the link before it has settled: its
  // start is posted by that settle, or now if it has settled already.
  auto& after = pending->start_after;
  after.strand = strand_.get();
  after.start = &begin;
  if (pending->prev == nullptr || !pending->prev->settled.try_add_waiter(&after))
    strand_->post(begin);  // [RT-3.3] posted, never run inline
  return await_result<R, F>(std::move(pending));
}

// ------------------------------------------------------------- the turn runs

// `call` is not owned here: the turn's marker frame, bound in this fiber's
// context from its start (prepare_fiber) to finish_fiber() below, holds a
// reference to the record (start_call), so the record outlives every use in
// this body without a reference count changed per turn.
template <class State>
template <class R, class F>
detail::FiberRoot Activation<State>::run_turn(Activation* self, Call<R, F>* call) {
  Call<R, F>& node = *call;  // its marker is bound in this fiber (start_call)
  const bool serial = node.serial();
  // [CHAIN-I2] started after the previous serial turn settled (start_call).
  if (node.prev != nullptr) detail::TurnChain::Link::release(node.prev);
  if (serial) self->queued_.fetch_sub(1, std::memory_order_relaxed);  // [TURN-2.3]
  bump(self->running_, +1);  // [TURN-1.2] one writer at a time: see bump()
  self->watch_.started(node.running, node.method, node.trace_call);  // [TURN-4.2] watched from here
  detail::wait_graph().started(node);  // [WAIT-I2] holds the serial lane from here
  if (!node.trace_call.empty()) [[unlikely]] detail::turn_trace::event("turn.start", self->id(), node.trace_call);
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
  try {
    // The body (and the Scope children it spawns) run under the turn's marker.
    TurnContext<State> ctx(*self, node.method, node.trace_call);
    Task<R> body = (*node.body)(ctx);  // a named local: see the GCC co_await pitfall
    if constexpr (std::is_void_v<R>) {
      co_await std::move(body);
    } else {
      value.emplace(co_await std::move(body));
    }
  } catch (...) {
    error = std::current_exception();  // [TURN-2.5] a throwing turn fails its caller only
  }
  node.body.reset();  // [TURN-2.2] kept until here: the body's task has finished
  // The bookkeeping runs exactly once, whatever the body did.
  if (serial) {
    try {
      self->publish_snapshot();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  detail::wait_graph().settled(node);  // [WAIT-I2] before the next serial turn can start
  self->watch_.settled(node.running);  // [TURN-4.2] reports it here if it was late, unreported
  bump(self->completed_, +1);          // [TURN-1.2] one writer at a time: see bump()
  bump(self->running_, -1);
  if (!node.trace_call.empty()) [[unlikely]]  // [TRACE-4.3] before the next turn or the caller
    detail::turn_trace::event("turn.end", self->id(), node.trace_call, "outcome", error ? "error" : "ok");
  if (serial) detail::TurnChain::settle(node.mine);  // [TURN-1.1] the turn ends as its result settles
  if (error) {
    node.result.set_exception(std::move(error));
  } else if constexpr (std::is_void_v<R>) {
    node.result.set_value();
  } else {
    node.result.set_value(std::move(*value));
  }
  detail::finish_fiber();  // the fiber's last step: its context, and the marker's reference, go
}

// [TURN-5.3] The copy the last serial turn left, and how many snapshot()
// handles to it are alive (each handle counts one, dropped by its deleter).
template <class State>
struct Activation<State>::Snapshot {
  explicit Snapshot(const State& s) : state(s) {}
  std::atomic<std::size_t> readers{0};
  State state;
};

template <class State>
void Activation<State>::publish_snapshot() {
  if constexpr (std::is_nothrow_copy_assignable_v<State>) {
    detail::LockGuard lock(snapshot_mu_);
    // acquire: pairs with the release of each handle's drop. No handle alive
    // (and none can be made while we hold the lock): overwrite the copy in
    // place instead of allocating a new one.
    if (snapshot_->readers.load(std::memory_order_acquire) == 0) {
      snapshot_->state = state_;
      return;
    }
  }
  auto copy = std::allocate_shared<Snapshot>(detail::BlockAllocator<Snapshot>{}, state_);  // [RT-1.7]
  detail::LockGuard lock(snapshot_mu_);
  snapshot_ = std::move(copy);
}

// --------------------------------------------------------- the call is awaited

template <class State>
template <class R, class F>
Task<R> Activation<State>::await_result(std::shared_ptr<Call<R, F>> call) {
  const detail::CallWait wait(*call, call->trace_call);  // throws on a cycle [TURN-7.1]
  co_return co_await call->result.take();
}

// ----------------------------------------------- what a turn's body may use

template <class State>
std::shared_ptr<const State> Activation<State>::snapshot() const {
  std::shared_ptr<Snapshot> s;
  {
    detail::LockGuard lock(snapshot_mu_);
    s = snapshot_;
    s->readers.fetch_add(1, std::memory_order_relaxed);  // under the lock: publish sees it
  }
  const State* state = &s->state;
  // cppcheck-suppress cstyleCast ; the deleter lambda's parameter list, not a cast
  return std::shared_ptr<const State>(state, [s = std::move(s)](const State*) noexcept {
    // release: this reader's reads of the copy happen-before a publish that
    // then sees no reader and overwrites it (the acquire in publish_snapshot).
    s->readers.fetch_sub(1, std::memory_order_release);
  });
}

template <class State>
TaskContext<State>::TaskContext(Activation<State>& a, std::string_view trace_task) noexcept
    : activation_(&a), trace_task_(trace_task) {}

template <class State>
std::shared_ptr<const State> TaskContext<State>::snapshot() const {
  return activation_->snapshot();
}

template <class State>
Activation<State>& TaskContext<State>::activation() const noexcept {
  return *activation_;
}

template <class State>
TurnContext<State>::TurnContext(Activation<State>& a, const std::string& method,
                                std::string_view trace_call) noexcept
    : TaskContext<State>(a), method_(method), trace_call_(trace_call) {}

template <class State>
State& TurnContext<State>::state() const noexcept {
  return this->activation_->state_;
}

template <class State>
const std::string& TurnContext<State>::method() const noexcept {
  return method_;
}

template <class State>
template <class F>
  requires TurnBody<F, State>
auto TaskContext<State>::turn(F fn) const {
  // a full serial turn [TURN-5.2], either body [TURN-1.3]
  return activation_->start_call("turn", Activation<State>::as_turn_body(std::move(fn)), true,
                                 this->trace_task_);
}

template <class State>
template <class F>
void TurnContext<State>::task(F body) const {
  // [TURN-5.1] detach: posted start, no bindings, so no turn marker.
  this->activation_->tasks_.fetch_add(1, std::memory_order_relaxed);
  std::string task_id;  // [TRACE-4.3] the task's id and fiber name while traced
  if (trace::on()) [[unlikely]] task_id = trace::take_label_or_id();
  const std::string fiber = task_id.empty() ? std::string() : this->activation_->id() + ":" + task_id;
  std::optional<trace::ScopedLabel> fiber_name;
  if (!fiber.empty()) fiber_name.emplace(fiber);  // names the detached task fiber
  detach(*this->activation_->strand_,
         // cppcheck-suppress passedByValue ; a coroutine's parameters are copied into its frame
         [](Activation<State>* a, F b, std::string task, std::string call) -> Task<> {
           struct Finished {  // counted until the task ends, however it ends
             ActivationBase* a;
             ~Finished() { a->task_finished(); }
           } finished{a};
           if (!task.empty()) [[unlikely]]
             detail::turn_trace::event("turn.task_start", a->id(), call, "task", task);
           TaskContext<State> tctx(*a, task);
           co_await b(tctx);
         }(this->activation_, std::move(body), std::move(task_id), std::string(trace_call_)));
}

}  // namespace turnstile
