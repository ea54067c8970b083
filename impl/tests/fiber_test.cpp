// Fibers: per-fiber state, the plain-thread fallback, detach, yield, resume_on.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

namespace {

using namespace turnstile;
using namespace tt;

// ---------------------------------------------------------------- [RT-3.1]

struct Hop {
  detail::FiberState* fiber = nullptr;
  const detail::Frame* context = nullptr;
  Scheduler* scheduler = nullptr;
  bool on_a = false;
  bool on_b = false;
  std::thread::id thread;
};

Hop hop_here(ThreadPool& a, ThreadPool& b) {
  return Hop{detail::current_fiber(), context_head(), &current_scheduler(), a.on_carrier(),
             b.on_carrier(), tt::carrier_thread_id()};  // not foldable across co_await
}

Task<> hopper(ThreadPool& a, ThreadPool& b, detail::FrameRef mine, std::vector<Hop>& hops) {
  tt::set_context(mine);
  hops.push_back(hop_here(a, b));
  for (int i = 0; i < 3; ++i) {
    co_await resume_on(b);
    hops.push_back(hop_here(a, b));
    co_await resume_on(a);
    hops.push_back(hop_here(a, b));
  }
}

// spec: [RT-3.1] [RT-3.6]
TEST(Fiber, StateFollowsTheFiberAcrossCarriers) {
  detail::FrameRef mine = make_frame();
  std::vector<Hop> hops;
  ThreadPool a(1);  // declared after what their items touch: joined first
  ThreadPool b(1);
  sync_wait(a, hopper(a, b, mine, hops));

  ASSERT_EQ(hops.size(), 7u);
  ASSERT_NE(hops[0].fiber, nullptr);
  for (std::size_t i = 0; i < hops.size(); ++i) {
    const bool expect_b = (i % 2) == 1;
    SCOPED_TRACE("hop " + std::to_string(i));
    EXPECT_EQ(hops[i].fiber, hops[0].fiber) << "a different fiber state was current";
    EXPECT_EQ(hops[i].context, mine.get()) << "the fiber's context did not follow it";
    EXPECT_EQ(hops[i].scheduler, expect_b ? static_cast<Scheduler*>(&b) : &a);
    EXPECT_EQ(hops[i].on_b, expect_b);
    EXPECT_EQ(hops[i].on_a, !expect_b);
  }
  EXPECT_NE(hops[0].thread, hops[1].thread);

  // After each step the carrier's previous state (no fiber, empty fallback) is back.
  for (ThreadPool* p : {&a, &b}) {
    tt::Gate done;
    detail::FiberState* fiber = hops[0].fiber;
    const detail::Frame* context = mine.get();
    p->post_fn([&] {
      fiber = detail::current_fiber();
      context = context_head();
      done.open();
    });
    done.wait();
    EXPECT_EQ(fiber, nullptr);
    EXPECT_EQ(context, nullptr);
  }
}

struct Sample {
  char who;
  detail::FiberState* fiber;
  const detail::Frame* context;
};

Task<> sampler(char who, detail::FrameRef mine, std::vector<Sample>& samples) {
  tt::set_context(mine);
  for (int i = 0; i < 4; ++i) {
    samples.push_back(Sample{who, detail::current_fiber(), context_head()});
    co_await yield();
    samples.push_back(Sample{who, detail::current_fiber(), context_head()});
  }
}

// spec: [RT-3.1]
TEST(Fiber, TwoFibersOnOneCarrierNeverSeeEachOthersState) {
  tt::FallbackContextGuard restore;
  detail::FrameRef plain = make_frame();
  tt::set_context(plain);  // the test thread's own fallback slot

  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    ManualScheduler ms;
    detail::FrameRef fa = make_frame();
    detail::FrameRef fb = make_frame();
    std::vector<Sample> samples;
    detach(ms, sampler('a', fa, samples));
    detach(ms, sampler('b', fb, samples));
    tt::Lcg rng(seed);
    while (const std::size_t n = ms.ready()) {
      ms.run_next(rng.below(n));
      // Between steps the test thread is a plain thread with its own slot again.
      ASSERT_EQ(detail::current_fiber(), nullptr);
      ASSERT_EQ(context_head(), plain.get());
    }
    ASSERT_EQ(samples.size(), 16u);
    detail::FiberState* fiber_a = nullptr;
    detail::FiberState* fiber_b = nullptr;
    for (const Sample& s : samples) {
      detail::FiberState*& mine = s.who == 'a' ? fiber_a : fiber_b;
      if (mine == nullptr) mine = s.fiber;
      EXPECT_EQ(s.fiber, mine) << "seed " << seed;
      EXPECT_EQ(s.context, s.who == 'a' ? fa.get() : fb.get()) << "seed " << seed;
    }
    EXPECT_NE(fiber_a, fiber_b);
  }
}

