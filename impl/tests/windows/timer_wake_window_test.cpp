// timer_wake_window_test.cpp: a timer armed on a ThreadPool from a thread that
// is not one of its own, while the pool's owner destroys the pool ([RT-2.3]).
//
// The window: inside the arm, between releasing the timer queue's mutex and
// waking the pool's timer thread (the wake-up is made after the unlock, so
// that the woken thread does not block at once on a mutex its waker holds).
// By then the timer is armed: it may fire, its callback may end the owner's
// wait, and the owner may destroy the pool, all before the arming thread gets
// to its wake-up. The promise inside: the queue is still there for that
// wake-up. After it: the arm's reference was the last, and the queue is gone.
//
// Held open with the queue's test seam (TimerQueue::set_wake_seam, private
// header impl/src/timer_queue.hpp): the arming thread blocks in it on a Gate
// while the test fires the timer, waits for its callback and destroys the pool.
// No race loop, no sleep. An arm that kept no reference of its own finds the
// queue destroyed with the pool; the seam then throws rather than return to
// the wake-up, so even that wrong implementation touches no freed memory.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "timer_queue.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"

namespace timer_wake_window {

using namespace turnstile;
using namespace std::chrono_literals;
using TimerQueue = turnstile::detail::TimerQueue::Base;  // the seam's argument

// The held arm: which thread is held, what it saw, and the test's verdict.
struct HeldArm {
  turnstile_test::Gate inside, release;
  std::atomic<std::thread::id> holder{};  // the arming thread, stored before its arm
  bool held = false;                      // the holder's own: it is held once
  std::weak_ptr<TimerQueue> queue;        // written inside, read after `inside`
  bool gone = false;                      // the test's, read after `release`
};
HeldArm* held_arm = nullptr;  // the seam is a plain function pointer

struct QueueGone {};

void hold_the_wake_up(TimerQueue& q) {
  HeldArm& h = *held_arm;
  if (std::this_thread::get_id() != h.holder.load(std::memory_order_acquire) || h.held) return;
  h.held = true;
  h.queue = q.weak_from_this();  // the queue is alive here: its mutex was just released
  h.inside.open();
  h.release.wait();  // the window
  if (h.gone) throw QueueGone{};  // a wrong implementation: do not touch the freed queue
}

// Removes the seam however the test ends.
struct SeamInstalled {
  explicit SeamInstalled(HeldArm& h) {
    held_arm = &h;
    TimerQueue::set_wake_seam(&hold_the_wake_up);
  }
  ~SeamInstalled() {
    TimerQueue::set_wake_seam(nullptr);
    held_arm = nullptr;
  }
  SeamInstalled(const SeamInstalled&) = delete;
  SeamInstalled& operator=(const SeamInstalled&) = delete;
};

// spec: [RT-2.3]
TEST(TimerWakeWindow, ThePoolsTimerQueueOutlivesTheWakeUpOfAnArmFromOutsideThePool) {
  HeldArm held;
  SeamInstalled seam(held);  // before the arming thread starts
  auto pool = std::make_unique<ThreadPool>(1);
  turnstile_test::Gate fired, earlier_fired;
  bool arm_saw_queue_gone = false;
  std::thread arming([&] {
    held.holder.store(std::this_thread::get_id(), std::memory_order_release);
    try {
      // Due at once and the queue's only entry: its new earliest, so this arm
      // wakes the timer thread, and is held just before doing so.
      TimerHandle h = pool->call_after(0ns, [&fired] { fired.open(); });
    } catch (const QueueGone&) {
      arm_saw_queue_gone = true;
    }
  });
  held.inside.wait();
  ASSERT_FALSE(held.queue.expired());
  // Inside the window. The held arm's timer fires anyway: a second arm, due
  // earlier still, is the new earliest and wakes the timer thread (this thread
  // is not held), which takes both.
  TimerHandle earlier = pool->call_at(Scheduler::Clock::time_point{}, [&] { earlier_fired.open(); });
  fired.wait();
  earlier_fired.wait();
  // The held arm's callback ran: its owner destroys the pool, timer thread
  // and carriers joined, while the arm is still to make its wake-up.
  pool.reset();
  const bool alive = !held.queue.expired();
  EXPECT_TRUE(alive) << "the pool's timer queue was destroyed with the pool while an arm from "
                        "another thread was still to wake its timer thread: that wake-up "
                        "would touch freed memory ([RT-2.3])";
  held.gone = !alive;
  held.release.open();
  arming.join();
  EXPECT_FALSE(arm_saw_queue_gone);
  // After the window: the arm's reference was the last one, dropped once its
  // wake-up was made.
  EXPECT_TRUE(held.queue.expired()) << "the timer queue outlived its last user";
  EXPECT_FALSE(earlier.pending());
}

}  // namespace timer_wake_window
