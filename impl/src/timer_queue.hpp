// timer_queue.hpp (private): TimerQueue, the product's timer queue: the
// queue of detail/timer_core.hpp over StdSync (its order, its invariants
// [TIMER-I1]..[TIMER-I3] and its model are there), plus the serving thread of
// a queue that has one of its own. Implemented in timer_queue.cpp.
//
// A ThreadPool's queue (TimerQueue(Serving::kOwnThread)) starts its serving
// thread at the first arm(), not in its constructor: a pool that never arms a
// timer has no timer thread, and the one that starts finds its first deadline
// already armed instead of sleeping on an empty queue and being woken by it
// (one voluntary context switch per pool; impl/bench/README.md, "The timer
// thread starts at the first timer"). The process-wide default queue
// (timer.cpp) is served the same way, its thread never joined; a
// ManualScheduler's and a sync_wait loop's are served by their owners.
//
// Thread safety: as BasicTimerQueue; the serving thread's fields are guarded
// by server_mu_.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/detail/timer_core.hpp"

namespace turnstile::detail {

using TimerEntryRef = std::shared_ptr<TimerEntry>;

class TimerQueue final : public BasicTimerQueue<StdSync> {
 public:
  using Base = BasicTimerQueue<StdSync>;
  // Who serves the queue: its owner (wait_due() or take_due() on a thread of
  // its own choosing), or a thread the queue starts at its first arm().
  enum class Serving { kByOwner, kOwnThread };

  explicit TimerQueue(Serving serving = Serving::kByOwner) noexcept
      : own_thread_(serving == Serving::kOwnThread) {}

  // As BasicTimerQueue::arm. A kOwnThread queue first starts its serving
  // thread if none was started yet and join_server() was not called; if that
  // start throws (std::system_error), arm() throws it with nothing armed, and
  // the next arm() tries again.
  bool arm(TimerEntryRef e);
  // kOwnThread: after stop(), joins the serving thread if one was started, and
  // keeps any later arm() from starting one. Call it once, from the owner,
  // never from the serving thread.
  void join_server();

 private:
  void start_server() TURNSTILE_EXCLUDES(server_mu_);

  const bool own_thread_;  // Serving::kOwnThread
  // Set once the serving thread was started, or can no longer be (join_server):
  // arm()'s test before it takes server_mu_ (it guards no data of its own).
  std::atomic<bool> server_settled_{false};
  Mutex server_mu_;
  std::thread server_ TURNSTILE_GUARDED_BY(server_mu_);
  bool server_closed_ TURNSTILE_GUARDED_BY(server_mu_) = false;  // join_server() was called
};

// Posts each due entry's item to its target [RT-8.2]; call without any lock
// (timer.cpp, beside the entries' items).
void post_due(std::vector<TimerEntryRef>& due);

}  // namespace turnstile::detail
