// turnstile/detail/slow_turn_watch.hpp: the slow-turn watch of one activation
// [TURN-4.2] (slow_turn_watch.cpp): its running turns, oldest first, and its
// one watchdog.
//
// A turn is watched from started() to settled(). A turn that runs longer than
// `slow_turn` is reported once, through SlowTurnReport, by whoever finds it
// first:
//   - the watchdog, while the turn runs: one RearmableTimer per watch
//     (timer.hpp), not one per turn, armed when a turn starts and none is
//     armed, always for the oldest running turn not yet reported (an older
//     turn's deadline is never later than a younger one's), and cancelled
//     lazily: left armed when turns settle, it fires once with nothing due and
//     is dropped, or re-arms for a turn started since; the destructor cancels
//     it. It fires as an item of the scheduler it was
//     given (an activation's underlying scheduler, not its strand, so a turn that
//     blocks its carrier is still reported), reports every running turn that is
//     due, and re-arms for the oldest one left. A turn settling meanwhile waits
//     for that report to return; the destructor waits for a firing in progress;
//   - check(), on its caller's thread;
//   - settled(), in the settling turn's fiber.
// Each report is made outside the watch's lock, so a report may call check()
// or start turns; it must not wait for a turn of the watch it reports from.
//
// The clock: the injected one, else the scheduler's. With the scheduler's and
// a slow_turn of at least kCoarseFactor times its coarse_error() (a ThreadPool
// on Linux: 2 to 8 ms, so from 0.2 to 0.8 s; the 5 s default), started() and
// settled() read coarse_now() (about 3 ns, against 25 for now() on a VM: two
// readings per turn were a tenth of a pipelined call's time) and a turn is
// late once its coarse elapsed time exceeds slow_turn by more than that error
// (`margin_`), so it is never reported before it has run longer than
// slow_turn, and at most two errors after its deadline ([TURN-4.2]).
//
// Thread safety: started() and settled() are called by the turns, one at a time
// in start and settle order (an activation's strand, [TURN-1.2]); check() from
// any thread. Every field of the list is guarded by the watch's mutex.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/timer.hpp"

namespace turnstile::detail {

// One running turn's watch, kept in its call's record (no allocation) and
// linked into the watch's running list from started() to settled(). Fields
// guarded by the watch's mutex (a separate record: the attribute cannot name
// it; only the watch's mutex holders reach the list).
struct RunningTurn {
  const std::string* method = nullptr;  // the call's, alive until settled()
  std::chrono::steady_clock::time_point started{};
  bool reported = false;   // one report per turn, whoever makes it
  bool reporting = false;  // the watchdog reports it now: its settle waits
  std::string_view trace_call;  // [TRACE-4.3] the call's id while traced
  RunningTurn* older = nullptr;  // the running list
  RunningTurn* newer = nullptr;
};

// Where a watch reports a late turn (an activation: its counter, its handler,
// turn.slow; a test: a report it holds open).
class SlowTurnReport {
 public:
  // At most once per turn, outside the watch's lock. `by`: "watchdog" (an item
  // of the watch's scheduler; the turn's settle waits for this to return),
  // "check" (check()'s caller) or "settle" (the settling turn). `trace_call`:
  // the call's id while traced, else empty.
  virtual void slow_turn(const std::string& method, std::chrono::nanoseconds elapsed,
                         std::string_view trace_call, const char* by) = 0;

 protected:
  ~SlowTurnReport() = default;
};

class SlowTurnWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // The scheduler's coarse clock is read when slow_turn is at least this many
  // times its coarse_error() [TURN-4.2].
  static constexpr int kCoarseFactor = 100;
  // `timers`: the scheduler the watchdog is armed on and fires on. `clock`
  // measures a turn's elapsed time; empty: timers.now(), the watchdog's clock.
  SlowTurnWatch(Scheduler& timers, std::chrono::nanoseconds slow_turn,
                std::function<Clock::time_point()> clock, SlowTurnReport& report);
  SlowTurnWatch(const SlowTurnWatch&) = delete;
  SlowTurnWatch& operator=(const SlowTurnWatch&) = delete;
  // Precondition: no turn is watched. Cancels the watchdog, waiting for a
  // firing in progress ([TURN-4.2], [RT-8.4]).
  ~SlowTurnWatch();

  // `t` is watched from here; `method` and `trace_call` outlive settled(t).
  void started(RunningTurn& t, const std::string& method, std::string_view trace_call);
  // `t` is no longer watched; reports it if it was late and nobody did.
  void settled(RunningTurn& t);
  // Reports every watched turn that has run longer than slow_turn and was not
  // yet reported.
  void check();

 private:
  struct Late {
    RunningTurn* turn;
    std::string method;  // copied: a turn may settle once the lock is released
    std::chrono::nanoseconds elapsed;
    std::string call;
  };
  // The one scan for late turns: marks each reported (and, when `hold`, held
  // for its report) and copies it to `out`.
  void take_late(bool hold, std::vector<Late>& out) TURNSTILE_REQUIRES(mu_);
  void arm(std::chrono::nanoseconds after, Clock::time_point base) TURNSTILE_REQUIRES(mu_);
  void stand_down(UniqueLock& lock) TURNSTILE_REQUIRES(mu_);
  void fired();  // the watchdog's item, on `timers`
  Clock::time_point now() const;
  // [TURN-4.2] longer than slow_turn, by more than the coarse clock's error.
  bool overdue(std::chrono::nanoseconds elapsed) const {
    return elapsed > slow_turn_ && elapsed - slow_turn_ > margin_;
  }

  Scheduler& timers_;
  const std::chrono::nanoseconds slow_turn_;
  const std::function<Clock::time_point()> clock_;
  // The coarse clock's error when now() reads it, else zero (exact).
  const std::chrono::nanoseconds margin_;
  SlowTurnReport& report_;
  Mutex mu_;
  std::condition_variable cv_;  // a watchdog report or firing ended
  RunningTurn* oldest_ TURNSTILE_GUARDED_BY(mu_) = nullptr;  // the running turns
  RunningTurn* newest_ TURNSTILE_GUARDED_BY(mu_) = nullptr;
  RearmableTimer watchdog_ TURNSTILE_GUARDED_BY(mu_);
  bool armed_ TURNSTILE_GUARDED_BY(mu_) = false;  // in a timer queue, due, or firing
};

}  // namespace turnstile::detail
