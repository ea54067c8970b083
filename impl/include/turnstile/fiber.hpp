// turnstile/fiber.hpp: fibers, the unit of execution: detach, yield,
// resume_on, and the per-fiber context slot.
//
// A fiber is one top-level Task run to completion by a scheduler: started by
// detach(), Scope::spawn() or sync_wait(). All the Tasks it awaits run as part
// of it. A fiber knows its scheduler and carries an opaque context slot (the
// head of its FiberLocal binding chain); the runtime installs the fiber's state
// as "current" for every step it runs, on whichever carrier thread that is, and
// restores the previous state after ([RT-3.1]).
//
// Code on a plain thread (main, a test body, a tool) has no fiber; it uses a
// per-thread fallback context slot ([RT-3.2]).
//
// Ordering and where things run:
//   - detach(s, t) posts the fiber's start to `s`; no part of `t`, not even the
//     part before its first suspension, runs inside detach() ([RT-3.3]). The new
//     fiber starts with an empty context: detach carries no bindings ([RT-3.4]).
//   - An exception escaping a detached fiber goes to the unhandled-exception
//     handler (default: one line on stderr), and the process goes on ([RT-3.5]).
//   - co_await yield() reposts the current fiber at the back of its scheduler's
//     queue; co_await resume_on(s) moves the fiber to scheduler `s` ([RT-3.6]).
//
// Never read the current fiber through a bare thread_local across a suspension
// (the coroutine may resume on another carrier, and a compiler may cache the
// thread-local's address): use the non-inlined accessors below.
#pragma once

#include <coroutine>
#include <exception>
#include <functional>
#include <string>
#include <utility>

#include "turnstile/detail/frame.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/sync.hpp"
#include "turnstile/task.hpp"

namespace turnstile {

namespace detail {

using Frame = BasicFrame<StdSync>;
using FrameRef = BasicFrameRef<StdSync>;

// Per-fiber state. Touched only by the fiber's own steps (one at a time).
struct FiberState {
  Scheduler* scheduler = nullptr;  // where the fiber's next step is posted
  Scheduler* home = nullptr;       // where it started (told when it finishes)
  FrameRef context;  // head of the fiber's binding chain ([FL-5.1])
  std::string trace_name;  // [TRACE-4.3] set only while a trace sink is on
};

// The fiber whose step runs on this thread, or null on a plain thread.
FiberState* current_fiber() noexcept;

// The context slot of the current fiber, or this thread's fallback slot
// ([FL-5.1], [RT-3.2]), as current_context() returns it: it reads as the slot's
// FrameRef, and a write through it also refreshes this thread's cached chain
// head (what find_binding reads, with one load). Use it at once, within one
// step: never keep it across a suspension (the next step may run elsewhere).
class ContextSlot {
 public:
  explicit ContextSlot(FrameRef& slot) noexcept : slot_(slot) {}
  Frame* get() const noexcept { return slot_.get(); }
  explicit operator bool() const noexcept { return static_cast<bool>(slot_); }
  operator const FrameRef&() const noexcept { return slot_; }  // NOLINT(google-explicit-constructor)
  // Replaces the slot's chain (the previous one is released after the cache is
  // refreshed, so a destructor it runs reads the new chain).
  ContextSlot& operator=(FrameRef next) noexcept;
  // Replaces the slot's chain and returns the previous one.
  FrameRef exchange(FrameRef next) noexcept;

 private:
  FrameRef& slot_;
};
ContextSlot current_context() noexcept;
// current_context().exchange(next) in one out-of-line call (ContextSwap's).
FrameRef exchange_context(FrameRef next) noexcept;

// Walks the current context's chain newest-first for `key` ([FL-5.5]); null
// when unbound. One out-of-line call that starts from the head cached for this
// thread's current slot.
const Frame* find_binding(const void* key) noexcept;
// The same walk from `from` (a frame of the current chain) down.
const Frame* find_binding_from(const void* key, const Frame* from) noexcept;

// The head of the current slot's chain (the cached head above): FiberLocal's
// inlined fast path for a binding at depth 1. On x86-64 Linux (GCC, Clang) it
// is one fs-relative load of an initial-exec thread-local in an `asm volatile`
// with a memory clobber, so the compiler can neither keep the value nor the
// thread-local's address across a suspension (a coroutine may resume on
// another carrier, whose head this is not: see the top of this header).
// Elsewhere, or with TURNSTILE_NO_INLINE_TLS defined, an out-of-line call.
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(TURNSTILE_NO_INLINE_TLS)
#define TURNSTILE_DETAIL_INLINE_HEAD 1
inline const Frame* current_head() noexcept {
  const Frame* head;
  asm volatile(
      "movq turnstile_detail_tls_head@gottpoff(%%rip), %0\n\t"
      "movq %%fs:(%0), %0"
      : "=r"(head)
      :
      : "memory");
  return head;
}
#else
const Frame* current_head() noexcept;
#endif

// Installs `f` as the current fiber for this object's lifetime.
class CurrentFiberScope {
 public:
  explicit CurrentFiberScope(FiberState* f) noexcept;
  ~CurrentFiberScope();
  CurrentFiberScope(const CurrentFiberScope&) = delete;
  CurrentFiberScope& operator=(const CurrentFiberScope&) = delete;

