// Time in the runtime (spec/runtime.md §8): clocks, sleep_for / sleep_until,
// call_at and TimerHandle, on ManualScheduler (virtual time: no test sleeps)
// and on ThreadPool (short real timers, awaited through latches).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace turnstile;
using namespace std::chrono_literals;
using Log = std::vector<std::string>;
using Tp = Scheduler::Clock::time_point;

Tp at(std::chrono::nanoseconds d) { return Tp{} + d; }

// spec: [RT-8.1]
TEST(TimerClock, ManualTimeIsVirtualAndMovesOnlyInAdvance) {
  ManualScheduler ms;
  EXPECT_EQ(ms.now(), Tp{});
  ms.run_until_idle();
  EXPECT_EQ(ms.now(), Tp{});
  EXPECT_EQ(ms.advance(250ms), 0u);
  EXPECT_EQ(ms.now(), at(250ms));
  auto strand = std::make_shared<Strand>(ms);
  EXPECT_EQ(strand->now(), at(250ms));  // a strand's clock is its underlying scheduler's
  EXPECT_EQ(ms.clock()(), at(250ms));
  ms.advance_to(at(100ms));  // never backwards
  EXPECT_EQ(ms.now(), at(250ms));
  EXPECT_THROW(ms.advance(-1ms), std::invalid_argument);
  ThreadPool pool(1);
  const Tp before = Scheduler::Clock::now();
  EXPECT_GE(pool.now(), before);  // a pool's clock is steady_clock
}

// spec: [RT-8.3] [RT-8.2]
TEST(ManualTimers, FireInDeadlineOrderTiesInArmingOrderAndOnlyPost) {
  ManualScheduler ms;
  Log log;
  (void)ms.call_at(at(30ms), [&] { log.push_back("30"); });
  (void)ms.call_at(at(10ms), [&] { log.push_back("10a"); });
  (void)ms.call_at(at(20ms), [&] { log.push_back("20"); });
  (void)ms.call_after(10ms, [&] { log.push_back("10b"); });  // a tie, armed later
  EXPECT_EQ(ms.timers(), 4u);
  EXPECT_EQ(ms.next_deadline(), at(10ms));
  EXPECT_EQ(ms.advance(9ms), 0u);  // never early
  EXPECT_EQ(ms.ready(), 0u);
  EXPECT_EQ(ms.advance(1ms), 2u);
  EXPECT_EQ(ms.advance(100ms), 2u);
  EXPECT_EQ(ms.timers(), 0u);
  EXPECT_EQ(ms.ready(), 4u);
  EXPECT_TRUE(log.empty());  // advance posts; it runs nothing
  ms.run_until_idle();
  EXPECT_EQ(log, (Log{"10a", "10b", "20", "30"}));
}

// The queue keeps timers armed in deadline order in a list (the run) and the
// others in a heap (timer_queue.hpp); one advance still posts one order over
// both. Cancels unlink the run's head, its tail and its middle, and a heap
// entry; the tail cancelled, the next in-order arm must still join behind the
// new tail.
// spec: [RT-8.3] [RT-8.4]
TEST(ManualTimers, OneOrderOverTimersArmedInOrderAndOutOfOrderWithCancels) {
  ManualScheduler ms;
  std::vector<int> fired;
  std::vector<TimerHandle> h;
  auto arm = [&](int ms_at) {
    h.push_back(ms.call_at(at(std::chrono::milliseconds(ms_at)), [&fired, ms_at] { fired.push_back(ms_at); }));
  };
  for (int t : {10, 20, 30, 40, 50}) arm(t);  // in order: the run
  arm(25);                                    // ahead of the run's last: the heap
  arm(50);                                    // a tie with the run's last: behind it
  arm(5);                                     // the earliest of all, in the heap
  EXPECT_EQ(ms.timers(), 8u);
  EXPECT_EQ(ms.next_deadline(), at(5ms));
  EXPECT_TRUE(h[0].cancel());  // the run's head (10)
  EXPECT_TRUE(h[2].cancel());  // its middle (30)
  EXPECT_TRUE(h[6].cancel());  // its tail (the second 50)
  EXPECT_TRUE(h[7].cancel());  // the heap's top (5)
  EXPECT_EQ(ms.timers(), 4u);
  EXPECT_EQ(ms.next_deadline(), at(20ms));
  arm(60);  // behind the new tail (50)
  arm(45);  // ahead of it
  EXPECT_EQ(ms.advance(45ms), 4u);  // 20, 25, 40, 45
  EXPECT_TRUE(h[4].cancel());       // 50, now the run's head
  EXPECT_EQ(ms.timers(), 1u);
  EXPECT_EQ(ms.advance(100ms), 1u);
  ms.run_until_idle();
  EXPECT_EQ(fired, (std::vector<int>{20, 25, 40, 45, 60}));
  EXPECT_EQ(ms.timers(), 0u);
  EXPECT_FALSE(ms.next_deadline().has_value());
}

