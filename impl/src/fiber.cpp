// fiber.cpp: current-fiber bookkeeping, fiber start, detach, yield.
#include "turnstile/fiber.hpp"

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <typeinfo>

#include "turnstile/errors.hpp"
#include "turnstile/trace.hpp"

namespace turnstile {
namespace detail {

namespace {
thread_local FiberState* tls_current_fiber = nullptr;
thread_local FrameRef tls_fallback_context;  // [RT-3.2] plain-thread context slot
}  // namespace

// [FL-5.1] The head of the current slot (the current fiber's, else the fallback):
// a cache, kept equal to that slot's head by every write through ContextSlot and
// by CurrentFiberScope, so a lookup starts with one load. Constant-initialised
// and trivially destructible: reading it needs no thread-local init guard.
// Initial-exec, under a fixed symbol name: current_head() (fiber.hpp) reads it
// with one fs-relative load. With TURNSTILE_NO_INLINE_TLS, the default model
// (loadable with dlopen) and only the out-of-line current_head() reads it.
#ifdef TURNSTILE_NO_INLINE_TLS
thread_local const Frame* tls_head = nullptr;
#else
__attribute__((tls_model("initial-exec"))) thread_local const Frame* tls_head
    __asm__("turnstile_detail_tls_head") = nullptr;
#endif

namespace {

FrameRef& current_slot() noexcept {
  FiberState* f = tls_current_fiber;
  return f != nullptr ? f->context : tls_fallback_context;
}

std::mutex handler_mu;
UnhandledExceptionHandler& handler_slot() {
  static UnhandledExceptionHandler h;
  return h;
}

FiberRoot run_fiber(Task<> task, FiberDone on_done) {
  std::exception_ptr error;
  try {
    co_await std::move(task);
  } catch (...) {
    error = std::current_exception();
  }
  on_done(error);  // runs as the fiber's last step, with its context current
  finish_fiber();
}
}  // namespace

// Non-inlined accessors: see fiber.hpp on thread-locals across suspensions.
[[gnu::noinline]] FiberState* current_fiber() noexcept { return tls_current_fiber; }

[[gnu::noinline]] ContextSlot current_context() noexcept { return ContextSlot(current_slot()); }

[[gnu::noinline]] ContextSlot& ContextSlot::operator=(FrameRef next) noexcept {
  FrameRef old = std::exchange(slot_, std::move(next));
  tls_head = slot_.get();  // [FL-5.1] before `old` is released
  return *this;
}

[[gnu::noinline]] FrameRef ContextSlot::exchange(FrameRef next) noexcept {
  FrameRef old = std::exchange(slot_, std::move(next));
  tls_head = slot_.get();  // [FL-5.1]
  return old;
}

[[gnu::noinline]] FrameRef exchange_context(FrameRef next) noexcept {
  FrameRef& slot = current_slot();
  FrameRef old = std::exchange(slot, std::move(next));
  tls_head = slot.get();  // [FL-5.1]
  return old;
}

// Defined here, beside the slots, so a lookup is one out-of-line call that
// reads the cached head directly (see impl/bench/fiber_local_bench.cpp).
[[gnu::noinline]] const Frame* find_binding(const void* key) noexcept {
  return find_binding_from(key, tls_head);
}

[[gnu::noinline]] const Frame* find_binding_from(const void* key, const Frame* from) noexcept {
  for (const Frame* f = from; f != nullptr; f = f->prev()) {
    if (f->key() == key) return f;  // [FL-5.5] newest first
  }
  return nullptr;
}

#ifndef TURNSTILE_DETAIL_INLINE_HEAD
[[gnu::noinline]] const Frame* current_head() noexcept { return tls_head; }
#endif

[[gnu::noinline]] CurrentFiberScope::CurrentFiberScope(FiberState* f) noexcept
    : previous_(tls_current_fiber) {
  tls_current_fiber = f;  // [RT-3.1] install the fiber for this step
  tls_head = current_slot().get();
}
[[gnu::noinline]] CurrentFiberScope::~CurrentFiberScope() {
  tls_current_fiber = previous_;
  tls_head = current_slot().get();
}

void FiberResume::arm(std::coroutine_handle<> h) {
  fiber_ = current_fiber();
  if (fiber_ == nullptr)
    throw FrameworkContextError(
        "a turnstile awaitable was awaited outside a fiber; start the coroutine with detach, "
        "Scope::spawn or sync_wait [RT-3.1]");
  handle_ = h;
}

void start_fiber(Scheduler& s, Task<> task, FrameRef ctx, FiberDone on_done,
                 std::string trace_name) {
  if (!task.valid()) [[unlikely]]  // [RT-1.6] refused at the call, not later in the fiber
    throw std::logic_error(
        "turnstile: an empty Task (default-constructed, moved from, or already started) was "
        "handed to detach, Scope::spawn or sync_wait [RT-1.6]");
  FiberRoot root = run_fiber(std::move(task), std::move(on_done));
  s.post(prepare_fiber(s, root, std::move(ctx), std::move(trace_name)));  // [RT-3.3] posted
}

Runnable& prepare_fiber(Scheduler& s, FiberRoot root, FrameRef ctx, std::string trace_name) noexcept {
  auto& p = root.handle.promise();
  p.state.scheduler = &s;
  p.state.home = &s;
  s.fiber_started();
  p.state.context = std::move(ctx);
  p.state.trace_name = std::move(trace_name);
  return p;
}

void finish_fiber() noexcept {
  // [FL-5.6] [FL-5.1] The fiber's chain is released here, its slot and the
  // cached head emptied first, not later with the coroutine frame (the cache
  // would still point at the frames being freed): a value destructor that
  // reads a FiberLocal then finds it unbound, never walks a freed frame.
  { const FrameRef last = exchange_context(FrameRef()); }
  current_fiber()->home->fiber_finished();
}

std::string trace_spawn(bool structured) {
  std::string child = trace::take_label_or_id();
  TraceEvent e("fiber.spawn");
  e.str("child", child).flag("structured", structured);
  trace::emit(e);
  return child;
}

void report_unhandled(const std::exception_ptr& error, const char* where) noexcept {
  UnhandledExceptionHandler h;
  {
    std::lock_guard lock(handler_mu);
    h = handler_slot();
  }
  if (h) {
    try {
      h(error, where);
      return;
    } catch (...) {
      std::fputs("turnstile: the unhandled-exception handler threw\n", stderr);
    }
  }
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "turnstile: %s ended with an exception: %s\n", where, e.what());
  } catch (...) {
    std::fprintf(stderr, "turnstile: %s ended with a non-standard exception\n", where);
  }
}

}  // namespace detail