Task<> report_scheduler(Scheduler*& out) {
  out = &current_scheduler();
  co_return;
}

// spec: [RT-3.1]
TEST(Fiber, CarriesItsScheduler) {
  ManualScheduler ms;
  Scheduler* seen = nullptr;
  turnstile_test::run_detached(ms, report_scheduler(seen));
  EXPECT_EQ(seen, &ms);
  EXPECT_FALSE(on_fiber());
  EXPECT_THROW((void)current_scheduler(), FrameworkContextError);
}

// ---------------------------------------------------------------- [RT-3.2]

// spec: [RT-3.2]
TEST(Fiber, PlainThreadHasItsOwnFallbackSlot) {
  tt::FallbackContextGuard restore;
  const int live_before = tt::TestFrame::live.load();
  detail::FrameRef main_frame = make_frame();
  tt::set_context(main_frame);
  EXPECT_FALSE(on_fiber());
  EXPECT_EQ(context_head(), main_frame.get());

  const detail::Frame* other_initial = main_frame.get();
  const detail::Frame* other_after_set = nullptr;
  const detail::Frame* other_frame_ptr = nullptr;
  bool other_on_fiber = true;
  std::thread other([&] {
    other_on_fiber = on_fiber();
    other_initial = context_head();
    detail::FrameRef f = make_frame();
    other_frame_ptr = f.get();
    tt::set_context(f);
    other_after_set = context_head();
  });  // the thread's slot (and the frame it holds) goes away with the thread
  other.join();

  EXPECT_FALSE(other_on_fiber);
  EXPECT_EQ(other_initial, nullptr) << "a new thread starts with an empty slot";
  EXPECT_EQ(other_after_set, other_frame_ptr);
  EXPECT_EQ(context_head(), main_frame.get()) << "another thread's write reached this slot";
  EXPECT_EQ(tt::TestFrame::live.load(), live_before + 1) << "the other thread's frame leaked";
}

// ---------------------------------------------------------------- [RT-3.3]

Task<> mark_then_yield(bool& started, bool& finished) {
  started = true;  // before the first suspension
  co_await yield();
  finished = true;
}

// spec: [RT-3.3]
TEST(Detach, PostsTheStart) {
  ManualScheduler ms;
  bool started = false;
  bool finished = false;
  detach(ms, mark_then_yield(started, finished));
  EXPECT_FALSE(started) << "part of the task ran inside detach()";
  EXPECT_EQ(ms.ready(), 1u);
  ms.run_next();
  EXPECT_TRUE(started);
  EXPECT_FALSE(finished);
  ms.run_until_idle();
  EXPECT_TRUE(finished);
}

// spec: [RT-3.3]
TEST(Detach, PostsTheStartWhenCalledOnACarrierOfTheSamePool) {
  bool started = false;
  bool finished = false;
  bool started_when_detach_returned = true;
  tt::Gate done;
  ThreadPool pool(1);  // destroyed first: drains the fiber's last step
  pool.post_fn([&] {
    detach(pool, mark_then_yield(started, finished));
    started_when_detach_returned = started;
    pool.post_fn([&] { done.open(); });  // queued behind the fiber's start
  });
  done.wait();
  EXPECT_FALSE(started_when_detach_returned);
  // The start was queued before `done`, so it has run; the yielded rest may not have.
  EXPECT_TRUE(started);
}

// ---------------------------------------------------------------- [RT-3.4]

Task<> record_context(const detail::Frame*& out, bool& ran) {
  out = context_head();
  ran = true;
  co_return;
}

Task<> detach_from_fiber(Scheduler& s, detail::FrameRef mine, const detail::Frame*& child_saw,
                         bool& child_ran) {
  tt::set_context(mine);
  detach(s, record_context(child_saw, child_ran));
  co_return;
}

// spec: [RT-3.4]
TEST(Detach, CarriesNoContext) {
  tt::FallbackContextGuard restore;
  detail::FrameRef plain = make_frame();
  tt::set_context(plain);

  ManualScheduler ms;
  const detail::Frame* from_plain = plain.get();
  bool ran_plain = false;
  detach(ms, record_context(from_plain, ran_plain));

  const detail::Frame* from_fiber = plain.get();
  bool ran_fiber = false;
  detail::FrameRef fibers = make_frame();
  turnstile_test::run_detached(ms, detach_from_fiber(ms, fibers, from_fiber, ran_fiber));

  ASSERT_TRUE(ran_plain);
  ASSERT_TRUE(ran_fiber);
  EXPECT_EQ(from_plain, nullptr) << "detach from a plain thread carried its fallback context";
  EXPECT_EQ(from_fiber, nullptr) << "detach from a fiber carried the fiber's context";
}

