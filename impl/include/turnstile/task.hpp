// turnstile/task.hpp: Task<T>, the lazy coroutine type of every turnstile API.
//
// Guarantees
//   - Lazy: creating a Task runs nothing; the body starts when it is awaited
//     (or handed to detach/Scope::spawn/sync_wait, which start it as a fiber).
//   - Move-only and [[nodiscard]]: a Task owns its coroutine frame; dropping an
//     unstarted Task destroys the frame without running it.
//   - Symmetric transfer: awaiting a Task transfers control to it, and its
//     completion transfers back to the awaiter, without growing the stack, so an
//     await chain of any depth runs in constant stack [RT-1.3]. The transfer
//     goes through a per-thread trampoline (detail::transfer_to) rather than
//     relying on the compiler turning `return handle;` into a tail call, which
//     GCC does not do at -O0 nor under ASan/TSan: the guarantee holds in every
//     build.
//   - An exception that leaves the body is stored and rethrown to the awaiter
//     [RT-1.4]; nothing is swallowed.
//
// Where a continuation resumes: the awaiter of a Task resumes on the thread that
// finished the Task's body, inside that body's final suspension (same fiber, so
// the same fiber context; [RT-1.5]). Cross-fiber completions (Event, Promise,
// Channel, Scope::join) never resume inline; see completion.hpp.
//
// Preconditions, checked ([RT-1.6]): a Task is awaited at most once, and only
// while it holds a coroutine. Awaiting an empty Task (default-constructed,
// moved from, or handed to detach/Scope::spawn/sync_wait) or one whose result
// was already taken (awaited before) throws std::logic_error naming the
// precondition at that co_await; nothing crashes, nothing is returned twice.
// The check costs a pointer test on the await and a test of the result slot.
//
// Thread safety: a Task is a value owned by one fiber; awaiting it from two
// places at once is a precondition violation that is not checked (only an
// await after the first one finished is).
// Spec: [RT-1.1] to [RT-1.6] in spec/runtime.md.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "turnstile/detail/block_cache.hpp"

namespace turnstile {

template <class T = void>
class Task;

namespace detail {

// The trampoline behind every coroutine transfer. Inside a running step,
// [RT-1.6] the messages of an await that breaks a Task's preconditions (out of
// line: the await's fast path is a pointer test).
[[noreturn]] void throw_empty_task();
[[noreturn]] void throw_consumed_task();

// transfer_to(h) records `h` as the next coroutine to resume and returns, so the
// caller's await_suspend returns and its frame suspends; the step's loop then
// resumes `h`. Outside a step it runs the loop itself. Stack depth is constant.
void transfer_to(std::coroutine_handle<> h) noexcept;
// Resumes `h` as the start of a step: runs the trampoline loop until no
// transfer is pending.
void resume_step(std::coroutine_handle<> h) noexcept;

class TaskPromiseBase {
 public:
  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <class Promise>
    void await_suspend(std::coroutine_handle<Promise> h) noexcept {
      // [RT-1.3] transfer back to the awaiter (or nowhere) through the trampoline.
      if (auto c = h.promise().continuation_) transfer_to(c);
    }
    void await_resume() const noexcept {}
  };

  std::suspend_always initial_suspend() const noexcept { return {}; }  // [RT-1.1] lazy
  FinalAwaiter final_suspend() const noexcept { return {}; }
  void set_continuation(std::coroutine_handle<> c) noexcept { continuation_ = c; }

  // [RT-1.7] the frame comes from, and goes back to, the freeing thread's
  // block cache (detail/block_cache.hpp).
  static void* operator new(std::size_t size) { return detail::allocate_block(size); }
  static void operator delete(void* frame, std::size_t size) noexcept { detail::free_block(frame, size); }

 private:
  std::coroutine_handle<> continuation_{};
};

template <class T>
class TaskPromise final : public TaskPromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  // bugprone-exception-escape false positives (this and return_value): emplacing a
  // nothrow-constructible alternative cannot throw. The check sees the
  // bad_variant_access throw in libstdc++'s visit of a valueless variant, which
  // variant::_M_reset() never reaches (it returns first).
  // NOLINTNEXTLINE(bugprone-exception-escape)
  void unhandled_exception() noexcept { result_.template emplace<2>(std::current_exception()); }
  template <class U>
    requires std::is_convertible_v<U&&, T>
  // NOLINTNEXTLINE(bugprone-exception-escape): see unhandled_exception above
  void return_value(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    result_.template emplace<1>(std::forward<U>(v));
  }
  // Hands out the result once: the slot is empty afterwards [RT-1.6].
  T take_result() {
    if (result_.index() == 2) {
      std::exception_ptr error = std::move(std::get<2>(result_));
      result_.template emplace<0>();
      std::rethrow_exception(std::move(error));  // [RT-1.4]
    }
    if (result_.index() == 0) [[unlikely]] throw_consumed_task();  // [RT-1.6] awaited before
    T value = std::move(std::get<1>(result_));
    result_.template emplace<0>();
    return value;
  }

 private:
  // monostate: not finished, or the result was taken (take_result runs only
  // once the body has finished, so there it means "taken").
  std::variant<std::monostate, T, std::exception_ptr> result_;
};

template <>
class TaskPromise<void> final : public TaskPromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void unhandled_exception() noexcept { error_ = std::current_exception(); }
  void return_void() noexcept {}
  // Hands out the result once [RT-1.6].
  void take_result() {
    if (taken_) [[unlikely]] throw_consumed_task();  // [RT-1.6] awaited before
    taken_ = true;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));  // [RT-1.4]
  }

 private:
  std::exception_ptr error_;
  bool taken_ = false;
};

}  // namespace detail

template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::TaskPromise<T>;
  using handle_type = std::coroutine_handle<promise_type>;
  using value_type = T;

  Task() noexcept = default;
  explicit Task(handle_type h) noexcept : handle_(h) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;             // [RT-1.2] move-only
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  bool valid() const noexcept { return static_cast<bool>(handle_); }

  // Awaiting a Task starts it (symmetric transfer) and yields its result or
  // rethrows its exception. Awaiting an empty Task, or one awaited before,
  // throws std::logic_error at the co_await ([RT-1.6]).
  auto operator co_await() && noexcept {
    struct Awaiter {
      handle_type h;
      bool await_ready() const noexcept { return !h || h.done(); }
      void await_suspend(std::coroutine_handle<> awaiter) noexcept {
        h.promise().set_continuation(awaiter);
        detail::transfer_to(h);  // [RT-1.3] into the child, through the trampoline
      }
      T await_resume() {
        if (!h) [[unlikely]] detail::throw_empty_task();  // [RT-1.6] no coroutine to await
        return h.promise().take_result();
      }
    };
    return Awaiter{handle_};
  }

  // For the runtime (fiber start): release ownership of the frame.
  handle_type release() noexcept { return std::exchange(handle_, {}); }

 private:
  void reset() noexcept {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  handle_type handle_{};
};

namespace detail {
template <class T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}
}  // namespace detail

// Awaitable traits used by APIs that accept "a plain body or a Task body".
template <class>
inline constexpr bool is_task_v = false;
template <class T>
inline constexpr bool is_task_v<Task<T>> = true;

}  // namespace turnstile
