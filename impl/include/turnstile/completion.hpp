// turnstile/completion.hpp: Event and Promise<T>, the completion primitives.
//
// Guarantees
//   - Completing (Event::set, Promise::set_value/set_exception) never resumes a
//     waiter inline: every waiter is posted to its own fiber's scheduler and
//     runs after the completing call has returned ([RT-4.2]). The state lane
//     depends on this: a completion signalled inside a turn resumes its waiter
//     outside the turn.
//   - Waiters are resumed in the order they started waiting ([COMP-I3]).
//   - Everything the completer wrote before completing is visible to a waiter
//     after it resumes ([COMP-I4]).
//
// Where a continuation resumes: on the waiter's fiber, in a step posted to that
// fiber's scheduler (its carrier, not the completer's call stack). Awaiting an
// already-completed primitive continues at once, without suspending.
//
// Thread safety: set/set_value/set_exception and co_await may be called
// concurrently from any fibers. Completing a Promise twice throws
// std::logic_error. Waiters must be on a fiber.
// The lock-free core is detail::BasicCompletion (detail/completion_core.hpp),
// model-checked in model/completion_model.cpp. Spec: [RT-4.1] to [RT-4.4].
#pragma once

#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "turnstile/detail/completion_core.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/sync.hpp"

namespace turnstile {

namespace detail {
using Completion = BasicCompletion<StdSync>;

// Awaiter that parks the current fiber on a Completion and is posted back by
// set() [RT-4.2].
class CompletionAwaiter : public Completion::Waiter {
 public:
  explicit CompletionAwaiter(Completion& c) noexcept : completion_(c) {}
  bool await_ready() const noexcept { return completion_.is_set(); }
  bool await_suspend(std::coroutine_handle<> h) {
    resume_.arm(h);
    return completion_.try_add_waiter(this);  // false: set meanwhile, continue now
  }
  void await_resume() const noexcept {}
  void notify() noexcept override { resume_.post(); }  // [RT-4.2] posted, never inline

 private:
  Completion& completion_;
  FiberResume resume_;
};
}  // namespace detail

// A manual-reset event. set() releases every waiter; later waits pass at once
// until reset().
class Event {
 public:
  Event() = default;
  explicit Event(bool initially_set) : core_(initially_set) {}

  void set() noexcept { core_.set(); }
  bool is_set() const noexcept { return core_.is_set(); }
  // Re-arms a set event. Precondition: nobody waits (true while it is set).
  void reset() noexcept { core_.reset(); }

  // co_await event.wait(): continues once the event is set.
  [[nodiscard]] detail::CompletionAwaiter wait() noexcept { return detail::CompletionAwaiter(core_); }

 private:
  detail::Completion core_;
};

namespace detail {
// co_await promise.wait() / take(): parks the fiber on the promise's Completion;
// resumes with (promise->*Resume)(): the value, or the stored exception rethrown.
template <class P, auto Resume>
class PromiseAwaiter : public CompletionAwaiter {
 public:
  PromiseAwaiter(Completion& c, P* p) noexcept : CompletionAwaiter(c), p_(p) {}
  decltype(auto) await_resume() const { return (p_->*Resume)(); }

 private:
  P* p_;
};

// What Promise<T> and Promise<void> share: one completer writes the result,
// then every waiter is released.
class PromiseBase {
 public:
  bool is_ready() const noexcept { return core_.is_set(); }

 protected:
  PromiseBase() = default;

  // Completes the promise: `store` writes the result, set() publishes it.
  template <class Store>
  void complete(Store store) {
    if (claimed_.exchange(true, std::memory_order_relaxed))  // only one completer may write
      throw std::logic_error("Promise completed twice [RT-4.3]");
    store();
    core_.set();  // [COMP-I4] publishes the result
  }
  template <class P, auto Resume>
  PromiseAwaiter<P, Resume> awaiter(P* self) noexcept {
    return PromiseAwaiter<P, Resume>(core_, self);
  }

 private:
  std::atomic<bool> claimed_{false};
  Completion core_;
};
}  // namespace detail

// A single-assignment result with any number of waiters.
template <class T>
class Promise : public detail::PromiseBase {
 public:
  Promise() = default;

  template <class U = T>
  void set_value(U&& v) {
    complete([&] { result_.template emplace<1>(std::forward<U>(v)); });
  }
  void set_exception(std::exception_ptr e) {
    complete([&] { result_.template emplace<2>(std::move(e)); });
  }

  // co_await promise.wait(): the value (a reference valid while the Promise
  // lives), or the stored exception rethrown.
  [[nodiscard]] auto wait() noexcept { return awaiter<Promise, &Promise::value>(this); }
  // co_await promise.take(): moves the value out (one consumer).
  [[nodiscard]] auto take() noexcept { return awaiter<Promise, &Promise::take_value>(this); }

 private:
  const T& value() const {
    if (result_.index() == 2) std::rethrow_exception(std::get<2>(result_));
    return std::get<1>(result_);
  }
  T take_value() {
    if (result_.index() == 2) std::rethrow_exception(std::move(std::get<2>(result_)));
    return std::move(std::get<1>(result_));
  }
  std::variant<std::monostate, T, std::exception_ptr> result_;
};

template <>
class Promise<void> : public detail::PromiseBase {
 public:
  void set_value() {
    complete([] {});
  }
  void set_exception(std::exception_ptr e) {
    complete([&] { error_ = std::move(e); });
  }
  [[nodiscard]] auto wait() noexcept { return awaiter<Promise, &Promise::rethrow_error>(this); }
  auto take() noexcept { return wait(); }

 private:
  void rethrow_error() const {
    if (error_) std::rethrow_exception(error_);
  }
  std::exception_ptr error_;
};

}  // namespace turnstile