 private:
  FiberState* previous_;
};

// A posted resumption of a suspended coroutine as a step of `fiber`. It lives
// inside the suspended coroutine's awaiter, so resuming never allocates.
class FiberResume final : public Runnable {
 public:
  FiberResume() = default;
  // Captures the current fiber and `h`. Throws FrameworkContextError when there
  // is no current fiber (a coroutine not run by a turnstile scheduler).
  void arm(std::coroutine_handle<> h);
  // Posts the resumption to the fiber's scheduler [RT-4.2].
  void post() { fiber_->scheduler->post(*this); }
  FiberState* fiber() const noexcept { return fiber_; }
  void run() noexcept override {
    CurrentFiberScope scope(fiber_);
    resume_step(handle_);
  }

 private:
  FiberState* fiber_ = nullptr;
  std::coroutine_handle<> handle_{};
};

// The coroutine that roots a fiber. Its promise holds the FiberState, so a
// fiber costs one frame besides its task's.
class FiberRoot {
 public:
  struct promise_type final : Runnable {
    FiberState state;
    FiberRoot get_return_object() noexcept {
      return FiberRoot{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    std::suspend_never final_suspend() const noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }  // the body catches everything
    // [RT-1.7] the root frame, like a task's, comes from the block cache.
    static void* operator new(std::size_t size) { return allocate_block(size); }
    static void operator delete(void* frame, std::size_t size) noexcept { free_block(frame, size); }
    // The start step of the fiber.
    void run() noexcept override {
      CurrentFiberScope scope(&state);
      resume_step(std::coroutine_handle<promise_type>::from_promise(*this));
    }
  };
  std::coroutine_handle<promise_type> handle;
};

// Called inside the finished fiber, on its last step, with the error that
// escaped its task (or null). Must not throw.
using FiberDone = std::function<void(std::exception_ptr)>;

// Creates a fiber for `task` on `s` with context `ctx` and posts its start.
// `trace_name` names it in traces ([TRACE-4.3]; empty: named on first event).
void start_fiber(Scheduler& s, Task<> task, FrameRef ctx, FiberDone on_done,
                 std::string trace_name = {});

// For a runtime coroutine that is itself a fiber's root (it returns FiberRoot,
// catches everything, and its last statement is finish_fiber()), so the fiber
// costs one frame: sets up the fiber's state (scheduler and home `s`, context
// `ctx`, trace name) and counts it on `s` (fiber_started), but does not post its
// start. Post the returned item to `s`, or have a completion waiter post it,
// when the fiber may start: never inline ([RT-3.3]).
Runnable& prepare_fiber(Scheduler& s, FiberRoot root, FrameRef ctx,
                        std::string trace_name = {}) noexcept;
// The last statement of such a root: releases the fiber's binding chain (its
// slot and the thread's cached head are emptied first, so a destructor run by
// that release sees no binding, never a frame being freed, [FL-5.1]), then tells
// the fiber's home it finished.
void finish_fiber() noexcept;
// [TRACE-4.3] emits fiber.spawn for a new child and returns its trace name
// (the pending trace label, or a fresh id). Call only while trace::on().
std::string trace_spawn(bool structured);

void report_unhandled(const std::exception_ptr& error, const char* where) noexcept;

}  // namespace detail

// Starts `task` as a new fiber on `s`. The start is posted ([RT-3.3]); the fiber
// carries no bindings of the caller ([RT-3.4]); an escaping exception goes to
// the unhandled-exception handler ([RT-3.5]).
void detach(Scheduler& s, Task<> task);

// Replaces the handler called with an exception that escaped a detached fiber
// ([RT-3.5], where = "a detached fiber") or a call_at callback (where = "a timer
// callback"); by default, and when the handler itself throws, one line on
// stderr. A StateLane's try_post work never comes here: its exceptions go to
// the lane's own error handler, whose default writes the lane's line
// ([LANE-7.5]). Returns the previous handler. Thread-safe.
using UnhandledExceptionHandler = std::function<void(std::exception_ptr, const char* where)>;
UnhandledExceptionHandler set_unhandled_exception_handler(UnhandledExceptionHandler h);

// The scheduler of the current fiber. Throws FrameworkContextError on a plain
// thread (no fiber).
Scheduler& current_scheduler();

// True when the caller runs as a step of a fiber.
inline bool on_fiber() noexcept { return detail::current_fiber() != nullptr; }

// co_await yield(): repost this fiber at the back of its scheduler's queue.
// co_await resume_on(s): continue this fiber on scheduler `s` (posted).
class ResumeOn {
 public:
  explicit ResumeOn(Scheduler* target) noexcept : target_(target) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h);
  void await_resume() const noexcept {}

 private:
  Scheduler* target_;  // null: the fiber's own scheduler
  detail::FiberResume resume_;
};
inline ResumeOn yield() noexcept { return ResumeOn(nullptr); }
inline ResumeOn resume_on(Scheduler& s) noexcept { return ResumeOn(&s); }

}  // namespace turnstile
