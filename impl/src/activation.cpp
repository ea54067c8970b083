// activation.cpp: ActivationBase (self-call check, counters, slow-turn watch)
// and Host.
#include "turnstile/activation.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "turnstile/host.hpp"

namespace turnstile {

namespace detail {
namespace {
FrameRef carry_turn_marker(FrameRef onto, const Frame* running);
}

// A position key ([FL-3.8]): FiberContext::run inside a serial turn keeps the
// turn's marker, so a self-call made under it still throws ([TURN-7.1]).
const FiberLocal<TurnMarkerRef>& turn_marker() noexcept {
  static const FiberLocal<TurnMarkerRef>& marker = [] () -> const FiberLocal<TurnMarkerRef>& {
    static const FiberLocal<TurnMarkerRef> key("turnstile.turn_marker");
    register_position_key(&carry_turn_marker);
    return key;
  }();
  return marker;
}

namespace {
FrameRef carry_turn_marker(FrameRef onto, const Frame* running) {
  return FiberLocalAccess::carry_position(turn_marker(), std::move(onto), running);
}

// "turn 'deposit' of 'acc/1'" / "call 'audit' into 'acc/1'".
std::string describe(const TurnMarker& m, bool as_turn) {
  return (as_turn ? "turn '" : "call '") + m.method + (as_turn ? "' of '" : "' into '") +
         *m.activation + "'" + (m.serial() ? "" : " (interleaved)");
}

// Every hop of a refused cycle, starting with the waiter: who awaits what, and
// which turn each queued call waits behind.
std::string describe_cycle(const std::vector<WaitGraph::Hop>& cycle) {
  std::string out;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    const auto& m = static_cast<const TurnMarker&>(*cycle[i].node);
    const bool queued = cycle[i].queued_behind;
    out += i == 0 ? describe(m, true) : (queued ? "which is queued" : "which awaits");
    if (i == 0) {
      out += " awaits ";
    } else {
      out += queued ? " behind " : " ";
    }
    const auto& next = static_cast<const TurnMarker&>(*cycle[(i + 1) % cycle.size()].node);
    out += describe(next, queued);
    if (i + 1 < cycle.size()) out += ", ";
  }
  return out;
}
}  // namespace

WaitGraph& wait_graph() noexcept {
  static WaitGraph graph;
  return graph;
}

CallWait::CallWait(const TurnMarker& target, std::string_view trace_call) {
  const TurnMarkerRef* me = turn_marker().try_get();
  if (trace::on() && !trace_call.empty()) [[unlikely]] {  // [TRACE-4.3]
    TraceEvent e("turn.await");
    e.str("act", *target.activation).str("call", trace_call);
    trace::emit(e);
  }
  if (me == nullptr || !*me) return;  // no turn waits on this fiber: no cycle can close here
  waiter_ = *me;
  edge_.emplace(const_cast<TurnMarker*>(waiter_.get()), const_cast<TurnMarker*>(&target));
  std::vector<WaitGraph::Hop> cycle;
  if (wait_graph().begin_wait(*edge_, cycle)) return;  // [WAIT-I1]
  edge_.reset();
  std::string msg = "awaiting " + describe(target, false) +
                    " would wait for itself: " + describe_cycle(cycle) +
                    ". Await it after the turn, or leave it unawaited (it runs after the turn) "
                    "[TURN-7.1]";
  if (trace::on() && !trace_call.empty()) [[unlikely]] {  // [TRACE-4.3]
    TraceEvent e("turn.await_refused");
    e.str("act", *target.activation).str("call", trace_call).str("reason", "wait-cycle");
    trace::emit(e);
  }
  throw TurnReentrancyError(msg);  // [TURN-7.1] at the co_await, never a hang
}

CallWait::~CallWait() {
  if (edge_) wait_graph().end_wait(*edge_);  // [WAIT-I3]
}
}  // namespace detail

ActivationBase::ActivationBase(std::string id, ActivationOptions options, Scheduler& scheduler)
    : strand_(std::make_shared<Strand>(scheduler)), id_(std::move(id)), options_(std::move(options)) {}

