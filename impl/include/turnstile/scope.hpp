// turnstile/scope.hpp: structured concurrency: scoped(), when_all(), Scope.
//
//   Task<Page> handle(Request r) {
//     co_return co_await scoped([&](Scope& s) -> Task<Page> {  // always joined
//       s.spawn(audit(r));                                      // a child: posted,
//       auto both = when_all(query_users(r), query_orders(r));  //   it runs beside
//       auto [users, orders] = co_await std::move(both);        //   the body
//       co_return render(users, orders);
//     });
//   }
//
// (Bind a Task or lambda built for a co_await to a named local first where it
// has a non-trivial destructor: GCC 12 destroys such a temporary twice.)
//
// scoped(body) is the way to use a Scope: it runs `body(Scope&) -> Task<R>`,
// then joins every child the body spawned, also when the body threw, and only
// then rethrows the body's exception or returns its value ([RT-5.5]). A child's
// failure is reported as join() reports it ([RT-5.3]): rethrown when the body
// succeeded; when the body threw, the body's exception wins and the child's is
// dropped. when_all(tasks...) runs tasks as children of its own scoped() and
// returns all their results ([RT-5.6]).
//
// Scope, the primitive underneath:
//   - spawn(t) starts `t` as a child fiber, posted on the current fiber's
//     scheduler (never inline) ([RT-5.1]); the child starts with the spawning
//     fiber's context as it stood at the spawn: one pointer copy, frames are
//     immutable ([FL-3.2], [RT-5.2]). Inside an actor turn that includes the
//     turn's marker: a child's awaits are its joiner's ([FL-3.9], [TURN-7.1]).
//   - join() completes when every child spawned so far has finished, and
//     rethrows the first child failure (the others are dropped) ([RT-5.3]).
//     After join() the scope may spawn and join again.
//   - Destroying a Scope whose children still run is a contract violation: the
//     process stops with a message giving the scope's name (if any), the line
//     that created it and the fix, never a silent leak ([RT-5.4]). A bare Scope
//     gets there when code between spawn and join throws; scoped() cannot.
//
// Where a continuation resumes: the joiner (the awaiter of scoped, when_all or
// join) resumes in a step posted to its own fiber's scheduler after the last
// child finished ([RT-4.2]), or at once if all children had finished.
//
// Thread safety: spawn and join are called by the owning fiber; children finish
// on any carrier. Precondition: used on a fiber (spawn throws
// FrameworkContextError otherwise, also inside a StateLane turn, which runs on
// no fiber and could not join: use detach there, [LANE-8.5]) ([RT-5.1]); at most
// one join() awaited at a time.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <version>
#if defined(__cpp_lib_source_location)
#include <source_location>
#endif

#include "turnstile/completion.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/source_location.hpp"
#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/task.hpp"

namespace turnstile {

class Scope {
 public:
  // `where` defaults to the line that creates the scope; `name` is free text.
  // Both appear in the [RT-5.4] message, so an abort says which scope it was.
  explicit Scope(SourceLocation where = SourceLocation::current()) noexcept
      : file_(where.file_name()), function_(where.function_name()), line_(where.line()) {}
  // cppcheck-suppress passedByValue ; a sink parameter, moved into name_
  explicit Scope(std::string name, SourceLocation where = SourceLocation::current()) noexcept
      : name_(std::move(name)),
        file_(where.file_name()),
        function_(where.function_name()),
        line_(where.line()) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope();

  // Starts `task` as a child fiber of the current fiber. Throws
  // FrameworkContextError on a plain thread and std::logic_error for an empty
  // Task ([RT-1.6]); either way nothing was started.
  void spawn(Task<> task);

  // Number of children still running.
  std::size_t running() const noexcept { return live_.load(std::memory_order_relaxed); }

  // co_await scope.join(): waits for every child, rethrows the first failure.
  [[nodiscard]] Task<> join();

  const std::string& name() const noexcept { return name_; }
  // Where the scope was created (file, line, function).
  const char* file() const noexcept { return file_; }
  std::uint_least32_t line() const noexcept { return line_; }
  const char* function() const noexcept { return function_; }

 private:
  void child_done(const std::exception_ptr& error) noexcept;