// spec: [RT-8.3]
TEST(ManualTimers, NothingFiresUntilAdvanceEvenWhenAlreadyDue) {
  ManualScheduler ms;
  ms.advance(1s);
  bool ran = false;
  (void)ms.call_at(at(10ms), [&] { ran = true; });  // deadline in the past
  ms.run_until_idle();
  EXPECT_FALSE(ran);
  EXPECT_EQ(ms.timers(), 1u);
  EXPECT_EQ(ms.advance(0ns), 1u);
  EXPECT_FALSE(ran);
  ms.run_until_idle();
  EXPECT_TRUE(ran);
  EXPECT_EQ(ms.next_deadline(), std::nullopt);
}

// spec: [RT-8.2]
TEST(ManualTimers, ACallbackRunsAsAnItemOfItsScheduler) {
  ManualScheduler ms;
  auto strand = std::make_shared<Strand>(ms);
  bool framework = false;
  Tp seen{};
  (void)strand->call_after(5ms, [&] {
    framework = in_framework_context();
    seen = ms.now();
  });
  EXPECT_EQ(ms.timers(), 1u);  // a strand arms on its underlying scheduler's queue
  ms.advance(5ms);
  EXPECT_EQ(ms.run_until_idle(), 1u);  // posted to the strand: one drain item
  EXPECT_TRUE(framework);
  EXPECT_EQ(seen, at(5ms));
}

// spec: [RT-8.4]
TEST(ManualTimers, CancelBeforeDueAndAfterPostedButNotRun) {
  ManualScheduler ms;
  int ran = 0;
  TimerHandle early = ms.call_after(10ms, [&] { ++ran; });
  TimerHandle posted = ms.call_after(10ms, [&] { ++ran; });
  TimerHandle fired = ms.call_after(10ms, [&] { ++ran; });
  EXPECT_TRUE(early.pending());
  EXPECT_TRUE(early.cancel());
  EXPECT_TRUE(early.cancel());  // idempotent: it still never runs
  EXPECT_FALSE(early.pending());
  EXPECT_EQ(ms.timers(), 2u);
  ms.advance(10ms);
  EXPECT_EQ(ms.ready(), 2u);
  EXPECT_TRUE(posted.pending());
  EXPECT_TRUE(posted.cancel());  // due and posted, not run: its item does nothing
  ms.run_until_idle();
  EXPECT_EQ(ran, 1);
  EXPECT_FALSE(fired.cancel());  // it ran
  EXPECT_FALSE(TimerHandle{}.cancel());
}

// spec: [RT-8.2]
TEST(ManualTimers, AThrowingCallbackGoesToTheUnhandledHandler) {
  std::string where;
  tt::HandlerGuard guard([&](std::exception_ptr, const char* w) { where = w; });
  ManualScheduler ms;
  (void)ms.call_after(1ms, [] { throw std::runtime_error("boom"); });
  ms.advance(1ms);
  ms.run_until_idle();
  EXPECT_EQ(where, "a timer callback");
}

