// task.cpp: the coroutine-transfer trampoline (see task.hpp, [RT-1.3]).
#include "turnstile/task.hpp"

#include <stdexcept>

namespace turnstile::detail {

namespace {
// Per-thread trampoline state. Touched only inside resume_step/transfer_to,
// which never suspend, so no coroutine caches these addresses across a
// suspension.
thread_local std::coroutine_handle<> tls_next{};
thread_local bool tls_in_step = false;
}  // namespace

[[gnu::noinline]] void resume_step(std::coroutine_handle<> h) noexcept {
  const bool outer = !tls_in_step;
  if (!outer) {  // a step started inside a step (a nested sync call): queue it
    tls_next = h;
    return;
  }
  tls_in_step = true;
  tls_next = h;
  while (tls_next) {
    std::coroutine_handle<> next = tls_next;
    tls_next = {};
    next.resume();  // returns when `next` suspends; it may have set tls_next
  }
  tls_in_step = false;
}

// [RT-1.6] an await that breaks a precondition names it, at the co_await.
void throw_empty_task() {
  throw std::logic_error(
      "turnstile: co_await on an empty Task: it holds no coroutine (default-constructed, moved "
      "from, or already handed to detach, Scope::spawn, when_all or sync_wait) [RT-1.6]");
}

void throw_consumed_task() {
  throw std::logic_error(
      "turnstile: co_await on a Task whose result was already taken: a Task is awaited once "
      "[RT-1.6]");
}

[[gnu::noinline]] void transfer_to(std::coroutine_handle<> h) noexcept { resume_step(h); }

}  // namespace turnstile::detail
