// turnstile/activation.hpp: Activation<State>, actor turns on a serial lane and
// an interleaved lane.
//
//   Activation<Cart> cart("cart/user-42", Cart{});
//   auto add_item = [item](TurnContext<Cart>& ctx) -> Task<> {
//     ctx.state().items.push_back(item);        // no lock: this is a turn
//     co_await ctx.state().save();              // the turn is still open
//   };                                          // the turn ends when this settles
//   co_await cart.call("add_item", std::move(add_item));  // named local: GCC 12
//
// A turn is one execution of one method against one activation. It starts when
// the runtime dispatches the call and ends when the body's Task settles, not at
// its first suspension ([TURN-1.1]).
//
// Two bodies ([TURN-1.3]), checked by the TurnBody concept, so a wrong body is
// one "constraints not satisfied" error at the call (a synchronous read is
// `auto n = cart.call("count", [](Cart& c) { return c.items.size(); });`):
//   - `body(TurnContext<State>&) -> Task<R>`: a coroutine; the turn lasts until
//     its Task settles, across its awaits.
//   - `body(State&) -> R` (R may be void): a plain function, run as one step of
//     the turn; call() returns Task<R> (a returned reference is copied out
//     inside the turn). It is the coroutine form with a body that awaits
//     nothing: the same lane, chain, wait check at the await, position keys
//     and watchdog apply.
//
// Guarantees
//   - Serial lane (the default): a serial turn starts once the previous serial
//     turn has settled; serial turns never overlap, across all their awaits
//     ([TURN-3.1], [TURN-4.1]). They start in arrival order, which is the order
//     of the call() calls, even when the returned Tasks are awaited later
//     ([TURN-2.2]). No priority, no bound, no reordering ([TURN-2.4]).
//   - Interleaved lane: a call to a method in `interleaved_methods`, or any call
//     when `reentrancy == Reentrancy::always`, starts at once and is not waited
//     for; it observes state changing across its awaits ([TURN-3.2]). Which
//     lane a call takes is decided by the activation and method, never by the
//     caller ([TURN-3.3]).
//   - Steps of all turns of one activation run one at a time on its Strand, so
//     between two awaits nothing else touches the state ([TURN-1.2]).
//   - A throwing turn fails its caller; the next turn still runs ([TURN-2.5]).
//   - call() always queues, whoever calls ([TURN-2.2]). Awaiting the returned
//     Task from a turn that would thereby wait for itself (a self-call, a
//     cycle through other activations, or a cycle of independent requests)
//     throws TurnReentrancyError at that co_await, naming every hop; the call
//     still runs after the turns ahead of it ([TURN-7.1]). An unawaited
//     self-call runs once the current turn has settled.
//   - Position ([FL-3.9]): a turn starts with the caller's bindings but not the
//     caller's position: StateLane::current() is null in it, whatever lane
//     turn made the call, and its own turn marker is set.
//   - Slow turns: a turn that runs longer than `slow_turn` is reported once,
//     to `on_slow_turn` ([TURN-4.2]): while it runs, by the activation's
//     watchdog, or by check_slow_turns() / Host::check_slow_turns(), or else at
//     settle. The watchdog is one timer per activation on the scheduler's timer:
//     armed when a turn starts and none is armed, always for the oldest running
//     turn not yet reported (so each turn is reported at its own deadline), and
//     cancelled when the last running turn settles. Its report runs as an item
//     of the activation's underlying scheduler (not its strand, so a turn that
//     blocks its carrier is still reported); a turn settling meanwhile waits
//     for that report to return.
//
// Where a continuation resumes: the caller of call() resumes in a step posted
// to its own fiber's scheduler once the turn has settled ([RT-4.2]). Turn
// bodies run as fibers on the activation's Strand.
//
// Outside the turn sequence ([TURN-5.1]): ctx.task(body) starts work that may
// outlive the turn, carries no turn marker and touches state only through
// turn(fn), a full serial turn; snapshot() returns a copy of the state as the
// last serial turn left it, for reads outside a turn.
//
// Scheduler: the constructor defaults to default_scheduler(), a process-wide
// ThreadPool of min(hardware threads, 4) carriers created on first use and
// drained at static destruction; scheduler.hpp says when to pass your own (a
// ManualScheduler in tests, your own pool to size, isolate or shut down).
//
// Thread safety: call(), queued(), running(), snapshot() from any thread or
// fiber. Precondition, checked: an activation is destroyed only when no turn is
// queued or running ([TURN-1.1]) and no task started by ctx.task() is still
// alive ([TURN-5.4]); otherwise the process stops with a message naming the
// activation and what is still alive.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "turnstile/completion.hpp"
#include "turnstile/detail/turn_chain.hpp"
#include "turnstile/detail/wait_graph.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/strand.hpp"
#include "turnstile/task.hpp"
#include "turnstile/timer.hpp"
#include "turnstile/trace.hpp"