// spec: [RT-8.2] [RT-8.1]
TEST(Sleep, ATaskSleepsInVirtualTimeOnAManualScheduler) {
  ManualScheduler ms;
  Log log;
  Tp woke{};
  detach(ms, [](ManualScheduler& s, Log& l, Tp& w) -> Task<> {
    l.push_back("before");
    co_await sleep_for(50ms);
    w = s.now();
    l.push_back("after-for");
    co_await sleep_until(Tp{} + 80ms);
    l.push_back("after-until");
  }(ms, log, woke));
  ms.run_until_idle();
  EXPECT_EQ(log, (Log{"before"}));
  EXPECT_EQ(ms.timers(), 1u);
  ms.advance(49ms);
  EXPECT_EQ(ms.ready(), 0u);
  ms.advance(1ms);
  EXPECT_EQ(ms.ready(), 1u);
  EXPECT_EQ(log, (Log{"before"}));  // posted, not resumed inside advance
  ms.run_until_idle();
  EXPECT_EQ(woke, at(50ms));
  ms.advance(30ms);
  ms.run_until_idle();
  EXPECT_EQ(log, (Log{"before", "after-for", "after-until"}));
}

// spec: [RT-8.2]
TEST(Sleep, AFiberOnAStrandResumesOnTheStrand) {
  ManualScheduler ms;
  auto strand = std::make_shared<Strand>(ms);
  bool on_strand = false;
  detach(*strand, [](Strand& s, bool& ok) -> Task<> {
    co_await sleep_for(1ms);
    ok = &current_scheduler() == &s;
  }(*strand, on_strand));
  ms.run_until_idle();
  ms.advance(1ms);
  ms.run_until_idle();
  EXPECT_TRUE(on_strand);
}

// spec: [RT-8.2] [RT-4.4]
TEST(Sleep, OutsideAFiberThrows) {
  auto sleeping = sleep_for(1ms);
  EXPECT_THROW(sleeping.await_suspend(std::noop_coroutine()), FrameworkContextError);
}

// spec: [RT-8.2]
TEST(Sleep, ATaskSleepsOnAThreadPoolAndResumesOnACarrier) {
  ThreadPool pool(2);
  const Tp start = pool.now();
  auto task = [](ThreadPool& p) -> Task<bool> {
    co_await sleep_for(5ms);
    co_return p.on_carrier();
  };
  EXPECT_TRUE(sync_wait(pool, task(pool)));
  EXPECT_GE(pool.now() - start, 5ms);  // never early
}

// spec: [RT-8.2]
TEST(Sleep, ATaskSleepsInsideSyncWait) {
  const Tp start = Scheduler::Clock::now();
  auto task = []() -> Task<int> {
    co_await sleep_for(2ms);
    co_await sleep_until(Scheduler::Clock::now() + 1ms);
    co_return 7;
  };
  EXPECT_EQ(sync_wait(task()), 7);
  EXPECT_GE(Scheduler::Clock::now() - start, 3ms);
}

// spec: [RT-8.2] [RT-8.3]
TEST(PoolTimers, DueTimersArePostedInDeadlineOrder) {
  // One carrier: the pool runs items in the order the timer thread posted them.
  ThreadPool pool(1);
  std::mutex mu;
  Log log;
  tt::CountDown done(3);
  const Tp now = pool.now();
  auto note = [&](const char* s) {
    return [&, s] {
      std::lock_guard lock(mu);
      log.push_back(s);
      done.count_down();
    };
  };
  (void)pool.call_at(now + 60ms, note("c"));
  (void)pool.call_at(now + 40ms, note("a"));
  (void)pool.call_at(now + 40ms, note("b"));  // a tie: armed after "a"
  done.wait();
  EXPECT_GE(pool.now() - now, 60ms);
  EXPECT_EQ(log, (Log{"a", "b", "c"}));
}

// The threads of this process, as Linux lists them (-1 where it does not).
long process_threads() {
  std::error_code ec;
  long n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return ec ? -1 : n;
}

