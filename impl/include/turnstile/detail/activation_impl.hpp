// turnstile/detail/activation_impl.hpp: the template bodies of Activation,
// TurnContext and TaskContext (included by activation.hpp only).
#pragma once

namespace turnstile {

template <class State>
template <class F>
auto Activation<State>::call(std::string method, F body)
    -> std::invoke_result_t<F&, TurnContext<State>&> {
  using TaskR = std::invoke_result_t<F&, TurnContext<State>&>;
  static_assert(is_task_v<TaskR>, "a turn body is (TurnContext<State>&) -> Task<R> [TURN-1.1]");
  using R = typename TaskR::value_type;

  const bool serial = !is_interleaved(method);  // [TURN-3.3] the activation decides
  if (serial) check_self_call(method);          // [TURN-7.1] throw now, never wait for itself
  auto call = std::make_shared<Call<R, F>>(std::move(method), std::move(body));

  detail::TurnChain::Link* prev = nullptr;
  detail::TurnChain::Link* mine = nullptr;
  if (serial) {
    queued_.fetch_add(1, std::memory_order_relaxed);
    mine = chain_.attach(prev);  // [TURN-2.2] arrival order is call order
  }
  const detail::TurnMarker* const* outer = detail::turn_marker().try_get();
  // The turn runs as a fiber on the strand, with the caller's bindings (so a
  // marker of a turn that awaits this call travels with it) [TURN-7.1].
  detail::start_fiber(*strand_, run_turn<R, F>(this, call, serial, prev, mine, outer ? *outer : nullptr),
                      detail::current_context(), [](std::exception_ptr) noexcept {});
  Promise<R>* result = &call->result;
  return await_result<R>(std::move(call), result);
}

template <class State>
template <class R, class F>
Task<> Activation<State>::run_turn(Activation* self, std::shared_ptr<Call<R, F>> call, bool serial,
                                   detail::TurnChain::Link* prev, detail::TurnChain::Link* mine,
                                   const detail::TurnMarker* outer) {
  if (prev != nullptr) {
    co_await detail::CompletionAwaiter(prev->settled);  // [CHAIN-I2] after the previous settles
    detail::TurnChain::Link::release(prev);
  }
  if (serial) self->queued_.fetch_sub(1, std::memory_order_relaxed);
  auto* running = self->turn_started(call->method);
  detail::TurnMarker marker{self, &call->method, serial, outer};
  TurnContext<State> ctx(*self, call->method);
  try {
    if constexpr (std::is_void_v<R>) {
      co_await detail::turn_marker().where(&marker, [&] { return call->body(ctx); });
      if (serial) self->publish_snapshot();
      self->turn_settled(running);
      if (serial) detail::TurnChain::settle(mine);  // [TURN-1.1] the turn ends as its result settles
      call->result.set_value();
    } else {
      R value = co_await detail::turn_marker().where(&marker, [&] { return call->body(ctx); });
      if (serial) self->publish_snapshot();
      self->turn_settled(running);
      if (serial) detail::TurnChain::settle(mine);
      call->result.set_value(std::move(value));
    }
  } catch (...) {
    // [TURN-2.5] a throwing turn fails its caller; the next turn still runs.
    if (serial) self->publish_snapshot();
    self->turn_settled(running);
    if (serial) detail::TurnChain::settle(mine);
    call->result.set_exception(std::current_exception());
  }
}

template <class State>
template <class F>
auto TaskContext<State>::turn(F fn) const {
  Activation<State>& a = *activation_;
  if constexpr (std::is_invocable_v<F&, TurnContext<State>&>) {
    return a.call("turn", std::move(fn));  // a full serial turn [TURN-5.2]
  } else {
    using R = std::invoke_result_t<F&, State&>;
    return a.call("turn", [fn = std::move(fn)](TurnContext<State>& ctx) mutable -> Task<R> {
      co_return fn(ctx.state());
    });
  }
}

template <class State>
template <class F>
void TurnContext<State>::task(F body) const {
  // [TURN-5.1] detach: posted start, no bindings, so no turn marker.
  detach(*this->activation_->strand_,
         [](Activation<State>* a, F b) -> Task<> {
           TaskContext<State> tctx(*a);
           co_await b(tctx);
         }(this->activation_, std::move(body)));
}

}  // namespace turnstile