  // 1 (the scope's own reference, dropped by join) + running children. The
  // acq_rel decrements pair with each other so the one that reaches zero sees
  // every child's writes (including first_error_).
  std::atomic<std::size_t> pending_{1};
  std::atomic<std::size_t> live_{0};  // children running: reporting only, relaxed
  detail::Mutex error_mu_;
  std::exception_ptr first_error_ TURNSTILE_GUARDED_BY(error_mu_);
  detail::Completion all_done_;
  // Identity for the [RT-5.4] message; plain fields, so the layout is the same
  // whichever SourceLocation the compiler provides.
  std::string name_;
  const char* file_;
  const char* function_;
  std::uint_least32_t line_;
};

namespace detail {

// The body scoped() accepts: `body(Scope&) -> Task<R>`.
template <class F>
concept ScopedBody = std::invocable<F&, Scope&> && is_task_v<std::invoke_result_t<F&, Scope&>>;

template <class R, class F>
Task<R> run_scoped(F body, std::string name, SourceLocation where) {
  Scope scope(name, where);  // a copy: `name` lives in this coroutine's frame until it ends
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<R>, char, R>> value;
  try {
    Task<R> inner = body(scope);  // named: never a temporary in a co_await operand
    if constexpr (std::is_void_v<R>) {
      co_await std::move(inner);
    } else {
      value.emplace(co_await std::move(inner));
    }
  } catch (...) {
    error = std::current_exception();
  }
  try {
    Task<> joined = scope.join();  // [RT-5.5] every child, however the body ended
    co_await std::move(joined);
  } catch (...) {
    if (!error) error = std::current_exception();  // [RT-5.3] a child's failure, as join reports it
  }
  if (error) std::rethrow_exception(error);  // [RT-5.5] the body's exception wins
  // cppcheck-suppress missingReturn ; a coroutine: a Task<void> body ends without co_return
  if constexpr (!std::is_void_v<R>) co_return std::move(*value);
}

// when_all's result for a Task<T>: T, or std::monostate for Task<void>.
template <class T>
using when_all_value_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
Task<> store_result(Task<T> task, std::optional<when_all_value_t<T>>& slot) {
  if constexpr (std::is_void_v<T>) {
    co_await std::move(task);
    slot.emplace();
  } else {
    // cppcheck-suppress missingReturn ; a coroutine returning Task<void>: no co_return needed
    slot.emplace(co_await std::move(task));
  }
}

}  // namespace detail

// co_await scoped([&](Scope& s) -> Task<R> { ... }): runs the body with a fresh
// Scope, joins every child it spawned (also when it throws), then rethrows the
// body's exception or returns its value ([RT-5.5]). `name` and `where` (the
// call's line) identify the scope in diagnostics.
template <class F>
  requires detail::ScopedBody<F>
[[nodiscard]] std::invoke_result_t<F&, Scope&> scoped(
    F body, SourceLocation where = SourceLocation::current()) {
  using R = typename std::invoke_result_t<F&, Scope&>::value_type;
  return detail::run_scoped<R>(std::move(body), std::string(), where);
}
template <class F>
  requires detail::ScopedBody<F>
[[nodiscard]] std::invoke_result_t<F&, Scope&> scoped(
    std::string name, F body, SourceLocation where = SourceLocation::current()) {
  using R = typename std::invoke_result_t<F&, Scope&>::value_type;
  return detail::run_scoped<R>(std::move(body), std::move(name), where);
}

// co_await when_all(t1, t2, ...): starts every task as a child fiber (posted,
// with the awaiting fiber's context, as Scope::spawn does) when awaited, waits
// for all of them, and returns their results in argument order as a tuple
// (std::monostate for a Task<void>). When any failed, the first failure is
// rethrown once all have finished and the other results are dropped: first in
// time (the child that finished first with an exception), not in argument
// order ([RT-5.6]).
// Lazy like every Task: nothing starts before the co_await.
template <class... Ts>
[[nodiscard]] Task<std::tuple<detail::when_all_value_t<Ts>...>> when_all(Task<Ts>... tasks) {
  std::tuple<std::optional<detail::when_all_value_t<Ts>>...> slots;
  auto spawn_all = [&](Scope& s) -> Task<> {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (s.spawn(detail::store_result(std::move(tasks), std::get<I>(slots))), ...);
    }(std::index_sequence_for<Ts...>{});
    co_return;
  };
  Task<> all = scoped("when_all", spawn_all);  // [RT-5.6] joined even if a spawn throws
  co_await std::move(all);
  co_return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<detail::when_all_value_t<Ts>...>(std::move(*std::get<I>(slots))...);
  }(std::index_sequence_for<Ts...>{});
}

}  // namespace turnstile
