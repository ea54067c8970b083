// turnstile/lane_callback.hpp: split_callback, the three-step split for an
// external callback that used to run inside an exclusive section (kind 3,
// [LANE-6.3]).
//
//   // Before: lock { validate; state = Opening; listener(conn); } and the
//   // listener called back into the component, relying on a reentrant lock.
//   Task<bool> open(Conn c) {
//     return split_callback(lane_,
//         [this, c] { validate_on_lane(c);                  // turn A: validate,
//                     state_[c.id] = State::opening;        //   every transition made
//                     return Pending{c.id, ++generation_}; },//   before the callback, and a
//                                                            //   placeholder claim
//         [this](Pending& p) { return listener_(p.id); },   // outside the lane: may call
//                                                            //   this component's public API
//         [this](Pending& p, CallbackOutcome<bool>& r) {     // turn B: replace the
//           if (generation_ != p.generation) return false;   //   placeholder with the
//           state_[p.id] = r.ok() && r.value() ? State::open //   result, or settle the
//                                              : State::closed; // failure
//           return r.ok() && r.value(); });
//   }
//
// The steps
//   1. Turn A, `claim()`: a plain callable run as one lane turn. It validates,
//      makes every state transition the original code made before invoking the
//      callback, and returns a placeholder claim (type C, e.g. a reservation
//      with a generation). An exception here reaches the awaiter; steps 2 and 3
//      do not run.
//   2. The callback, `callback(C&)`, returning R or Task<R>: runs outside any
//      turn, on the awaiting fiber, with that fiber's own bindings (the lane's
//      marker is not among them), so it may call this component's public
//      surface without a reentrancy error. Its value or exception is captured in
//      a CallbackOutcome<R>.
//   3. Turn B, `settle(C&, CallbackOutcome<R>&)`: a plain callable run as one
//      lane turn. It replaces the placeholder with the result or settles the
//      failure; its return value (or exception) is what split_callback yields.
//
// Rules the helper cannot check for you
//   - Do not defer to turn B a transition the original code made before the
//     callback: an observer racing with the callback must already see it
//     ([LANE-6.3], [LANE-8.6]).
//   - Turn B must re-validate: other turns may have run between A and B. The
//     claim (a generation, a reservation) is what makes that check cheap.
//   - If the lane is closed between A and B, turn B cannot be queued: the
//     awaiter gets LaneClosedError and the placeholder stays as turn A left it.
//
// Ordering: turn A is queued when split_callback is called, before it returns
// ([LANE-5.8]); called on the lane's own turn it throws LaneReentrancyError at
// the call ([LANE-5.3]). Turn B is queued when the callback has finished.
//
// Where a continuation resumes: the callback and the awaiter run on the
// awaiting fiber, after each turn's marker is released ([LANE-5.6]).
// Thread safety: as StateLane::run(). The returned Task must be awaited on a
// fiber; `lane` must outlive it.
#pragma once

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "turnstile/state_lane.hpp"
#include "turnstile/task.hpp"

namespace turnstile {

// What the callback of step 2 produced: a value, or the exception it threw.
template <class R>
class CallbackOutcome {
 public:
  bool ok() const noexcept { return value_.has_value(); }
  // The callback's value; rethrows its exception when it failed.
  R& value() {
    if (!ok()) std::rethrow_exception(error_);
    return *value_;
  }
  std::exception_ptr error() const noexcept { return error_; }

  void set_value(R v) { value_.emplace(std::move(v)); }
  void set_error(std::exception_ptr e) noexcept { error_ = std::move(e); }

 private:
  std::optional<R> value_;
  std::exception_ptr error_;
};

template <>
class CallbackOutcome<void> {
 public:
  bool ok() const noexcept { return !error_; }
  void value() const {
    if (error_) std::rethrow_exception(error_);
  }
  std::exception_ptr error() const noexcept { return error_; }
  void set_value() noexcept {}
  void set_error(std::exception_ptr e) noexcept { error_ = std::move(e); }

 private:
  std::exception_ptr error_;
};

namespace detail {
template <class T>
struct task_value {
  using type = T;
};
template <class T>
struct task_value<Task<T>> {
  using type = T;
};

template <class Raw>
using callback_value_t = typename task_value<std::remove_cvref_t<Raw>>::type;

template <class C, class Raw, class S, class Callback, class Settle>
Task<S> finish_split(StateLane& lane, Task<C> turn_a, Callback callback, Settle settle) {
  using R = callback_value_t<Raw>;
  C claim = co_await std::move(turn_a);  // step 1 done; a failure in turn A ends here
  CallbackOutcome<R> outcome;
  try {  // step 2: outside the lane, on this fiber [LANE-6.3]
    if constexpr (is_task_v<std::remove_cvref_t<Raw>>) {
      if constexpr (std::is_void_v<R>) {
        co_await callback(claim);
        outcome.set_value();
      } else {
        outcome.set_value(co_await callback(claim));
      }
    } else if constexpr (std::is_void_v<R>) {
      callback(claim);
      outcome.set_value();
    } else {
      outcome.set_value(callback(claim));
    }
  } catch (...) {
    outcome.set_error(std::current_exception());
  }
  // step 3: replace the placeholder or settle the failure, in one turn
  co_return co_await lane.run([&claim, &outcome, &settle]() -> S { return settle(claim, outcome); });
}
}  // namespace detail

// Runs the three-step split on `lane` (see the header comment). Returns the
// value of `settle`.
template <class ClaimFn, class Callback, class Settle>
auto split_callback(StateLane& lane, ClaimFn claim, Callback callback, Settle settle) {
  using C = std::invoke_result_t<ClaimFn&>;
  static_assert(!std::is_void_v<C> && !is_task_v<C>,
                "turn A returns the placeholder claim, as a plain value [LANE-6.3]");
  using Raw = std::invoke_result_t<Callback&, C&>;
  using R = detail::callback_value_t<Raw>;  // a returned reference is stored as a value
  using S = std::invoke_result_t<Settle&, C&, CallbackOutcome<R>&>;
  Task<C> turn_a = lane.run(std::move(claim));  // queued now [LANE-5.8]; throws at the call
  return detail::finish_split<C, Raw, S>(lane, std::move(turn_a), std::move(callback),
                                         std::move(settle));
}

}  // namespace turnstile
