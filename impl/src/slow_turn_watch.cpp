// slow_turn_watch.cpp: the running turns of one activation and its one
// watchdog [TURN-4.2].
#include "turnstile/detail/slow_turn_watch.hpp"

#include <algorithm>

namespace turnstile::detail {

namespace {
// a + b, at most nanoseconds::max() (b >= 0; a slow_turn may be "never").
std::chrono::nanoseconds saturating_add(std::chrono::nanoseconds a, std::chrono::nanoseconds b) {
  return a >= std::chrono::nanoseconds::max() - b ? std::chrono::nanoseconds::max() : a + b;
}

// [TURN-4.2] [RT-8.1] The coarse clock's error when the watch reads it: with
// the scheduler's clock only, and only when slow_turn dwarfs that error.
std::chrono::nanoseconds coarse_margin(const Scheduler& timers, std::chrono::nanoseconds slow_turn,
                                       bool injected_clock) {
  if (injected_clock) return std::chrono::nanoseconds::zero();
  const auto error = std::chrono::duration_cast<std::chrono::nanoseconds>(timers.coarse_error());
  if (error <= std::chrono::nanoseconds::zero() || slow_turn / SlowTurnWatch::kCoarseFactor < error)
    return std::chrono::nanoseconds::zero();
  return error;
}
}  // namespace

SlowTurnWatch::SlowTurnWatch(Scheduler& timers, std::chrono::nanoseconds slow_turn,
                             std::function<Clock::time_point()> clock, SlowTurnReport& report)
    : timers_(timers),
      slow_turn_(slow_turn),
      clock_(std::move(clock)),
      margin_(coarse_margin(timers, slow_turn, static_cast<bool>(clock_))),
      report_(report),
      watchdog_(timers, [this] { fired(); }) {}

// [TURN-4.2] [RT-8.4] the lazily cancelled watchdog may still be armed: cancel
// it, or wait for a firing in progress (it finds no turn and stands down).
SlowTurnWatch::~SlowTurnWatch() {
  UniqueLock lock(mu_);
  if (armed_) stand_down(lock);
}

SlowTurnWatch::Clock::time_point SlowTurnWatch::now() const {
  if (clock_) return clock_();
  // [TURN-4.2] the scheduler's clock; its coarse reading when margin_ allows
  // for its error (never later than now(), at most margin_ earlier).
  return margin_ > std::chrono::nanoseconds::zero() ? timers_.coarse_now() : timers_.now();
}

void SlowTurnWatch::started(RunningTurn& t, const std::string& method,
                            std::string_view trace_call) {
  t.method = &method;
  t.trace_call = trace_call;
  const auto started = now();
  LockGuard lock(mu_);
  t.started = started;
  t.older = newest_;  // start order: turns start one at a time, on the strand
  if (newest_ != nullptr) newest_->newer = &t; else oldest_ = &t;
  newest_ = &t;
  // [TURN-4.2] a watchdog that needs no user call: armed for this turn unless
  // it is armed already, for an older turn (whose deadline comes first).
  // With the coarse clock, `started` may lag the turn's start by margin_ and
  // a later reading lag by as much again: due once the fine clock passes
  // started + slow_turn + 2 * margin_, when every later coarse reading shows
  // more than slow_turn + margin_ (overdue()).
  if (!armed_) arm(saturating_add(slow_turn_, 2 * margin_), clock_ ? timers_.now() : started);
}

// mu_ held: a watchdog that fires at once waits for the lock. Due at the first
// instant a turn started `after` ago has run *longer* than slow_turn on the
// scheduler's clock ([TURN-4.2], [RT-8.1]); `base` is that clock's now.
void SlowTurnWatch::arm(std::chrono::nanoseconds after, Clock::time_point base) {
  const auto room = Clock::time_point::max() - base;
  const auto deadline = after >= room ? Clock::time_point::max()
                                      : base + after + std::chrono::nanoseconds(1);
  armed_ = true;
  watchdog_.arm(deadline);
}

void SlowTurnWatch::take_late(bool hold, std::vector<Late>& out) {
  const auto t_now = now();
  for (RunningTurn* t = oldest_; t != nullptr; t = t->newer) {
    const auto elapsed = t_now - t->started;
    if (t->reported || !overdue(elapsed)) continue;
    t->reported = true;   // [TURN-4.2] once: the other finders and the settle see it
    t->reporting = hold;  // the watchdog's report: its settle waits for it to return
    out.push_back({t, *t->method, elapsed, std::string(t->trace_call)});
  }
}

// On the scheduler, as the watchdog's item: reports every running turn that
// has run longer than slow_turn and was not reported, then re-arms for the
// oldest turn left to watch.
void SlowTurnWatch::fired() {
  UniqueLock lock(mu_);
  if (!armed_) return;  // not armed (never expected: a disarmed arming never fires)
  armed_ = false;
  std::vector<Late> late;
  take_late(true, late);
  if (!late.empty()) {
    lock.unlock();
    for (const Late& l : late) report_.slow_turn(l.method, l.elapsed, l.call, "watchdog");
    lock.lock();
    for (const Late& l : late) l.turn->reporting = false;  // still running: its settle waits
  }
  if (!armed_) {
    // The oldest turn left to watch. An injected clock that lags the
    // scheduler's makes this look again when the turn may be due by it.
    for (RunningTurn* t = oldest_; t != nullptr; t = t->newer) {
      if (t->reported) continue;
      // With the coarse clock: margin_ more on the fine clock, so that the
      // next firing's coarse reading finds it late (no firing a tick early).
      const auto left = saturating_add(slow_turn_, margin_) - (now() - t->started);
      arm(saturating_add(std::max(left, std::chrono::nanoseconds(0)), margin_), timers_.now());
      break;
    }
  }
  cv_.notify_all();  // reports returned; a destructor may wait for this run
}

// mu_ held (through `lock`), the watch is being destroyed: cancel the
// watchdog [RT-8.4]. If it fires right now, wait for that run: it finds no turn
// and stands down, after which the watch may be destroyed.
void SlowTurnWatch::stand_down(UniqueLock& lock) {
  if (watchdog_.disarm()) {
    armed_ = false;
    return;
  }
  while (armed_) cv_.wait(lock.native());  // fired() clears it
}

void SlowTurnWatch::settled(RunningTurn& t) {
  const auto t_now = now();
  bool report = false;
  std::chrono::nanoseconds elapsed{};
  {
    UniqueLock lock(mu_);
    // [TURN-4.2] a report of this turn in progress returns before it settles.
    while (t.reporting) cv_.wait(lock.native());
    (t.older != nullptr ? t.older->newer : oldest_) = t.newer;
    (t.newer != nullptr ? t.newer->older : newest_) = t.older;
    elapsed = t_now - t.started;
    report = !t.reported && overdue(elapsed);  // [TURN-4.2] once per turn
    // [TURN-4.2] lazily cancelled: the watchdog stays armed when the last
    // running turn settles, fires once with nothing due and is dropped (or
    // re-armed for a turn started since); no timer-queue work per turn.
  }
  if (report) report_.slow_turn(*t.method, elapsed, t.trace_call, "settle");
}

void SlowTurnWatch::check() {
  std::vector<Late> late;
  {
    LockGuard lock(mu_);
    take_late(false, late);
  }
  for (const Late& l : late) report_.slow_turn(l.method, l.elapsed, l.call, "check");
}

}  // namespace turnstile::detail