void detach(Scheduler& s, Task<> task) {
  detail::FrameRef start;  // [RT-3.4] [FL-3.4] an empty context: detach carries no bindings
  std::string name;
  if (trace::on()) [[unlikely]] name = detail::trace_spawn(false);  // [TRACE-4.3] a handoff
  detail::start_fiber(s, std::move(task), std::move(start), [](const std::exception_ptr& e) {
    if (e) detail::report_unhandled(e, "a detached fiber");  // [RT-3.5]
  }, std::move(name));
}

UnhandledExceptionHandler set_unhandled_exception_handler(UnhandledExceptionHandler h) {
  std::lock_guard lock(detail::handler_mu);
  return std::exchange(detail::handler_slot(), std::move(h));
}

Scheduler& current_scheduler() {
  detail::FiberState* f = detail::current_fiber();
  if (f == nullptr)
    throw FrameworkContextError("current_scheduler() called on a plain thread (no fiber)");
  return *f->scheduler;
}

void ResumeOn::await_suspend(std::coroutine_handle<> h) {
  resume_.arm(h);
  if (target_ != nullptr) resume_.fiber()->scheduler = target_;  // [RT-3.6]
  resume_.post();
}

// The trace reads and fills the running fiber's name through this hook
// (declared in trace.hpp), so the trace module includes no fiber header.
std::string* trace::detail::current_fiber_trace_name() noexcept {
  turnstile::detail::FiberState* f = turnstile::detail::current_fiber();
  return f == nullptr ? nullptr : &f->trace_name;
}

}  // namespace turnstile