namespace turnstile {

enum class Reentrancy { never, always };

struct ActivationOptions {
  using Clock = std::chrono::steady_clock;
  using SlowTurnHandler = std::function<void(const std::string& activation_id,
                                             const std::string& method,
                                             std::chrono::nanoseconds elapsed)>;
  Reentrancy reentrancy = Reentrancy::never;
  std::set<std::string> interleaved_methods;
  std::chrono::nanoseconds slow_turn = std::chrono::seconds(5);
  // Called at most once per turn, from the watchdog (an item of the
  // scheduler), check_slow_turns()'s caller or the settling turn. It must not
  // wait for this activation's turns. Default: a warning on stderr.
  SlowTurnHandler on_slow_turn;
  // Measures a turn's elapsed time. Default: the scheduler's clock
  // (Scheduler::now(): steady_clock on a ThreadPool, virtual on a
  // ManualScheduler), the one the watchdog's deadline is armed on. [TURN-4.2]
  std::function<Clock::time_point()> clock;
};

// An await of a call that would wait for a turn it is part of. [TURN-7.1]
class TurnReentrancyError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct ActivationStats {
  std::string id;
  std::size_t queued = 0;
  std::size_t running = 0;
  std::uint64_t turns_completed = 0;
  std::uint64_t slow_turns = 0;
};

namespace detail {
using WaitGraph = BasicWaitGraph<StdSync>;
// The one wait-for relation of the process (all activations): [TURN-7.1].
WaitGraph& wait_graph() noexcept;

// A call, and while its turn runs, the ambient turn marker of the fibers that
// are part of the turn: its body and the Scope children it joins. A position
// key ([FL-3.8]): it is reset at every turn boundary (a call's turn starts with
// the caller's bindings but not the caller's marker) and kept by
// FiberContext::run. Its node in the wait graph is how an await is attributed
// to the turn that waits ([TURN-7.1]).
struct TurnMarker : WaitGraph::Node {
  TurnMarker(WaitGraph::Lane* lane, const std::string* activation_id, std::string m, bool serial)
      : WaitGraph::Node(lane, serial), activation(activation_id), method(std::move(m)) {}
  const std::string* activation;  // the activation's id; it outlives its calls [TURN-1.1]
  const std::string method;
};
using TurnMarkerRef = std::shared_ptr<const TurnMarker>;
const FiberLocal<TurnMarkerRef>& turn_marker() noexcept;

// The frame that binds turn_marker() to a call for its turn, embedded in the
// call's record instead of allocated ([FL-3.8]): the turn's fiber starts with it
// as its context head. Its value owns the record (a reference to the record that
// holds the frame), so the record lives while the frame is held (by the fiber, a
// child, a snapshot); the last release of the frame drops that reference
// ([FRAME-I3]), which may free the record and the frame with it.
class TurnMarkerFrame final : public TypedFrame<TurnMarkerRef> {
 public:
  TurnMarkerFrame(Frame* prev_adopted, TurnMarkerRef record) noexcept
      : TypedFrame<TurnMarkerRef>(&turn_marker(), prev_adopted, std::move(record)) {}

 protected:
  void destroy() noexcept override {
    TurnMarkerRef last = take_value();  // [FRAME-I3] no holder is left: nobody reads it
    this->~TurnMarkerFrame();
  }  // `last` dropped here: it may free the record, and this frame with it
};
using TurnChain = BasicTurnChain<StdSync>;

// The await of a call's result ([TURN-7.1]): records that the current fiber's
// turn (if any) waits for `target`, or throws TurnReentrancyError naming every
// hop when that wait would close a cycle. Ends the wait at destruction.
class CallWait {
 public:
  CallWait(const TurnMarker& target, std::string_view trace_call);
  ~CallWait();
  CallWait(const CallWait&) = delete;
  CallWait& operator=(const CallWait&) = delete;

 private:
  TurnMarkerRef waiter_;  // keeps the waiter's node alive while the edge exists
  std::optional<WaitGraph::Edge> edge_;
};
}  // namespace detail

// The type-erased part of an activation: identity, counters, slow-turn watch.
class ActivationBase {
 public:
  ActivationBase(std::string id, ActivationOptions options, Scheduler& scheduler);
  ActivationBase(const ActivationBase&) = delete;
  ActivationBase& operator=(const ActivationBase&) = delete;
  virtual ~ActivationBase();

