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

// A single-assignment result with any number of waiters.
template <class T>
class Promise {
 public:
  Promise() = default;

  template <class U = T>
  void set_value(U&& v) {
    claim();
    result_.template emplace<1>(std::forward<U>(v));
    core_.set();  // [COMP-I4] publishes result_
  }
  void set_exception(std::exception_ptr e) {
    claim();
    result_.template emplace<2>(std::move(e));
    core_.set();
  }
  bool is_ready() const noexcept { return core_.is_set(); }

  // co_await promise.wait(): the value (a reference valid while the Promise
  // lives), or the stored exception rethrown.
  [[nodiscard]] auto wait() noexcept {
    struct Awaiter : detail::CompletionAwaiter {
      Promise* p;
      explicit Awaiter(Promise* self) noexcept : detail::CompletionAwaiter(self->core_), p(self) {}
      const T& await_resume() const {
        if (p->result_.index() == 2) std::rethrow_exception(std::get<2>(p->result_));
        return std::get<1>(p->result_);
      }
    };
    return Awaiter(this);
  }
  // co_await promise.take(): moves the value out (one consumer).
  [[nodiscard]] auto take() noexcept {
    struct Awaiter : detail::CompletionAwaiter {
      Promise* p;
      explicit Awaiter(Promise* self) noexcept : detail::CompletionAwaiter(self->core_), p(self) {}
      T await_resume() const {
        if (p->result_.index() == 2) std::rethrow_exception(std::move(std::get<2>(p->result_)));
        return std::move(std::get<1>(p->result_));
      }
    };
    return Awaiter(this);
  }

 private:
  void claim() {
    if (claimed_.exchange(true, std::memory_order_relaxed))  // only one completer may write
      throw std::logic_error("Promise completed twice [RT-4.3]");
  }
  std::atomic<bool> claimed_{false};
  std::variant<std::monostate, T, std::exception_ptr> result_;
  detail::Completion core_;
};

template <>
class Promise<void> {
 public:
  void set_value() {
    claim();
    core_.set();
  }
  void set_exception(std::exception_ptr e) {
    claim();
    error_ = std::move(e);
    core_.set();
  }
  bool is_ready() const noexcept { return core_.is_set(); }
  [[nodiscard]] auto wait() noexcept {
    struct Awaiter : detail::CompletionAwaiter {
      Promise* p;
      explicit Awaiter(Promise* self) noexcept : detail::CompletionAwaiter(self->core_), p(self) {}
      void await_resume() const {
        if (p->error_) std::rethrow_exception(p->error_);
      }
    };
    return Awaiter(this);
  }
  auto take() noexcept { return wait(); }

 private:
  void claim() {
    if (claimed_.exchange(true, std::memory_order_relaxed))
      throw std::logic_error("Promise completed twice [RT-4.3]");
  }
  std::atomic<bool> claimed_{false};
  std::exception_ptr error_;
  detail::Completion core_;
};

}  // namespace turnstile
