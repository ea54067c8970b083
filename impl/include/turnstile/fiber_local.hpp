// turnstile/fiber_local.hpp: FiberLocal<T> and FiberContext, scoped ambient
// per-request state.
//
//   inline turnstile::FiberLocal<std::string> request_id("request_id");
//
//   Task<> handle(Request r) {
//     co_await request_id.where(r.id, [&]() -> Task<> {   // bound for the whole
//       co_await validate(r);                             //   awaited extent, on
//       log("done");  // sees request_id.get() == r.id    //   every carrier
//     });
//   }
//
// FiberLocal<T> is a key. where(value, body) binds it for body's dynamic extent
// and restores the prior binding when body returns or throws ([FL-3.1],
// [FL-6.2]). A plain body runs now and where returns its result; a body that
// returns Task<R> makes where return Task<R>: the binding is pushed when that
// task starts and holds across every suspension and every change of carrier
// until it finishes ([FL-4.7]).
//
// Where bindings live ([FL-5.1], [FL-5.2]): in the current fiber's context slot
// (an immutable, reference-counted frame chain, detail/frame.hpp), never in a
// bare thread_local; code on a plain thread uses that thread's fallback slot.
// Two fibers on one carrier never see each other's bindings.
//
// Inheritance and handoff:
//   - Scope::spawn gives the child the parent's chain as it stood at the spawn
//     (one pointer copy) ([FL-3.2]); a child's where never changes what the
//     parent or a sibling sees ([FL-3.3]).
//   - detach and Channel carry no bindings ([FL-3.4]). FiberContext::capture()
//     snapshots every live binding (one pointer copy plus a reference), and
//     ctx.run(body) installs that snapshot for body's extent, then restores the
//     fiber's prior chain ([FL-3.5], [FL-3.6]). The runtime's position markers
//     (lane turn, activation turn) belong to the running fiber, not to the
//     snapshot: run keeps the fiber's own ([FL-3.8]).
//
// Lifetime ([FL-5.6]): a frame lives while any holder (a fiber's chain, a
// child, a snapshot, a newer frame) refers to it; the last holder frees it. A
// held FiberContext therefore keeps its bound values alive, however long it is
// kept. References returned by get()/try_get() are valid while the binding is
// in effect (or while a snapshot holding it lives).
//
// Preconditions: a key outlives every binding made with it (keys are compared
// by address; declare them static or at namespace scope).
//
// Compiler note: GCC 12.2 destroys a temporary aggregate (or a lambda capturing
// by value) twice when it is built inside a `co_await` operand, e.g.
// `co_await ch.send(Item{id, FiberContext::capture()})`: the snapshot's
// reference is dropped twice. Build such values in a named local first
// (clang is not affected; see impl/tests/fiber_local/fl_support.hpp).
//
// Thread safety: a FiberLocal key may be used from any number of fibers at
// once. FiberContext is immutable: one snapshot may be run on several fibers
// concurrently ([FL-6.4]). Reads never lock; where and run allocate one frame.
#pragma once

#include <concepts>
#include <string>
#include <type_traits>
#include <utility>

#include "turnstile/detail/frame.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/task.hpp"
#include "turnstile/trace.hpp"

namespace turnstile {

// get() of a key that has no binding in this context. [FL-4.2]
class UnboundFiberLocal : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {

template <class T>
class TypedFrame : public Frame {
 public:
  template <class U>
  TypedFrame(const void* key, Frame* prev, U&& v) : Frame(key, prev), value_(std::forward<U>(v)) {}
  const T& value() const noexcept { return value_; }

 protected:
  // For a subclass's destroy() only: once the last reference is gone nobody
  // reads the value, so it may be moved out ([FRAME-I3]).
  T take_value() noexcept(std::is_nothrow_move_constructible_v<T>) { return std::move(value_); }

 private:
  T value_;  // [FRAME-I1] immutable once published (read-only through value())
};

// Replaces the current context head with `next` for this object's lifetime and
// restores the saved head on destruction (return or throw) ([FL-3.1]).
class ContextSwap {
 public:
  explicit ContextSwap(FrameRef next) noexcept;
  ~ContextSwap();
  ContextSwap(const ContextSwap&) = delete;
  ContextSwap& operator=(const ContextSwap&) = delete;