  const std::string& id() const noexcept { return id_; }
  // Serial calls made whose turn has not started (a counter). [TURN-2.3]
  std::size_t queued() const noexcept { return queued_.load(std::memory_order_relaxed); }
  // Turns started and not yet settled (serial and interleaved).
  std::size_t running() const noexcept { return running_.load(std::memory_order_relaxed); }
  std::uint64_t turns_completed() const noexcept { return completed_.load(std::memory_order_relaxed); }
  std::uint64_t slow_turns() const noexcept { return slow_.load(std::memory_order_relaxed); }
  ActivationStats stats() const;
  // Reports every running turn that has exceeded slow_turn and was not yet
  // reported. [TURN-4.2]
  void check_slow_turns();
  // True when `method` takes the interleaved lane on this activation. [TURN-3.3]
  bool is_interleaved(const std::string& method) const;

 protected:
  // One running turn's slow-turn watch [TURN-4.2], kept in its call's record
  // (no allocation) and linked into the running list, oldest first, from
  // turn_started to turn_settled. Fields guarded by turns_mu_ (a nested record:
  // the attribute cannot name it; only turns_mu_ holders reach the list).
  struct RunningTurn {
    const std::string* method = nullptr;
    ActivationOptions::Clock::time_point started{};
    bool reported = false;   // one report per turn, whoever makes it
    bool reporting = false;  // the watchdog reports it now: its settle waits
    std::string_view trace_call;  // [TRACE-4.3] the call's id while traced
    RunningTurn* older = nullptr;  // the running list
    RunningTurn* newer = nullptr;
  };
  // Both run in the turn's fiber, so on the activation's strand ([TURN-1.2]).
  void turn_started(RunningTurn& t, const std::string& method, std::string_view trace_call = {});
  void turn_settled(RunningTurn& t);
  // A counter with one writer at a time (running_, completed_): relaxed load
  // and store; readers on other threads read a value some step left.
  template <class T>
  static void bump(std::atomic<T>& counter, int by) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + static_cast<T>(by),
                  std::memory_order_relaxed);
  }
  // [TRACE-4.3] turn events, called only while the sink is on. trace_call emits
  // turn.call (turn.reentry when `task` is set) and returns the call id.
  std::string trace_call(const std::string& method, bool serial, std::string_view task) const;
  void trace_turn(const char* ev, std::string_view call, const char* field,
                  std::string_view value) const noexcept;

  std::shared_ptr<Strand> strand_;  // shared with its running drain
  detail::TurnChain chain_;
  detail::WaitGraph::Lane wait_lane_;  // this activation's serial lane in the wait graph
  std::atomic<std::size_t> queued_{0};   // counters: relaxed, read for reporting only
  // Written only by turn_started()/turn_settled(), which run as steps of the
  // activation's strand, one at a time and each ordered after the one before
  // ([TURN-1.2]): a plain load and store, not a read-modify-write (bump()).
  std::atomic<std::size_t> running_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> slow_{0};
  std::atomic<std::size_t> tasks_{0};  // ctx.task fibers alive (checked at destruction)

 public:
  // Called by a ctx.task fiber as it ends (template code in activation_impl.hpp).
  void task_finished() noexcept { tasks_.fetch_sub(1, std::memory_order_relaxed); }
  // ctx.task fibers still alive.
  std::size_t tasks() const noexcept { return tasks_.load(std::memory_order_relaxed); }

 private:
  // The activation's one watchdog timer entry [TURN-4.2] (activation.cpp).
  class Watchdog;
  void report_slow(const std::string& method, std::chrono::nanoseconds elapsed);
  void arm_watchdog(std::chrono::nanoseconds after, Scheduler::Clock::time_point base)
      TURNSTILE_REQUIRES(turns_mu_);
  void disarm_watchdog(detail::UniqueLock& lock) TURNSTILE_REQUIRES(turns_mu_);
  void watchdog_fired(const Watchdog* fired);
  ActivationOptions::Clock::time_point now() const;

  std::string id_;
  ActivationOptions options_;
  detail::Mutex turns_mu_;
  std::condition_variable turns_cv_;  // a watchdog report or run ended
  // The running turns, oldest first.
  RunningTurn* oldest_ TURNSTILE_GUARDED_BY(turns_mu_) = nullptr;
  RunningTurn* newest_ TURNSTILE_GUARDED_BY(turns_mu_) = nullptr;
  // One watchdog per activation, not per turn [TURN-4.2]: while any turn runs it
  // is armed for the oldest turn not yet reported (an older turn's deadline is
  // never later than a younger one's), and it is cancelled when the last running
  // turn settles. When it fires it reports every running turn that is due and
  // re-arms for the oldest one left.
  std::shared_ptr<Watchdog> watch_ TURNSTILE_GUARDED_BY(turns_mu_);
  // watch_ is in a timer queue, due, or firing
  bool watch_armed_ TURNSTILE_GUARDED_BY(turns_mu_) = false;
  // watch_ was taken out of its queue unfired: re-arm it
  bool watch_reusable_ TURNSTILE_GUARDED_BY(turns_mu_) = false;
};

