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
//     cancelled lazily: a settle leaves it armed; it then fires once with
//     nothing due and is dropped (or re-arms for a turn started since), and the
//     activation's destruction cancels it. Its report runs as an item
//     of the activation's underlying scheduler (not its strand, so a turn that
//     blocks its carrier is still reported); a turn settling meanwhile waits
//     for that report to return.
//
// Where: the template code of a call's life is detail/activation_impl.hpp; the
// watchdog and the running list detail/slow_turn_watch.hpp; the wait refusal,
// the turn marker and TurnReentrancyError detail/turn_call.hpp; the turn.*
// trace events detail/turn_trace.hpp; Host host.hpp.
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
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include "turnstile/completion.hpp"
#include "turnstile/detail/slow_turn_watch.hpp"
#include "turnstile/detail/turn_call.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/strand.hpp"
#include "turnstile/task.hpp"
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
  // ManualScheduler), the one the watchdog's deadline is armed on; with a
  // slow_turn of at least 100 times Scheduler::coarse_error(), its coarse
  // reading (a ThreadPool's 5 s default: 3 ns a reading instead of 25; a turn
  // is then slow once it ran longer by more than that error). [TURN-4.2]
  std::function<Clock::time_point()> clock;
};

struct ActivationStats {
  std::string id;
  std::size_t queued = 0;
  std::size_t running = 0;
  std::uint64_t turns_completed = 0;
  std::uint64_t slow_turns = 0;
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

// The type-erased part of an activation: identity, counters, slow-turn watch.
class ActivationBase : private detail::SlowTurnReport {
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
  // Called by a ctx.task fiber as it ends (template code in activation_impl.hpp).
  void task_finished() noexcept { tasks_.fetch_sub(1, std::memory_order_relaxed); }
  // ctx.task fibers still alive.
  std::size_t tasks() const noexcept { return tasks_.load(std::memory_order_relaxed); }

 protected:
  // The parts of a turn, used by Activation<State> (activation_impl.hpp).
  //
  // A counter with one writer at a time (running_, completed_): relaxed load
  // and store; readers on other threads read a value some step left.
  template <class T>
  static void bump(std::atomic<T>& counter, int by) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + static_cast<T>(by),
                  std::memory_order_relaxed);
  }

  std::shared_ptr<Strand> strand_;  // shared with its running drain
  const std::string id_;
  ActivationOptions options_;  // its clock moved to watch_
  detail::TurnChain chain_;
  detail::WaitGraph::Lane wait_lane_;  // this activation's serial lane in the wait graph
  std::atomic<std::size_t> queued_{0};   // counters: relaxed, read for reporting only
  // Written only by run_turn at a turn's start and settle, which run as steps
  // of the activation's strand, one at a time and each ordered after the one
  // before ([TURN-1.2]): a plain load and store, not a read-modify-write (bump()).
  std::atomic<std::size_t> running_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> slow_{0};
  std::atomic<std::size_t> tasks_{0};  // ctx.task fibers alive (checked at destruction)
  // The running turns and the one watchdog timer [TURN-4.2]; it reports to
  // slow_turn() below. Declared after options_, whose clock it takes.
  detail::SlowTurnWatch watch_;

 private:
  // A late turn [TURN-4.2]: counts it, calls on_slow_turn (or warns on
  // stderr), and emits turn.slow while traced.
  void slow_turn(const std::string& method, std::chrono::nanoseconds elapsed,
                 std::string_view trace_call, const char* by) override;
};

// Handed to work outside the turn sequence (ctx.task bodies).
template <class State>
class TaskContext {
 public:
  explicit TaskContext(Activation<State>& a, std::string_view trace_task = {}) noexcept;
  // A full serial turn: `fn(TurnContext<State>&) -> Task<R>`, or a plain
  // `fn(State&) -> R`; returns Task<R>. Legal from a task. [TURN-5.2]
  template <class F>
    requires TurnBody<F, State>
  auto turn(F fn) const;
  // A copy of the state as the last serial turn left it. [TURN-5.3]
  std::shared_ptr<const State> snapshot() const;
  Activation<State>& activation() const noexcept;

 protected:
  Activation<State>* activation_;
  std::string_view trace_task_;  // [TRACE-4.3] this task's id while traced
};

// Handed to a turn's body.
template <class State>
class TurnContext : public TaskContext<State> {
 public:
  TurnContext(Activation<State>& a, const std::string& method,
              std::string_view trace_call = {}) noexcept;
  // The live state. Valid inside the turn only.
  State& state() const noexcept;
  const std::string& method() const noexcept;
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
             Scheduler& scheduler = default_scheduler());

  // Calls `method` with `body(TurnContext<State>&) -> Task<R>` or a plain
  // `body(State&) -> R` ([TURN-1.3]); returns Task<R>. Takes effect now
  // (arrival order); keeps `body` alive until its turn settles. [TURN-2.2]
  template <class F>
    requires TurnBody<F, State>
  auto call(std::string method, F body);

  // A copy of the state as the last serial turn left it. [TURN-5.3] It stays
  // unchanged while the returned pointer (or a copy of it) is held.
  std::shared_ptr<const State> snapshot() const;

 private:
  friend class TurnContext<State>;
  friend class TaskContext<State>;

  // The life of a call, in the order of activation_impl.hpp:
  // [TURN-1.3] a plain body becomes the coroutine body that calls it: both
  // forms then take the one path below (chain, marker, wait check, watchdog).
  template <class F>
  static auto as_turn_body(F fn);
  // A call's record, one allocation: its node in the wait graph (its turn
  // marker), its body, result, watch, chain links and marker frame.
  template <class R, class F>
  struct Call;
  // call() on the lane `serial` names (TaskContext::turn forces the serial lane).
  template <class F>
  auto start_call(std::string method, F body, bool serial, std::string_view trace_task = {})
      -> std::invoke_result_t<F&, TurnContext<State>&>;
  // The turn: the root coroutine of its own fiber (one frame, detail::prepare_fiber).
  template <class R, class F>
  static detail::FiberRoot run_turn(Activation* self, Call<R, F>* call);
  // [TURN-5.3] the copy the last serial turn left, and its readers.
  struct Snapshot;
  void publish_snapshot();
  // Runs on the awaiting fiber when the call's Task is awaited: the wait check
  // belongs to the co_await, not to call() ([TURN-7.1]).
  template <class R, class F>
  static Task<R> await_result(std::shared_ptr<Call<R, F>> call);

  State state_;  // touched only by turn steps, which the Strand serialises [TURN-1.2]
  mutable detail::Mutex snapshot_mu_;
  std::shared_ptr<Snapshot> snapshot_ TURNSTILE_GUARDED_BY(snapshot_mu_);  // [TURN-5.3]
};

}  // namespace turnstile

#include "turnstile/detail/activation_impl.hpp"