// ---------------------------------------------------------------- [RT-3.5]

Task<> fail_after_yield(std::string what) {
  co_await yield();
  throw Boom(what);
}

Task<> fine(bool& ran) {
  ran = true;
  co_return;
}

// spec: [RT-3.5]
TEST(Detach, FailureGoesToTheUnhandledExceptionHandler) {
  struct Report {
    std::string what;
    std::string where;
  };
  std::vector<Report> reports;
  tt::HandlerGuard guard([&reports](std::exception_ptr e, const char* where) {
    Report r;
    r.where = where;
    try {
      std::rethrow_exception(e);
    } catch (const Boom& b) {
      r.what = b.what();
    } catch (...) {
      r.what = "<unexpected type>";
    }
    reports.push_back(r);
  });

  ManualScheduler ms;
  bool later_ran = false;
  turnstile_test::run_detached(ms, fail_after_yield("first failure"));
  detach(ms, fine(later_ran));  // the process (and the scheduler) goes on
  ms.run_until_idle();

  ASSERT_EQ(reports.size(), 1u) << "the handler must be called exactly once";
  EXPECT_EQ(reports[0].what, "first failure");
  EXPECT_NE(reports[0].where.find("detached"), std::string::npos) << reports[0].where;
  EXPECT_TRUE(later_ran);
}

// spec: [RT-3.5]
TEST(Detach, DefaultHandlerWritesOneLineNamingTheException) {
  tt::HandlerGuard guard(nullptr);  // no handler installed: the default applies
  ManualScheduler ms;
  testing::internal::CaptureStderr();
  turnstile_test::run_detached(ms, fail_after_yield("distinctive-message-42"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("distinctive-message-42"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// spec: [RT-3.5]
TEST(Detach, AThrowingHandlerDoesNotStopTheProcess) {
  tt::HandlerGuard guard([](std::exception_ptr, const char*) { throw std::logic_error("handler"); });
  ManualScheduler ms;
  bool later_ran = false;
  testing::internal::CaptureStderr();
  turnstile_test::run_detached(ms, fail_after_yield("x"));
  const std::string err = testing::internal::GetCapturedStderr();
  turnstile_test::run_detached(ms, fine(later_ran));
  EXPECT_TRUE(later_ran);
  EXPECT_FALSE(err.empty()) << "the failure must still be reported";
}

// ---------------------------------------------------------------- [RT-3.6]

Task<> yielder(char name, std::string& log) {
  log += name;
  log += '1';
  co_await yield();
  log += name;
  log += '2';
}

// spec: [RT-3.6]
TEST(Fiber, YieldRepostsAtTheBackOfTheQueue) {
  ManualScheduler ms;
  std::string log;
  detach(ms, yielder('a', log));
  detach(ms, yielder('b', log));
  ms.run_next(0);  // a1, then a yields
  EXPECT_EQ(log, "a1");
  EXPECT_EQ(ms.ready(), 2u) << "yield must repost (not run inline, not drop)";
  ms.run_next(0);  // b (older than a's repost)
  EXPECT_EQ(log, "a1b1");
  ms.run_next(0);  // a again: it was at the back
  EXPECT_EQ(log, "a1b1a2");
  ms.run_until_idle();
  EXPECT_EQ(log, "a1b1a2b2");
}

Task<> mover(ManualScheduler& to, std::vector<Scheduler*>& seen, bool& done) {
  seen.push_back(&current_scheduler());
  co_await resume_on(to);
  seen.push_back(&current_scheduler());
  co_await yield();  // stays on its new scheduler
  seen.push_back(&current_scheduler());
  done = true;
}

// spec: [RT-3.6]
TEST(Fiber, ResumeOnContinuesOnTheTargetScheduler) {
  ManualScheduler from;
  ManualScheduler to;
  std::vector<Scheduler*> seen;
  bool done = false;
  detach(from, mover(to, seen, done));
  from.run_next();
  EXPECT_EQ(from.ready(), 0u);
  EXPECT_EQ(to.ready(), 1u) << "resume_on must post the continuation to the target";
  to.run_next();
  EXPECT_EQ(from.ready(), 0u);
  EXPECT_EQ(to.ready(), 1u) << "a yield after resume_on reposts on the new scheduler";
  to.run_next();
  EXPECT_TRUE(done);
  EXPECT_EQ(seen, (std::vector<Scheduler*>{&from, &to, &to}));
}

}  // namespace
