// activation.cpp: ActivationBase (self-call check, counters, slow-turn watch)
// and Host.
#include "turnstile/activation.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "timer_queue.hpp"
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
  return options_.reentrancy == Reentrancy::always ||
         options_.interleaved_methods.count(method) != 0;  // [TURN-3.3]
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

// The activation's one watchdog timer entry [TURN-4.2]: armed on the
// underlying scheduler, not the strand, so a turn blocking its carrier is still
// reported while it runs. Re-armed (the same entry) after a cancel that took it
// out of its queue; a fresh entry replaces it otherwise.
class ActivationBase::Watchdog final : public detail::TimerEntry, public Runnable {
 public:
  explicit Watchdog(ActivationBase* owner) noexcept : owner_(owner) {}
  Runnable& make_due(std::shared_ptr<TimerEntry> self) noexcept override {
    self_ = std::move(self);  // alive until run() [RT-8.2]
    return *this;
  }
  void run() noexcept override {
    const std::shared_ptr<TimerEntry> keep = std::exchange(self_, nullptr);
    int expected = kDue;
    // acq_rel / acquire: pairs with the compare-exchange in disarm_watchdog();
    // exactly one of them leaves kDue. Cancelled while posted: the owner may be
    // gone, touch nothing but this entry.
    if (!state.compare_exchange_strong(expected, kFired, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      return;
    owner_->watchdog_fired(this);  // the owner's last settle waits for it [TURN-4.2]
  }

 private:
  ActivationBase* const owner_;
  std::shared_ptr<TimerEntry> self_;  // set when posted, taken by run()
};

void ActivationBase::turn_started(RunningTurn& t, const std::string& method,
                                  std::string_view trace_call) {
  bump(running_, +1);  // [TURN-1.2] one writer at a time: see bump()
  t.method = &method;
  t.trace_call = trace_call;
  const auto started = now();
  detail::LockGuard lock(turns_mu_);
  t.started = started;
  t.older = newest_;  // start order: turns start one at a time, on the strand
  if (newest_ != nullptr) newest_->newer = &t; else oldest_ = &t;
  newest_ = &t;
  // [TURN-4.2] a watchdog that needs no user call: armed for this turn unless
  // it is armed already, for an older turn (whose deadline comes first).
  if (!watch_armed_)
    arm_watchdog(options_.slow_turn, options_.clock ? strand_->now() : started);
}

// turns_mu_ held: a watchdog that fires at once waits for the lock. Due at the
// first instant a turn started `after` ago has run *longer* than slow_turn on
// the scheduler's clock ([TURN-4.2], [RT-8.1]); `base` is that clock's now.
void ActivationBase::arm_watchdog(std::chrono::nanoseconds after, Scheduler::Clock::time_point base) {
  Scheduler& s = strand_->underlying();
  const auto room = Scheduler::Clock::time_point::max() - base;
  const auto deadline = after >= room ? Scheduler::Clock::time_point::max()
                                      : base + after + std::chrono::nanoseconds(1);
  if (!watch_ || !watch_reusable_) watch_ = std::make_shared<Watchdog>(this);
  watch_reusable_ = false;
  // Not in any queue (new, or taken out by a remove() under the queue's mutex,
  // which the arm below takes again): plain writes, published by that arm.
  watch_->state.store(detail::TimerEntry::kArmed, std::memory_order_relaxed);
  watch_->deadline = deadline;
  watch_->target = &s;  // [RT-8.2] its report runs as an item of the scheduler
  watch_armed_ = true;
  s.arm_timer(watch_);
}

// turns_mu_ held (through `lock`), the last running turn settled: cancel the
// watchdog [RT-8.4]. If it fires right now, wait for that run: it finds no turn
// and stands down, after which the activation may be destroyed.
void ActivationBase::disarm_watchdog(detail::UniqueLock& lock) {
  if (auto q = watch_->queue.lock(); q && q->remove(*watch_)) {
    watch_armed_ = false;
    watch_reusable_ = true;  // out of its queue, never posted: armed again next time
    return;
  }
  int s = detail::TimerEntry::kDue;
  // acq_rel / acquire: pairs with Watchdog::run's compare-exchange.
  if (watch_->state.compare_exchange_strong(s, detail::TimerEntry::kCancelled,
                                            std::memory_order_acq_rel, std::memory_order_acquire) ||
      s != detail::TimerEntry::kFired) {
    // Posted and now cancelled (its item does nothing), or dropped with its
    // scheduler: it never calls back. A fresh entry is armed next time.
    watch_armed_ = false;
    watch_.reset();
    return;
  }
  while (watch_armed_) turns_cv_.wait(lock.native());  // watchdog_fired clears it
}

// On the scheduler, as the watchdog's item: reports every running turn that
// has run longer than slow_turn and was not reported, then re-arms for the
// oldest turn left to watch.
void ActivationBase::watchdog_fired(const Watchdog* fired) {
  detail::UniqueLock lock(turns_mu_);
  if (fired != watch_.get()) return;  // not the armed entry (never expected)
  watch_armed_ = false;
  struct Late {
    RunningTurn* turn;
    std::string method;
    std::chrono::nanoseconds elapsed;
    std::string call;
  };
  std::vector<Late> late;
  const auto t_now = now();
  for (RunningTurn* t = oldest_; t != nullptr; t = t->newer) {
    const auto elapsed = t_now - t->started;
    if (t->reported || elapsed <= options_.slow_turn) continue;
    t->reported = true;   // [TURN-4.2] once: check_slow_turns and the settle see it
    t->reporting = true;  // its settle waits for the report to return
    late.push_back({t, *t->method, elapsed, std::string(t->trace_call)});
  }
  if (!late.empty()) {
    lock.unlock();
    for (const Late& l : late) {
      report_slow(l.method, l.elapsed);  // while the turn runs
      if (!l.call.empty()) [[unlikely]] trace_turn("turn.slow", l.call, "by", "watchdog");
    }
    lock.lock();
    for (const Late& l : late) l.turn->reporting = false;  // still running: its settle waits
  }
  if (!watch_armed_) {
    // The oldest turn left to watch. An injected clock that lags the
    // scheduler's makes this look again when the turn may be due by it.
    for (RunningTurn* t = oldest_; t != nullptr; t = t->newer) {
      if (t->reported) continue;
      const auto left = options_.slow_turn - (now() - t->started);
      arm_watchdog(std::max(left, std::chrono::nanoseconds(0)), strand_->now());
      break;
    }
  }
  turns_cv_.notify_all();  // reports returned; a last settle may wait for this run
}

void ActivationBase::turn_settled(RunningTurn& t) {
  const auto t_now = now();
  bool report = false;
  std::chrono::nanoseconds elapsed{};
  {
    detail::UniqueLock lock(turns_mu_);
    // [TURN-4.2] a report of this turn in progress returns before it settles.
    while (t.reporting) turns_cv_.wait(lock.native());
    (t.older != nullptr ? t.older->newer : oldest_) = t.newer;
    (t.newer != nullptr ? t.newer->older : newest_) = t.older;
    elapsed = t_now - t.started;
    report = !t.reported && elapsed > options_.slow_turn;  // [TURN-4.2] once per turn
    // [TURN-4.2] [RT-8.4] the last running turn settled: no deadline is left.
    if (oldest_ == nullptr && watch_armed_) disarm_watchdog(lock);
  }
  if (report) {
    report_slow(*t.method, elapsed);
    if (!t.trace_call.empty()) [[unlikely]] trace_turn("turn.slow", t.trace_call, "by", "settle");
  }
  bump(completed_, +1);  // [TURN-1.2] one writer at a time: see bump()
  bump(running_, -1);
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
    detail::LockGuard lock(turns_mu_);
    const auto t_now = now();
    for (RunningTurn* t = oldest_; t != nullptr; t = t->newer) {
      const auto elapsed = t_now - t->started;
      if (!t->reported && elapsed > options_.slow_turn) {
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
  detail::LockGuard lock(mu_);
  auto it = activations_.find(id);
  return it == activations_.end() ? nullptr : it->second.get();
}

std::vector<ActivationStats> Host::activations() const {
  detail::LockGuard lock(mu_);
  std::vector<ActivationStats> out;
  for (auto& [id, a] : activations_) out.push_back(a->stats());
  return out;
}

void Host::check_slow_turns() {
  std::vector<ActivationBase*> all;
  {
    detail::LockGuard lock(mu_);
    for (auto& [id, a] : activations_) all.push_back(a.get());
  }
  // Outside the lock: a slow-turn handler may call back into the host
  // (activations(), find()). Activations are never removed from a host.
  for (ActivationBase* a : all) a->check_slow_turns();
}

}  // namespace turnstile
