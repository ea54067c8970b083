// Task<T>: laziness, ownership, constant-stack transfer, exceptions, same fiber.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "test_support.hpp"
#include "turnstile_test/on_schedulers.hpp"

namespace {

using namespace turnstile;
using namespace tt;

// Counts destructions of the instance that ends up owning it (moved-from
// instances do not count).
struct DestructionProbe {
  explicit DestructionProbe(int* c) : count(c) {}
  DestructionProbe(DestructionProbe&& o) noexcept : count(std::exchange(o.count, nullptr)) {}
  DestructionProbe& operator=(DestructionProbe&&) = delete;
  ~DestructionProbe() {
    if (count != nullptr) ++*count;
  }
  int* count;
};

Task<> set_flag(bool& flag) {
  flag = true;
  co_return;
}

Task<> probed(DestructionProbe probe, bool& ran) {
  ran = true;
  (void)probe;
  co_return;
}

// ---------------------------------------------------------------- [RT-1.1]

// spec: [RT-1.1]
TEST(Task, IsLazy) {
  bool ran = false;
  Task<> t = set_flag(ran);
  EXPECT_TRUE(t.valid());
  EXPECT_FALSE(ran) << "creating a Task must not run its body";
  sync_wait(std::move(t));
  EXPECT_TRUE(ran);
}

Task<> create_then_await_later(bool& child_ran, bool& child_ran_before_await) {
  Task<> child = set_flag(child_ran);
  co_await yield();  // a whole step passes between creating the child and awaiting it
  child_ran_before_await = child_ran;
  co_await std::move(child);
}

// spec: [RT-1.1]
TEST(Task, BodyStartsOnlyWhenAwaited) {
  ManualScheduler ms;
  bool child_ran = false;
  bool child_ran_before_await = true;
  detach(ms, create_then_await_later(child_ran, child_ran_before_await));
  ms.run_next();  // parent creates the child, then yields
  EXPECT_FALSE(child_ran);
  ms.run_until_idle();
  EXPECT_FALSE(child_ran_before_await);
  EXPECT_TRUE(child_ran);
}

// ---------------------------------------------------------------- [RT-1.2]

static_assert(!std::is_copy_constructible_v<Task<>>, "[RT-1.2] Task is move-only");
static_assert(!std::is_copy_assignable_v<Task<>>, "[RT-1.2] Task is move-only");
static_assert(!std::is_copy_constructible_v<Task<int>>, "[RT-1.2] Task is move-only");
static_assert(!std::is_copy_constructible_v<Task<std::unique_ptr<int>>>, "[RT-1.2]");
static_assert(std::is_nothrow_move_constructible_v<Task<int>>, "[RT-1.2] Task moves");
static_assert(std::is_nothrow_move_assignable_v<Task<int>>, "[RT-1.2] Task moves");

// spec: [RT-1.2]
TEST(Task, IsMoveOnly) {
  int destroyed = 0;
  bool ran = false;
  Task<> a = probed(DestructionProbe(&destroyed), ran);
  Task<> b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_TRUE(b.valid());
  EXPECT_EQ(destroyed, 0) << "moving a Task must not destroy its frame";
  sync_wait(std::move(b));
  EXPECT_TRUE(ran);
  EXPECT_EQ(destroyed, 1);
}

// spec: [RT-1.2]
TEST(Task, DroppingAnUnstartedTaskDestroysItsFrameWithoutRunningIt) {
  int destroyed = 0;
  bool ran = false;
  {
    Task<> t = probed(DestructionProbe(&destroyed), ran);
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1) << "the frame (and its parameters) must be destroyed";
  EXPECT_FALSE(ran) << "a dropped Task must never run";
}

// spec: [RT-1.2]
TEST(Task, MoveAssignmentDestroysTheOverwrittenFrame) {
  int destroyed_a = 0;
  int destroyed_b = 0;
  bool ran_a = false;
  bool ran_b = false;
  Task<> a = probed(DestructionProbe(&destroyed_a), ran_a);
  Task<> b = probed(DestructionProbe(&destroyed_b), ran_b);
  a = std::move(b);
  EXPECT_EQ(destroyed_a, 1);
  EXPECT_EQ(destroyed_b, 0);
  sync_wait(std::move(a));
  EXPECT_FALSE(ran_a);
  EXPECT_TRUE(ran_b);
  EXPECT_EQ(destroyed_b, 1);
}

// ---------------------------------------------------------------- [RT-1.3]

// Address of a real stack frame (not a coroutine frame, which lives on the heap).
[[gnu::noinline]] std::uintptr_t stack_position() {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

struct StackSpan {
  std::uintptr_t lowest = UINTPTR_MAX;
  std::uintptr_t highest = 0;
  void note() {
    const std::uintptr_t p = stack_position();
    if (p < lowest) lowest = p;
    if (p > highest) highest = p;
  }
};

// One million of these frames are alive at the deepest point, so the frame is
// kept small: the only parameter is the depth; the counters live outside.
struct ChainProbe {
  std::uint32_t completed = 0;
  StackSpan span;
};
ChainProbe* chain_probe = nullptr;  // set by the test for the duration of the run

Task<> chain(std::uint32_t depth) {
  chain_probe->span.note();
  if (depth > 0) co_await chain(depth - 1);
  chain_probe->span.note();
  ++chain_probe->completed;
}

// spec: [RT-1.3]
TEST(Task, MillionDeepAwaitChainRunsInConstantStack) {
  constexpr std::uint32_t kDepth = 1'000'000;
  ChainProbe probe;
  chain_probe = &probe;
  sync_wait(chain(kDepth));
  chain_probe = nullptr;
  EXPECT_EQ(probe.completed, kDepth + 1);
  // Every level, on the way in and on the way out, runs at the same stack depth
  // (give or take the trampoline's own frames).
  EXPECT_LT(probe.span.highest - probe.span.lowest, 4096u)
      << "the stack grew with the await depth: transfer is not constant-stack";
}

Task<std::uint64_t> sum_chain(std::uint32_t depth) {
  if (depth == 0) co_return 0;
  co_return depth + co_await sum_chain(depth - 1);
}

// spec: [RT-1.3]
TEST(Task, DeepValueChainReturnsThroughEveryLevel) {
  constexpr std::uint32_t kDepth = 200'000;
  const std::uint64_t expected = std::uint64_t{kDepth} * (kDepth + 1) / 2;
  EXPECT_EQ(sync_wait(sum_chain(kDepth)), expected);
}

Task<int> throw_at_bottom(std::uint32_t depth) {
  if (depth == 0) throw Boom("bottom");
  co_return 1 + co_await throw_at_bottom(depth - 1);
}

// spec: [RT-1.3] [RT-1.4]
TEST(Task, DeepChainPropagatesAnExceptionInConstantStack) {
  try {
    (void)sync_wait(throw_at_bottom(20'000));
    ADD_FAILURE() << "expected Boom";
  } catch (const Boom& e) {
    EXPECT_STREQ(e.what(), "bottom");
  }
}

// ---------------------------------------------------------------- [RT-1.4]

Task<int> throws_now() {
  throw Boom("now");
  co_return 0;
}

Task<> throws_void() {
  throw Boom("void");
  co_return;
}

Task<int> throws_after_suspension() {
  co_await yield();
  throw Boom("later");
  co_return 0;
}

Task<int> middle() { co_return 1 + co_await throws_now(); }

struct Caught {
  std::string what;
  bool continued_after = false;
};

Task<> catch_from_child(Caught& out) {
  try {
    (void)co_await middle();
  } catch (const Boom& e) {
    out.what = e.what();
  }
  try {
    co_await throws_void();
  } catch (const Boom& e) {
    out.what += std::string("+") + e.what();
  }
  try {
    (void)co_await throws_after_suspension();
  } catch (const Boom& e) {
    out.what += std::string("+") + e.what();
  }
  out.continued_after = true;
}

// On every scheduler: the exception thrown after a suspension resumes on
// whichever carrier runs the child's next step and still reaches its awaiter.
class TaskOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(TaskOnSchedulers);

// spec: [RT-1.4]
TEST_P(TaskOnSchedulers, ExceptionReachesTheAwaiter) {
  Caught caught;
  run(catch_from_child(caught));
  EXPECT_EQ(caught.what, "now+void+later");
  EXPECT_TRUE(caught.continued_after);
}

// spec: [RT-1.4]
TEST(Task, ExceptionIsRethrownBySyncWait) {
  EXPECT_THROW((void)sync_wait(throws_now()), Boom);
  EXPECT_THROW(sync_wait(throws_void()), Boom);
  EXPECT_THROW((void)sync_wait(middle()), Boom);
}

// ---------------------------------------------------------------- [RT-1.5]

struct Seen {
  detail::FiberState* fiber = nullptr;
  const detail::Frame* context = nullptr;
  Scheduler* scheduler = nullptr;
};

Seen observe() {
  return Seen{detail::current_fiber(), context_head(), &current_scheduler()};
}

Task<> child_observer(Seen& at_start, Seen& after_yield, const detail::FrameRef& replace_with) {
  at_start = observe();
  co_await yield();
  after_yield = observe();
  tt::set_context(replace_with);  // the child writes the fiber's one context slot
}

Task<> parent_observer(Seen (&seen)[4], detail::FrameRef mine, detail::FrameRef childs) {
  tt::set_context(mine);
  seen[0] = observe();
  co_await child_observer(seen[1], seen[2], childs);
  seen[3] = observe();
}

// spec: [RT-1.5]
TEST(Task, ChildTaskRunsAsPartOfTheAwaitingFiber) {
  ManualScheduler ms;
  detail::FrameRef mine = make_frame();
  detail::FrameRef childs = make_frame();
  Seen seen[4];
  detach(ms, parent_observer(seen, mine, childs));
  EXPECT_EQ(ms.run_until_idle(), 2u);  // start, then the child's yield: one fiber, two steps

  ASSERT_NE(seen[0].fiber, nullptr);
  for (const Seen& s : seen) {
    EXPECT_EQ(s.fiber, seen[0].fiber) << "child and parent must be the same fiber";
    EXPECT_EQ(s.scheduler, &ms);
  }
  EXPECT_EQ(seen[0].context, mine.get());
  EXPECT_EQ(seen[1].context, mine.get()) << "the child sees the fiber's context";
  EXPECT_EQ(seen[2].context, mine.get());
  EXPECT_EQ(seen[3].context, childs.get()) << "the awaiter resumes in the same fiber (same slot)";
}

}  // namespace