ActivationBase::~ActivationBase() {
  const bool turns = running() != 0 || queued() != 0;  // [TURN-1.1]
  const bool tasks_alive = tasks() != 0;                 // [TURN-5.4]
  if (turns || tasks_alive) {
    std::fprintf(stderr,
                 "turnstile: activation '%s' was destroyed with %zu turn(s) running, %zu "
                 "queued and %zu task(s) alive; await its calls and let its ctx.task work end "
                 "before destroying it%s%s\n",
                 id_.c_str(), running(), queued(), tasks(), turns ? " [TURN-1.1]" : "",
                 tasks_alive ? " [TURN-5.4]" : "");
    std::abort();
  }
}

bool ActivationBase::is_interleaved(const std::string& method) const {
#if defined(TURNSTILE_MUTANT_TURN_INTERLEAVED_AS_SERIAL)
  // mutant: [TURN-3.2] [TURN-3.3] interleaved_methods is ignored: an interleaved
  // method takes the serial lane and waits for the serial turn in progress
  (void)method;
  return options_.reentrancy == Reentrancy::always;
#else
  return options_.reentrancy == Reentrancy::always ||
         options_.interleaved_methods.count(method) != 0;  // [TURN-3.3]
#endif
}

std::string ActivationBase::trace_call(const std::string& method, bool serial,
                                       std::string_view task) const {
  std::string call = trace::take_label();
  const bool labelled = !call.empty();
  if (!labelled) call = trace::next_id();
  TraceEvent e(task.empty() ? "turn.call" : "turn.reentry");
  e.str("act", id_).str("call", call);
  if (task.empty()) {
    e.str("method", method).str("mode", serial ? "serial" : "interleaved");
    if (labelled) e.str("op", call);
  } else {
    e.str("task", task);
  }
  trace::emit(e);
  return call;
}

void ActivationBase::trace_turn(const char* ev, std::string_view call, const char* field,
                                std::string_view value) const noexcept {
  TraceEvent e(ev);
  e.str("act", id_);
  if (!call.empty()) e.str("call", call);
  if (field != nullptr) e.str(field, value);
  trace::emit(e);
}

ActivationOptions::Clock::time_point ActivationBase::now() const {
  return options_.clock ? options_.clock() : strand_->now();  // [TURN-4.2] the scheduler's clock
}

ActivationBase::RunningTurn* ActivationBase::turn_started(const std::string& method,
                                                          std::string_view trace_call) {
  running_.fetch_add(1, std::memory_order_relaxed);
  auto t = std::make_unique<RunningTurn>();
  t->method = &method;
  t->started = now();
  t->trace_call = trace_call;
  RunningTurn* raw = t.get();
  std::lock_guard lock(turns_mu_);
  turns_.push_back(std::move(t));
  arm_watchdog(*raw, options_.slow_turn);  // [TURN-4.2] a watchdog that needs no user call
  return raw;
}

// turns_mu_ held: a watchdog that fires at once waits for its handle to be stored.
void ActivationBase::arm_watchdog(RunningTurn& t, std::chrono::nanoseconds after) {
  // On the underlying scheduler, not the strand: a turn blocking its carrier
  // is still reported while it runs. Due at the first instant the turn has run
  // *longer* than slow_turn on the scheduler's clock ([TURN-4.2], [RT-8.1]).
  Scheduler& s = strand_->underlying();
  const auto base = s.now();
  const auto room = Scheduler::Clock::time_point::max() - base;
  const auto deadline = after >= room ? Scheduler::Clock::time_point::max()
                                      : base + after + std::chrono::nanoseconds(1);
  t.watch_busy = true;
  t.watchdog = s.call_at(deadline, [this, &t] { watchdog_fired(t); });
}

// `t` is alive: turn_settled waits while t.watch_busy, unless it cancelled us.
void ActivationBase::watchdog_fired(RunningTurn& t) {
  std::unique_lock lock(turns_mu_);
  if (!t.settling && !t.reported) {
    const auto elapsed = now() - t.started;
    if (elapsed <= options_.slow_turn) {
      // An injected clock lags the scheduler's: look again when it may be due.
      arm_watchdog(t, options_.slow_turn - elapsed);
      return;
    }
    t.reported = true;  // [TURN-4.2] once: check_slow_turns and the settle see it
    const std::string method = *t.method;
    const std::string call(t.trace_call);
    lock.unlock();
    report_slow(method, elapsed);  // while the turn runs
    if (!call.empty()) [[unlikely]] trace_turn("turn.slow", call, "by", "watchdog");
    lock.lock();
  }
  t.watch_busy = false;
  turns_cv_.notify_all();
}

