// head_cache_test.cpp: the thread's cached chain head behind FiberLocal::get's
// inlined depth-1 read (detail::current_head(), fiber.hpp). The cache must equal
// the current slot's head after every write (where, run, a direct slot write),
// after every fiber switch on a carrier, and in a coroutine resumed on another
// carrier (the inlined read must not reuse the previous carrier's
// thread-local). Interleavings from a ManualScheduler (run_next order) or from
// a real two-carrier ThreadPool with yields; no test sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "fl_support.hpp"

namespace {

using namespace turnstile;

FiberLocal<int> first("head_cache.first");
FiberLocal<int> second("head_cache.second");

const detail::Frame* slot_head() { return detail::current_context().get(); }

// Restores the plain thread's fallback slot on exit.
struct SlotGuard {
  detail::FrameRef saved = detail::current_context();
  ~SlotGuard() { detail::current_context() = std::move(saved); }
};

// spec: [FL-5.2] [FL-5.5]
TEST(HeadCache, FollowsEveryWriteOfThePlainThreadsSlot) {
  SlotGuard guard;
  EXPECT_EQ(detail::current_head(), nullptr);
  first.where(1, [] {
    EXPECT_EQ(detail::current_head(), slot_head());
    EXPECT_EQ(first.get(), 1);  // depth 1: the inlined read
    second.where(2, [] {
      EXPECT_EQ(first.get(), 1);  // depth 2: the walk
      EXPECT_EQ(second.get(), 2);
    });
    EXPECT_EQ(first.get(), 1);
    EXPECT_FALSE(second.is_bound());  // restored: the head moved back
  });
  EXPECT_FALSE(first.is_bound());
  const FiberContext snapshot = first.where(7, [] { return FiberContext::capture(); });
  snapshot.run([] { EXPECT_EQ(first.get(), 7); });
  EXPECT_FALSE(first.is_bound());
  // A write straight into the slot (the runtime's own path) refreshes it too.
  detail::current_context() = snapshot.head();
  EXPECT_EQ(detail::current_head(), snapshot.head().get());
  EXPECT_EQ(first.get(), 7);
  detail::current_context() = detail::FrameRef();
  EXPECT_EQ(detail::current_head(), nullptr);
  EXPECT_FALSE(first.is_bound());
}

Task<> read_after_each_step(int value, int steps, std::vector<int>* seen) {
  co_await first.where(value, [=]() -> Task<> {
    for (int i = 0; i < steps; ++i) {
      seen->push_back(first.get());  // depth 1, read inline after every resume
      co_await yield();
    }
    seen->push_back(first.get());
  });
  seen->push_back(first.is_bound() ? -1 : 0);  // restored at the end
}

// spec: [FL-5.1] [RT-3.1]
TEST(HeadCache, FibersInterleavedOnOneCarrierEachReadTheirOwnHead) {
  ManualScheduler ms;
  std::vector<int> a, b;
  detach(ms, read_after_each_step(1, 5, &a));
  detach(ms, read_after_each_step(2, 5, &b));
  // Newest-ready-first order: the fibers alternate at every yield.
  while (ms.ready() > 0) ms.run_next(ms.ready() - 1);
  EXPECT_EQ(a, (std::vector<int>{1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(b, (std::vector<int>{2, 2, 2, 2, 2, 2, 0}));
  EXPECT_EQ(detail::current_head(), slot_head());  // the plain thread's again
}

Task<> read_on_every_carrier(int value, int steps, std::atomic<int>* wrong,
                             std::set<std::thread::id>* carriers) {
  co_await first.where(value, [=]() -> Task<> {
    for (int i = 0; i < steps; ++i) {
      carriers->insert(std::this_thread::get_id());  // this fiber's own set: one step at a time
      if (first.get() != value) wrong->fetch_add(1, std::memory_order_relaxed);
      co_await yield();  // reposted to the pool: the next step may run on the other carrier
    }
  });
}

Task<> spawn_readers(int fibers, int steps, std::atomic<int>* wrong,
                     std::vector<std::set<std::thread::id>>* carriers) {
  Scope scope;
  for (int f = 0; f < fibers; ++f)
    scope.spawn(read_on_every_carrier(100 + f, steps, wrong, &(*carriers)[static_cast<std::size_t>(f)]));
  Task<> joined = scope.join();
  co_await std::move(joined);
}

// spec: [FL-4.7] [FL-5.1]
TEST(HeadCache, ACoroutineResumedOnAnotherCarrierReadsThatCarriersHead) {
  constexpr int kFibers = 8;
  constexpr int kSteps = 2000;
  std::atomic<int> wrong{0};
  std::vector<std::set<std::thread::id>> carriers(kFibers);
  {
    ThreadPool pool(2);
    sync_wait(pool, spawn_readers(kFibers, kSteps, &wrong, &carriers));
  }
  EXPECT_EQ(wrong.load(), 0);
  int moved = 0;  // fibers that ran on both carriers (recorded, not required)
  for (const auto& c : carriers) moved += c.size() > 1 ? 1 : 0;
  RecordProperty("fibers_that_changed_carrier", moved);
}

}  // namespace