template <class State>
class Activation;
template <class State>
class TurnContext;

// The plain body of a turn: `fn(State&) -> R`, R not a Task. [TURN-1.3]
template <class F, class State>
concept PlainTurnBody =
    std::invocable<F&, State&> && !is_task_v<std::invoke_result_t<F&, State&>>;
// The coroutine body of a turn: `fn(TurnContext<State>&) -> Task<R>`. Tested
// only when F is no plain body, so a generic plain lambda is never
// instantiated with a TurnContext. [TURN-1.3]
template <class F, class State>
concept CoroutineTurnBody =
    !PlainTurnBody<F, State> && std::invocable<F&, TurnContext<State>&> &&
    is_task_v<std::invoke_result_t<F&, TurnContext<State>&>>;
// What call() and turn() accept. [TURN-1.3] (A compiler reporting this
// constraint quotes the lines below, which name both forms.)
template <class F, class State>
concept TurnBody = PlainTurnBody<F, State> ||    // fn(State&) -> R, R not a Task, or
                   CoroutineTurnBody<F, State>;  // fn(TurnContext<State>&) -> Task<R>

// Handed to work outside the turn sequence (ctx.task bodies).
template <class State>
class TaskContext {
 public:
  explicit TaskContext(Activation<State>& a, std::string_view trace_task = {}) noexcept
      : activation_(&a), trace_task_(trace_task) {}
  // A full serial turn: `fn(TurnContext<State>&) -> Task<R>`, or a plain
  // `fn(State&) -> R`; returns Task<R>. Legal from a task. [TURN-5.2]
  template <class F>
    requires TurnBody<F, State>
  auto turn(F fn) const;
  // A copy of the state as the last serial turn left it. [TURN-5.3]
  std::shared_ptr<const State> snapshot() const { return activation_->snapshot(); }
  Activation<State>& activation() const noexcept { return *activation_; }

 protected:
  Activation<State>* activation_;
  std::string_view trace_task_;  // [TRACE-4.3] this task's id while traced
};

// Handed to a turn's body.
template <class State>
class TurnContext : public TaskContext<State> {
 public:
  TurnContext(Activation<State>& a, const std::string& method,
              std::string_view trace_call = {}) noexcept
      : TaskContext<State>(a), method_(method), trace_call_(trace_call) {}
  // The live state. Valid inside the turn only.
  State& state() const noexcept { return this->activation_->state_; }
  const std::string& method() const noexcept { return method_; }
  // Starts `body(TaskContext<State>&) -> Task<>` outside the turn sequence: it
  // may outlive the turn and carries no turn marker. [TURN-5.1]
  template <class F>
  void task(F body) const;

 private:
  const std::string& method_;
  std::string_view trace_call_;  // [TRACE-4.3] this turn's call id while traced
};

template <class State>
class Activation final : public ActivationBase {
 public:
  Activation(std::string id, State initial, ActivationOptions options = {},
             Scheduler& scheduler = default_scheduler())
      : ActivationBase(std::move(id), std::move(options), scheduler),
        state_(std::move(initial)),
        snapshot_(std::make_shared<Snapshot>(state_)) {}

  // Calls `method` with `body(TurnContext<State>&) -> Task<R>` or a plain
  // `body(State&) -> R` ([TURN-1.3]); returns Task<R>. Takes effect now
  // (arrival order); keeps `body` alive until its turn settles. [TURN-2.2]
  template <class F>
    requires TurnBody<F, State>
  auto call(std::string method, F body) {
    const bool serial = !is_interleaved(method);  // [TURN-3.3] the activation decides
    return start_call(std::move(method), as_turn_body(std::move(body)), serial);
  }