void ActivationBase::turn_settled(RunningTurn* t) {
  TimerHandle watchdog;
  {
    std::lock_guard lock(turns_mu_);
    t->settling = true;  // no re-arm, no watchdog report from here on
    watchdog = std::move(t->watchdog);
  }
  // [TURN-4.2] cancel outside turns_mu_; false: a watchdog run started (or the
  // turn had none), and its report, if any, finishes before the turn settles.
  const bool cancelled = watchdog.cancel();
  std::unique_ptr<RunningTurn> mine;
  bool report = false;
  std::chrono::nanoseconds elapsed{};
  {
    std::unique_lock lock(turns_mu_);
    if (!cancelled) turns_cv_.wait(lock, [t] { return !t->watch_busy; });
    auto it = std::find_if(turns_.begin(), turns_.end(), [t](auto& p) { return p.get() == t; });
    mine = std::move(*it);
    turns_.erase(it);
    elapsed = now() - mine->started;
#if defined(TURNSTILE_MUTANT_TURN_WATCHDOG_TWICE)
    // mutant: [TURN-4.2] the settle check ignores an earlier report, so a turn
    // the watchdog (or check_slow_turns) reported is reported again at settle
    report = elapsed > options_.slow_turn;
#else
    report = !mine->reported && elapsed > options_.slow_turn;  // [TURN-4.2] once per turn
#endif
  }
  if (report) {
    report_slow(*mine->method, elapsed);
    if (!mine->trace_call.empty()) [[unlikely]] trace_turn("turn.slow", mine->trace_call, "by", "settle");
  }
  completed_.fetch_add(1, std::memory_order_relaxed);
  running_.fetch_sub(1, std::memory_order_relaxed);
}

void ActivationBase::check_slow_turns() {
  // The method names are copied under the lock: a turn may settle (and free
  // its name) as soon as the lock is released.
  struct Late {
    std::string method;
    std::chrono::nanoseconds elapsed;
    std::string call;
  };
  std::vector<Late> late;
  {
    std::lock_guard lock(turns_mu_);
    const auto t_now = now();
    for (const auto& t : turns_) {
      const auto elapsed = t_now - t->started;
      if (!t->reported && !t->settling && elapsed > options_.slow_turn) {
        t->reported = true;  // [TURN-4.2] once per slow turn
        late.push_back({*t->method, elapsed, std::string(t->trace_call)});
      }
    }
  }
  for (auto& l : late) {
    report_slow(l.method, l.elapsed);
    if (!l.call.empty()) [[unlikely]] trace_turn("turn.slow", l.call, "by", "check");
  }
}

void ActivationBase::report_slow(const std::string& method, std::chrono::nanoseconds elapsed) {
  slow_.fetch_add(1, std::memory_order_relaxed);
  if (options_.on_slow_turn) {
    options_.on_slow_turn(id_, method, elapsed);
    return;
  }
  std::fprintf(stderr, "turnstile: slow turn: activation '%s' method '%s' ran %lld ms [TURN-4.2]\n",
               id_.c_str(), method.c_str(),
               static_cast<long long>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
}

ActivationStats ActivationBase::stats() const {
  return ActivationStats{id_, queued(), running(), turns_completed(), slow_turns()};
}

ActivationBase* Host::find(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = activations_.find(id);
  return it == activations_.end() ? nullptr : it->second.get();
}

std::vector<ActivationStats> Host::activations() const {
  std::lock_guard lock(mu_);
  std::vector<ActivationStats> out;
  for (auto& [id, a] : activations_) out.push_back(a->stats());
  return out;
}

void Host::check_slow_turns() {
  std::vector<ActivationBase*> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, a] : activations_) all.push_back(a.get());
  }
  // Outside the lock: a slow-turn handler may call back into the host
  // (activations(), find()). Activations are never removed from a host.
  for (ActivationBase* a : all) a->check_slow_turns();
}

}  // namespace turnstile
