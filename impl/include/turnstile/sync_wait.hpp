// turnstile/sync_wait.hpp: the blocking bridge from plain threads into fibers.
//
//   int main() { return turnstile::sync_wait(run_app()); }
//
// sync_wait(task) runs `task` as a fiber on an event loop private to the calling
// thread and returns its result (or rethrows its exception) once it completes
// ([RT-6.1]). The loop runs every fiber started on it (children, detached
// fibers) until all have finished, so nothing it started outlives the call.
// Work the task waits for elsewhere (a ThreadPool, a lane) posts the task's
// continuation back to the loop.
//
// sync_wait(s, task) runs `task` as a fiber on scheduler `s` and blocks the
// calling thread until it completes. On a ManualScheduler the calling thread
// drives the scheduler meanwhile, and a task that can never complete (nothing
// ready) is reported with FrameworkContextError instead of hanging ([RT-6.3]).
//
// Both are for plain threads only (main, tests, tools, configuration). Called
// from inside a framework context (a fiber, a lane turn, any posted item) they
// throw FrameworkContextError at once instead of risking a deadlock ([RT-6.2]).
// The calling thread's fallback context (its FiberLocal bindings) is the fiber's
// starting context, so bindings made around sync_wait are seen inside.
#pragma once

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "turnstile/errors.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/task.hpp"

namespace turnstile {

namespace detail {
// Throws FrameworkContextError when called inside a framework context [RT-6.2].
void require_plain_thread(const char* what);

// Runs `task` as a fiber on a private loop of the calling thread until it and
// every fiber started on the loop have finished.
void run_on_private_loop(Task<> task);

template <class T>
struct SyncResult {
  std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value;
  std::exception_ptr error;
  T get() {
    if (error) std::rethrow_exception(error);
    if constexpr (!std::is_void_v<T>) return std::move(*value);
  }
};

template <class T>
Task<> capture_into(Task<T> task, SyncResult<T>& out) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
      out.value.emplace('\0');
    } else {
      out.value.emplace(co_await std::move(task));
    }
  } catch (...) {
    out.error = std::current_exception();
  }
}
}  // namespace detail

template <class T>
T sync_wait(Task<T> task) {
  detail::require_plain_thread("sync_wait");
  detail::SyncResult<T> result;
  detail::run_on_private_loop(detail::capture_into(std::move(task), result));
  return result.get();
}

template <class T>
T sync_wait(Scheduler& s, Task<T> task) {
  detail::require_plain_thread("sync_wait");
  detail::SyncResult<T> result;
  detail::BlockingLatch done;
  detail::start_fiber(s, detail::capture_into(std::move(task), result), detail::current_context(),
                      [&done](const std::exception_ptr&) noexcept { done.set(); });
  s.block_until(done);
  return result.get();
}

}  // namespace turnstile