  // A copy of the state as the last serial turn left it. [TURN-5.3] It stays
  // unchanged while the returned pointer (or a copy of it) is held.
  std::shared_ptr<const State> snapshot() const {
    std::shared_ptr<Snapshot> s;
    {
      detail::LockGuard lock(snapshot_mu_);
      s = snapshot_;
      s->readers.fetch_add(1, std::memory_order_relaxed);  // under the lock: publish sees it
    }
    const State* state = &s->state;
    // cppcheck-suppress cstyleCast ; the deleter lambda's parameter list, not a cast
    return std::shared_ptr<const State>(state, [s = std::move(s)](const State*) noexcept {
      // release: this reader's reads of the copy happen-before a publish that
      // then sees no reader and overwrites it (the acquire in publish_snapshot).
      s->readers.fetch_sub(1, std::memory_order_release);
    });
  }

 private:
  friend class TurnContext<State>;
  friend class TaskContext<State>;

  // A call's record, one allocation: the call's node in the wait graph (its
  // turn marker), its body, result, watch record, chain links and the frame
  // that binds its marker in the turn's fiber.
  template <class R, class F>
  struct Call final : detail::TurnMarker {
    Call(Activation* a, std::string m, bool serial, F b)
        : detail::TurnMarker(&a->wait_lane_, &a->id(), std::move(m), serial), body(std::move(b)) {}
    std::optional<F> body;  // kept alive until the turn settles [TURN-2.2]
    Promise<R> result;
    std::string trace_call;  // [TRACE-4.3] empty while the sink is off
    RunningTurn running;     // [TURN-4.2] its watch while the turn runs
    detail::TurnChain::Link* prev = nullptr;  // [CHAIN-I2] serial: the link it starts after
    detail::TurnChain::Link* mine = nullptr;  // serial: its own link, settled as it ends
    // [CHAIN-I2] A serial call queued behind an unsettled link waits as this
    // node on the link's completion word; its notify posts the turn's start.
    struct StartAfter final : detail::Completion::Waiter {
      Strand* strand = nullptr;
      Runnable* start = nullptr;  // the turn fiber's start step
      void notify() noexcept override { strand->post(*start); }  // [RT-4.2] posted
    } start_after;
    // Storage of the detail::TurnMarkerFrame built in start_call (owned by its
    // references, not by this record: see TurnMarkerFrame).
    alignas(detail::TurnMarkerFrame) std::array<std::byte, sizeof(detail::TurnMarkerFrame)> marker_frame;
  };

  // [TURN-1.3] a plain body becomes the coroutine body that calls it: both
  // forms then take the one path below (chain, marker, wait check, watchdog).
  template <class F>
  static auto as_turn_body(F fn);
  // call() on the lane `serial` names (TaskContext::turn forces the serial lane).
  template <class F>
  auto start_call(std::string method, F body, bool serial, std::string_view trace_task = {})
      -> std::invoke_result_t<F&, TurnContext<State>&>;
  // The turn: the root coroutine of its own fiber (one frame, detail::prepare_fiber).
  template <class R, class F>
  static detail::FiberRoot run_turn(Activation* self, std::shared_ptr<Call<R, F>> call);
  // Runs on the awaiting fiber when the call's Task is awaited: the wait check
  // belongs to the co_await, not to call() ([TURN-7.1]).
  template <class R, class F>
  static Task<R> await_result(std::shared_ptr<Call<R, F>> call) {
    const detail::CallWait wait(*call, call->trace_call);  // throws on a cycle [TURN-7.1]
    co_return co_await call->result.take();
  }
  // [TURN-5.3] The copy the last serial turn left, and how many snapshot()
  // handles to it are alive (each handle counts one, dropped by its deleter).
  struct Snapshot {
    explicit Snapshot(const State& s) : state(s) {}
    std::atomic<std::size_t> readers{0};
    State state;
  };
  void publish_snapshot() {
    if constexpr (std::is_nothrow_copy_assignable_v<State>) {
      detail::LockGuard lock(snapshot_mu_);
      // acquire: pairs with the release of each handle's drop. No handle alive
      // (and none can be made while we hold the lock): overwrite the copy in
      // place instead of allocating a new one.
      if (snapshot_->readers.load(std::memory_order_acquire) == 0) {
        snapshot_->state = state_;
        return;
      }
    }
    auto copy = std::make_shared<Snapshot>(state_);
    detail::LockGuard lock(snapshot_mu_);
    snapshot_ = std::move(copy);
  }

  State state_;  // touched only by turn steps, which the Strand serialises [TURN-1.2]
  mutable detail::Mutex snapshot_mu_;
  std::shared_ptr<Snapshot> snapshot_ TURNSTILE_GUARDED_BY(snapshot_mu_);  // [TURN-5.3]
};

}  // namespace turnstile

#include "turnstile/detail/activation_impl.hpp"
