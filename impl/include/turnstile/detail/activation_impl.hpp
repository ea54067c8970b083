// turnstile/detail/activation_impl.hpp: the template bodies of Activation,
// TurnContext and TaskContext (included by activation.hpp only).
#pragma once

namespace turnstile {

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
    traced = trace_call(method, serial, trace_task);
  }
  // [TURN-7.1] call() always queues: whether this call waits for a turn it is
  // part of is decided where it is awaited (detail::CallWait), not here.
#if defined(TURNSTILE_MUTANT_TURN_REFUSE_AT_CALL)
  // mutant: [TURN-7.1] the old rule: a serial call made under a serial turn of
  // this activation (the innermost marker only) throws at the call, even
  // unawaited
  if (const detail::TurnMarkerRef* m = detail::turn_marker().try_get();
      serial && m != nullptr && *m && (*m)->serial() && (*m)->activation == &id())
    throw TurnReentrancyError("serial call '" + method + "' from inside its own turn [TURN-7.1]");
#endif
  auto node = std::make_shared<const detail::TurnMarker>(&wait_lane_, &id(), std::move(method), serial);
  auto pending = std::make_shared<Call<R, F>>(std::move(body), std::move(node));
  std::string fiber;
  if (!traced.empty()) [[unlikely]] {  // the turn is a fiber that sees the caller's bindings
    fiber = id() + ":" + traced;
    TraceEvent e("fiber.spawn");
    e.str("child", fiber).flag("structured", true);
    trace::emit(e);
    pending->trace_call = std::move(traced);
  }

  detail::TurnChain::Link* prev = nullptr;
  detail::TurnChain::Link* mine = nullptr;
  if (serial) {
    queued_.fetch_add(1, std::memory_order_relaxed);
    mine = chain_.attach(prev);  // [TURN-2.2] arrival order is call order
  }
  // The turn runs as a fiber on the strand with the caller's bindings, but not
  // the caller's position: no lane marker, no turn marker ([FL-3.8] table).
#if defined(TURNSTILE_MUTANT_TURN_KEEPS_CALLER_POSITION)
  // mutant: [FL-3.8] the caller's lane marker is carried into the actor turn
  detail::FrameRef start = detail::current_context();
#else
  detail::FrameRef start = detail::clear_position(detail::current_context());
#endif
  detail::start_fiber(*strand_, run_turn<R, F>(this, pending, prev, mine), std::move(start),
                      [](const std::exception_ptr&) noexcept {}, std::move(fiber));
  return await_result<R, F>(std::move(pending));
}

template <class State>
template <class R, class F>
Task<> Activation<State>::run_turn(Activation* self, std::shared_ptr<Call<R, F>> call,
                                   detail::TurnChain::Link* prev, detail::TurnChain::Link* mine) {
  const detail::TurnMarker& node = *call->node;
  const bool serial = node.serial();
  if (prev != nullptr) {
    co_await detail::CompletionAwaiter(prev->settled);  // [CHAIN-I2] after the previous settles
    detail::TurnChain::Link::release(prev);
  }
#if defined(TURNSTILE_MUTANT_TURN_QUEUED_NOT_DECREMENTED)
  // mutant: [TURN-2.3] a started turn still counts as queued
#else
  if (serial) self->queued_.fetch_sub(1, std::memory_order_relaxed);  // [TURN-2.3]
#endif
  auto* running = self->turn_started(node.method, call->trace_call);  // [TURN-4.2] arms the watchdog
  detail::wait_graph().started(node);  // [WAIT-I2] holds the serial lane from here
  if (!call->trace_call.empty()) [[unlikely]] self->trace_turn("turn.start", call->trace_call, nullptr, {});
  TurnContext<State> ctx(*self, node.method, call->trace_call);
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
#if defined(TURNSTILE_MUTANT_TURN_ENDS_AT_FIRST_SUSPENSION)
  // mutant: [TURN-1.1] the serial lane is handed on before the body runs, so
  // the next serial turn starts at this one's first suspension
  if (serial) detail::TurnChain::settle(mine);
#endif
  try {
    // The body (and the Scope children it spawns) run under the turn's marker.
    if constexpr (std::is_void_v<R>) {
      co_await detail::turn_marker().where(call->node, [&] { return call->body(ctx); });
    } else {
      value.emplace(co_await detail::turn_marker().where(call->node, [&] { return call->body(ctx); }));
    }
  } catch (...) {
    error = std::current_exception();  // [TURN-2.5] a throwing turn fails its caller only
  }
  // The bookkeeping runs exactly once, whatever the body did.
  if (serial) {
    try {
      self->publish_snapshot();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  detail::wait_graph().settled(node);  // [WAIT-I2] before the next serial turn can start
  self->turn_settled(running);
  if (!call->trace_call.empty()) [[unlikely]]  // [TRACE-4.3] before the next turn or the caller
    self->trace_turn("turn.end", call->trace_call, "outcome", error ? "error" : "ok");
#if defined(TURNSTILE_MUTANT_TURN_THROW_KEEPS_CHAIN)
  // mutant: [TURN-2.5] a turn that threw never hands the serial lane on, so
  // its successor never starts
  if (serial && !error) detail::TurnChain::settle(mine);
#elif !defined(TURNSTILE_MUTANT_TURN_ENDS_AT_FIRST_SUSPENSION)  // (settled before the body ran)
  if (serial) detail::TurnChain::settle(mine);  // [TURN-1.1] the turn ends as its result settles
#endif
  if (error) {
    call->result.set_exception(std::move(error));
  } else if constexpr (std::is_void_v<R>) {
    call->result.set_value();
  } else {
    call->result.set_value(std::move(*value));
  }
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
           if (!task.empty()) [[unlikely]] a->trace_turn("turn.task_start", call, "task", task);
           TaskContext<State> tctx(*a, task);
           co_await b(tctx);
         }(this->activation_, std::move(body), std::move(task_id), std::string(trace_call_)));
}

}  // namespace turnstile
