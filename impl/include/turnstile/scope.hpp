// turnstile/scope.hpp: Scope, structured concurrency.
//
//   Task<> handle() {
//     Scope scope;                       // inside a fiber
//     scope.spawn(query_users());        // children start posted, on this
//     scope.spawn(query_orders());       //   fiber's scheduler
//     co_await scope.join();             // all done; first failure rethrown
//   }
//
// Guarantees
//   - spawn(t) starts `t` as a child fiber, posted on the current fiber's
//     scheduler (never inline) ([RT-5.1]); the child starts with the spawning
//     fiber's context as it stood at the spawn: one pointer copy, frames are
//     immutable ([FL-3.2], [RT-5.2]).
//   - join() completes when every child spawned so far has finished, and
//     rethrows the first child failure (the others are dropped) ([RT-5.3]).
//     After join() the scope may spawn and join again.
//   - Destroying a Scope whose children still run is a contract violation: the
//     process stops with a message naming it, never a silent leak ([RT-5.4]).
//
// Where a continuation resumes: the joiner resumes in a step posted to its own
// fiber's scheduler after the last child finished ([RT-4.2]), or at once if all
// children had finished.
//
// Thread safety: spawn and join are called by the owning fiber; children finish
// on any carrier. Precondition: constructed and used on a fiber (spawn throws
// FrameworkContextError otherwise); at most one join() awaited at a time.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>

#include "turnstile/completion.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/task.hpp"

namespace turnstile {

class Scope {
 public:
  Scope() = default;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  ~Scope();

  // Starts `task` as a child fiber of the current fiber.
  void spawn(Task<> task);

  // Number of children still running.
  std::size_t running() const noexcept { return live_.load(std::memory_order_relaxed); }

  // co_await scope.join(): waits for every child, rethrows the first failure.
  [[nodiscard]] Task<> join();

 private:
  void child_done(const std::exception_ptr& error) noexcept;

  // 1 (the scope's own reference, dropped by join) + running children. The
  // acq_rel decrements pair with each other so the one that reaches zero sees
  // every child's writes (including first_error_).
  std::atomic<std::size_t> pending_{1};
  std::atomic<std::size_t> live_{0};  // children running: reporting only, relaxed
  std::mutex error_mu_;
  std::exception_ptr first_error_;  // guarded by error_mu_
  detail::Completion all_done_;
};

}  // namespace turnstile