 private:
  FrameRef saved_;
};

[[noreturn]] void throw_unbound(const std::string& name);

template <class F>
using body_result_t = std::invoke_result_t<F&>;

// Runtime access to a key's frame construction (used by StateLane's marker).
struct FiberLocalAccess;

// [TRACE-4.3] fl.install at construction, fl.uninstall at destruction (declare
// it before the ContextSwap, so it ends after the restore); sink off: one load.
class TraceInstall {
 public:
  // `ctx`: the id taken when the run was requested (a Task body starts later).
  // cppcheck-suppress passedByValue ; a sink parameter, moved into ctx_
  explicit TraceInstall(const Frame* head, std::string ctx = {}) noexcept : ctx_(std::move(ctx)) {
    if (trace::on()) [[unlikely]] begin(head);
  }
  ~TraceInstall() {
    if (on_) end();
  }
  TraceInstall(const TraceInstall&) = delete;
  TraceInstall& operator=(const TraceInstall&) = delete;

 private:
  void begin(const Frame* head) noexcept;
  void end() noexcept;
  bool on_ = false;
  std::string ctx_;
};

}  // namespace detail

template <class T>
class FiberLocal {
 public:
  FiberLocal() = default;
  explicit FiberLocal(std::string debug_name) : name_(std::move(debug_name)) {}
  FiberLocal(const FiberLocal&) = delete;  // a key is an identity
  FiberLocal& operator=(const FiberLocal&) = delete;

  const std::string& name() const noexcept { return name_; }

  // Binds `value` for body's extent. Plain body: runs now, returns its result.
  // Body returning Task<R>: returns a Task<R> that binds while it runs.
  template <class F>
    requires std::invocable<F&>
  auto where(T value, F body) const {
    using R = detail::body_result_t<F>;
    if constexpr (is_task_v<R>) {
      return where_task<typename R::value_type>(std::move(value), std::move(body));
    } else {
      TraceBind traced(*this, value);                      // [TRACE-4.3] bind/restore events
      detail::ContextSwap bound(push(std::move(value)));  // [FL-3.1] restored on exit
      return body();
    }
  }

  // The innermost binding; throws UnboundFiberLocal naming the key [FL-4.2].
  const T& get() const {
    if (const T* v = try_get()) return *v;
    detail::throw_unbound(name_);
  }
  // The innermost binding, or null when unbound: one walk [FL-4.5]. A binding
  // at depth 1 (the chain's head) is found inline, with one load of the head.
  const T* try_get() const noexcept {
    const detail::Frame* f = detail::current_head();  // [FL-5.1] this fiber's chain
    if (f != nullptr && f->key() != this) f = detail::find_binding_from(this, f->prev());
    const T* v = f ? &static_cast<const detail::TypedFrame<T>*>(f)->value() : nullptr;
    if constexpr (trace::traceable_v<T>) {
      if (trace::on()) [[unlikely]] trace_read(v);  // [TRACE-4.3] fl.read (every read path)
    }
    return v;
  }
  // The innermost binding, or `fallback` when unbound [FL-4.3].
  T or_else(T fallback) const {
    const T* v = try_get();
    return v ? *v : std::move(fallback);
  }
  bool is_bound() const noexcept { return try_get() != nullptr; }  // [FL-4.4]

 private:
  // A new head: this binding in front of the current chain ([FL-5.3]: the
  // previous head is shared, not copied).
  detail::FrameRef push(T value) const {
    detail::FrameRef prev = detail::current_context();
    auto* f = new detail::TypedFrame<T>(this, prev.get(), std::move(value));
    prev.release();  // [FRAME-I2] the frame owns that reference once it is constructed
    return detail::FrameRef::adopt(f);
  }

  // [TRACE-4.3] fl.bind when a where begins, fl.restore once it has restored.
  class TraceBind {
   public:
    TraceBind(const FiberLocal& key, const T& value) noexcept {
      if constexpr (trace::traceable_v<T>) {
        if (trace::on()) [[unlikely]] {
          key_ = &key;
          trace::fl_bind(key.trace_key(), trace::value_of(value));
        }
      }
    }
    ~TraceBind() {
      if (key_ != nullptr) trace::fl_restore(key_->trace_key());
    }
    TraceBind(const TraceBind&) = delete;
    TraceBind& operator=(const TraceBind&) = delete;

   private:
    const FiberLocal* key_ = nullptr;
  };
  std::string_view trace_key() const noexcept {
    if (name_.empty()) return "<unnamed>";
    return name_;
  }
  void trace_read(const T* v) const noexcept {
    if (v == nullptr) return trace::fl_read(trace_key(), nullptr);
    const TraceValue tv = trace::value_of(*v);
    trace::fl_read(trace_key(), &tv);
  }

  template <class R, class F>
  Task<R> where_task(T value, F body) const {
    // Runs as part of the awaiting fiber: the push and the restore both act on
    // that fiber's slot, whichever carrier runs these steps ([FL-4.7]).
    TraceBind traced(*this, value);  // [TRACE-4.3]
    detail::ContextSwap bound(push(std::move(value)));
    co_return co_await body();
  }

