// scope.cpp: Scope's child counting and join.
#include "turnstile/scope.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "turnstile/errors.hpp"
#include "turnstile/trace.hpp"

namespace turnstile {

Scope::~Scope() {
  const std::size_t pending = pending_.load(std::memory_order_acquire);
  if (pending != 1) {
    // [RT-5.4] a child still running would outlive the bindings it borrowed.
    std::fprintf(stderr,
                 "turnstile: Scope%s%s%s created at %s:%u (in %s) was destroyed with %zu child "
                 "fiber(s) still running. Await scope.join() on every path out of it, or use "
                 "co_await scoped([&](Scope& s) -> Task<R> { ... }), which joins the children "
                 "also when the body throws [RT-5.4]\n",
                 name_.empty() ? "" : " '", name_.c_str(), name_.empty() ? "" : "'", file_,
                 static_cast<unsigned>(line_), function_, pending - 1);
    std::abort();
  }
}

void Scope::spawn(Task<> task) {
  detail::FiberState* parent = detail::current_fiber();
  if (parent == nullptr)
    throw FrameworkContextError(
        "Scope::spawn called outside a fiber: on a plain thread, or inside a lane turn, which "
        "runs on no fiber and cannot wait to join a child ([LANE-8.10]); start work from a "
        "lane turn with detach (it enters the lane normally, [LANE-8.5]) [RT-5.1]");
  if (!task.valid()) [[unlikely]]  // [RT-1.6] before anything is counted
    throw std::logic_error("turnstile: Scope::spawn of an empty Task (default-constructed, moved "
                           "from, or already started) [RT-1.6]");
  pending_.fetch_add(1, std::memory_order_relaxed);  // ordered before the post that starts it
  live_.fetch_add(1, std::memory_order_relaxed);
  std::string child_name;
  if (trace::on()) [[unlikely]] child_name = detail::trace_spawn(true);  // [TRACE-4.3] structured
  // [RT-5.2] the child inherits the parent's context head as it stands now.
  detail::start_fiber(*parent->scheduler, std::move(task), parent->context,
                      [this](const std::exception_ptr& e) noexcept { child_done(e); },
                      std::move(child_name));
}

void Scope::child_done(const std::exception_ptr& error) noexcept {
  if (error) {
    detail::LockGuard lock(error_mu_);
    if (!first_error_) first_error_ = error;  // [RT-5.3] first failure wins
  }
  live_.fetch_sub(1, std::memory_order_relaxed);
  // acq_rel: releases this child's writes; the last decrement acquires all of
  // them before it completes the join. After this line the scope may be gone.
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) all_done_.set();
}

Task<> Scope::join() {
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    co_await detail::CompletionAwaiter(all_done_);  // [RT-5.3] wait for every child
  }
  // Every child has finished: re-arm for another round of spawns.
  all_done_.reset();
  pending_.store(1, std::memory_order_relaxed);
  std::exception_ptr error;
  {
    detail::LockGuard lock(error_mu_);
    error = std::exchange(first_error_, nullptr);
  }
  // join() is a coroutine (an implicit co_return ends it); cppcheck 2.10 does not model
  // coroutines and reports a missing return here.
  // cppcheck-suppress missingReturn
  if (error) std::rethrow_exception(error);  // [RT-5.3]
}

}  // namespace turnstile