// spec: [RT-8.2]
TEST(PoolTimers, TheTimerThreadStartsAtTheFirstTimerArmedAndIsJoinedWithThePool) {
  // ThreadSanitizer starts a helper thread of its own with the process's first
  // other thread: count from after one.
  std::thread([] {}).join();
  const long before = process_threads();
  if (before < 0) GTEST_SKIP() << "no /proc/self/task to count threads in";
  tt::CountDown fired(2);
  {
    ThreadPool pool(1);  // one carrier, no rescuer
    EXPECT_EQ(process_threads(), before + 1) << "a pool that armed no timer has no timer thread";
    pool.post_fn([] {});
    EXPECT_EQ(process_threads(), before + 1);
    (void)pool.call_after(1ms, [&fired] { fired.count_down(); });
    EXPECT_EQ(process_threads(), before + 2) << "the first arm started the timer thread";
    (void)pool.call_after(2ms, [&fired] { fired.count_down(); });
    EXPECT_EQ(process_threads(), before + 2) << "one timer thread for every timer";
    fired.wait();
  }
  EXPECT_EQ(process_threads(), before) << "the carrier and the timer thread were joined";
}

// spec: [RT-8.4]
TEST(PoolTimers, CancelRacesFireAndExactlyOneWins) {
  constexpr int kTimers = 400;
  std::vector<std::unique_ptr<std::atomic<bool>>> ran;
  std::vector<bool> cancelled(kTimers, false);
  {
    ThreadPool pool(2);
    std::vector<TimerHandle> handles;
    for (int i = 0; i < kTimers; ++i) {
      ran.push_back(std::make_unique<std::atomic<bool>>(false));
      std::atomic<bool>* flag = ran.back().get();
      handles.push_back(pool.call_at(pool.now(), [flag] { flag->store(true); }));  // due at once
    }
    for (int i = 0; i < kTimers; ++i) cancelled[static_cast<std::size_t>(i)] = handles[static_cast<std::size_t>(i)].cancel();
  }  // the pool drains what was posted: a callback that ran late would show here
  int wins = 0;
  for (int i = 0; i < kTimers; ++i) {
    const bool c = cancelled[static_cast<std::size_t>(i)];
    EXPECT_NE(c, ran[static_cast<std::size_t>(i)]->load()) << "timer " << i;
    wins += c ? 1 : 0;
  }
  RecordProperty("cancelled", wins);
}

// spec: [RT-8.5]
TEST(TimerDestruction, DestroyingAManualSchedulerDropsItsArmedTimers) {
  auto token = std::make_shared<int>(1);
  TimerHandle h;
  {
    ManualScheduler ms;
    h = ms.call_after(1h, [token] { FAIL() << "a dropped timer ran"; });
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);  // the callback was destroyed, not run, not leaked
  EXPECT_FALSE(h.pending());
  EXPECT_TRUE(h.cancel());          // it never runs
}

// spec: [RT-8.5]
TEST(TimerDestruction, DestroyingAThreadPoolDropsItsArmedTimers) {
  auto token = std::make_shared<int>(1);
  TimerHandle far, near;
  tt::Gate near_ran;
  {
    ThreadPool pool(2);
    auto strand = std::make_shared<Strand>(pool);
    far = strand->call_after(1h, [token] { FAIL() << "a dropped timer ran"; });
    near = pool.call_after(1ms, [&near_ran] { near_ran.open(); });
    near_ran.wait();
  }
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_TRUE(far.cancel());
  EXPECT_FALSE(near.cancel());  // it ran
}

// spec: [RT-8.5]
TEST(TimerDestruction, ASyncWaitLoopDropsTimersLeftArmed) {
  auto token = std::make_shared<int>(1);
  TimerHandle h;
  auto task = [](std::shared_ptr<int> t, TimerHandle& out) -> Task<> {
    out = current_scheduler().call_after(1h, [t] { FAIL() << "a dropped timer ran"; });
    co_return;
  };
  sync_wait(task(token, h));  // the loop ends with the timer armed
  EXPECT_EQ(token.use_count(), 1);
  EXPECT_TRUE(h.cancel());
}

}  // namespace