  friend struct detail::FiberLocalAccess;
  std::string name_;
};

namespace detail {
struct FiberLocalAccess {
  // A new chain head binding `key` to `value` in front of `prev`.
  template <class T>
  static FrameRef bind(const FiberLocal<T>& key, T value, FrameRef prev) {
    auto* f = new TypedFrame<T>(&key, prev.get(), std::move(value));
    prev.release();  // [FRAME-I2] the frame owns that reference once it is constructed
    return FrameRef::adopt(f);
  }

  // The binding of `key` in the chain starting at `head`, newest first; null
  // when unbound there.
  template <class T>
  static const T* find_in(const FiberLocal<T>& key, const Frame* head) noexcept {
    for (const Frame* f = head; f != nullptr; f = f->prev())
      if (f->key() == &key) return &static_cast<const TypedFrame<T>*>(f)->value();
    return nullptr;
  }

  // For a position key ([FL-3.8]) whose "nowhere" value is T{}: `onto` with the
  // key bound to its value in `running` (T{} when unbound there). Returns `onto`
  // itself, allocating nothing, when the two already agree.
  template <class T>
  static FrameRef carry_position(const FiberLocal<T>& key, FrameRef onto, const Frame* running) {
    const T* in_running = find_in(key, running);
    const T* in_onto = find_in(key, onto.get());
    T value = in_running != nullptr ? *in_running : T{};
    if ((in_onto != nullptr ? *in_onto : T{}) == value) return onto;
    return bind(key, std::move(value), std::move(onto));
  }
};

// Position keys ([FL-3.8]): the runtime's own markers that say where the running
// fiber is (inside which lane turn, which activation turn), not which request it
// serves. FiberContext::run keeps the running fiber's position: it neither
// carries a position binding in from the snapshot nor drops the fiber's own.
// At most kMaxPositionKeys, registered once each, before their first binding
// (the runtime does this when it creates each marker key); users cannot add any.
using PositionCarry = FrameRef (*)(FrameRef onto, const Frame* running);
inline constexpr int kMaxPositionKeys = 4;
void register_position_key(PositionCarry carry) noexcept;
// `snapshot` with every registered position key set as in the current chain.
FrameRef keep_position(FrameRef snapshot);
// `ctx` with every registered position key set to "nowhere": what a new turn
// (an actor turn, a lane turn) starts from ([FL-3.8] table).
FrameRef clear_position(FrameRef ctx);
}  // namespace detail

// An immutable snapshot of every live binding of the fiber that captured it.
class FiberContext {
 public:
  FiberContext() = default;  // the empty context

  // One pointer copy plus a reference, whatever the number of bindings [FL-5.3].
  static FiberContext capture() noexcept {
    FiberContext c(detail::current_context());
    if (trace::on()) [[unlikely]] c.trace_capture();  // [TRACE-4.3] fl.capture
    return c;
  }

  // Installs this snapshot for body's extent (replacing, not merging, the
  // fiber's chain), then restores the fiber's prior chain ([FL-3.5], [FL-3.6]).
  // The fiber's position (the lane turn or activation turn it is running) stays
  // as it was: neither taken from the snapshot nor dropped ([FL-3.8]).
  template <class F>
    requires std::invocable<F&>
  auto run(F body) const {
    using R = detail::body_result_t<F>;
    if constexpr (is_task_v<R>) {
      std::string traced;  // [TRACE-4.3] the ctx id (label) is taken now, not at the start
      if (trace::on()) [[unlikely]] traced = trace::ctx_id(head_.get());
      return run_task<typename R::value_type>(head_, std::move(body), std::move(traced));
    } else {
      detail::TraceInstall traced(head_.get());  // [TRACE-4.3] install/uninstall events
      detail::ContextSwap installed(detail::keep_position(head_));  // [FL-3.8]
      return body();
    }
  }

  bool empty() const noexcept { return !head_; }
  // The snapshot's chain head (for the runtime: lanes install it per turn).
  const detail::FrameRef& head() const noexcept { return head_; }
  friend bool operator==(const FiberContext&, const FiberContext&) noexcept = default;

 private:
  explicit FiberContext(detail::FrameRef head) noexcept : head_(std::move(head)) {}
  void trace_capture() const noexcept;

  // Static, taking the head by value: the Task holds its own reference to the
  // snapshot and never reads this FiberContext object ([FL-3.5], [FL-5.6]).
  template <class R, class F>
  static Task<R> run_task(detail::FrameRef head, F body, std::string ctx) {
    detail::TraceInstall traced(head.get(), std::move(ctx));  // [TRACE-4.3]
    // Read when the task starts, on the awaiting fiber: its position then ([FL-3.8]).
    detail::ContextSwap installed(detail::keep_position(std::move(head)));
    co_return co_await body();
  }

  detail::FrameRef head_;
};

}  // namespace turnstile
