// scoped() and when_all(): structured concurrency that always joins, and the
// results of children (spec/runtime.md §5). Interleavings come from a
// ManualScheduler driven step by step, Events stand in for slow children.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "test_support.hpp"
#include "turnstile_test/on_schedulers.hpp"

namespace {

using namespace turnstile;
using tt::Boom;

// What the awaiter of a scoped/when_all Task saw.
template <class T>
struct Seen {
  bool done = false;
  std::optional<T> value;
  std::string error;  // what() of the exception, empty when none
};

template <class T>
Task<> await_into(Task<T> task, Seen<T>& seen) {
  try {
    seen.value.emplace(co_await std::move(task));
  } catch (const std::exception& e) {
    seen.error = e.what();
  }
  seen.done = true;
}

// Sets `gate` and runs `ms` until idle: the awaiter must then have seen its
// Task finish.
template <class T>
void open_and_settle(ManualScheduler& ms, Event& gate, const Seen<T>& seen) {
  gate.set();
  ms.run_until_idle();
  ASSERT_TRUE(seen.done);
}

Task<> wait_then_log(Event& ev, std::vector<std::string>& log, std::string name) {
  co_await ev.wait();
  log.push_back(name);
}

Task<> yield_once() { co_await yield(); }

Task<> fail_after(Event& ev, std::string what) {
  co_await ev.wait();
  throw Boom(what);
}

// ---------------------------------------------------------------- [RT-5.5]

// spec: [RT-5.5] [RT-5.3]
TEST(Scoped, ABodyThatThrowsHasEveryChildJoinedThenItsExceptionRethrown) {
  ManualScheduler ms;
  Event slow;
  std::vector<std::string> log;
  Seen<int> seen;
  auto body = [&](Scope& s) -> Task<int> {
    s.spawn(wait_then_log(slow, log, "child-1"));
    s.spawn(wait_then_log(slow, log, "child-2"));
    throw Boom("body");
    co_return 0;
  };
  turnstile_test::run_detached(ms, await_into(scoped(body), seen));
  EXPECT_FALSE(seen.done) << "the body threw, but its children still run: no early exit";
  EXPECT_TRUE(log.empty());
  ASSERT_NO_FATAL_FAILURE(open_and_settle(ms, slow, seen));
  EXPECT_EQ(seen.error, "body");
  EXPECT_EQ(log, (std::vector<std::string>{"child-1", "child-2"}));
}

// spec: [RT-5.5]
TEST(Scoped, ReturnsTheBodysValueOnceEveryChildHasFinished) {
  ManualScheduler ms;
  Event slow;
  std::vector<std::string> log;
  Seen<std::string> seen;
  auto body = [&](Scope& s) -> Task<std::string> {
    s.spawn(wait_then_log(slow, log, "child"));
    log.push_back("body");
    co_return "value";
  };
  turnstile_test::run_detached(ms, await_into(scoped("named", body), seen));
  EXPECT_FALSE(seen.done) << "returned before its child finished";
  ASSERT_NO_FATAL_FAILURE(open_and_settle(ms, slow, seen));
  EXPECT_EQ(seen.value, "value");
  EXPECT_EQ(log, (std::vector<std::string>{"body", "child"}));
}

// spec: [RT-5.5] [RT-5.3]
TEST(Scoped, AChildsFailureIsRethrownAsJoinReportsItAndTheBodysWinsOverIt) {
  ManualScheduler ms;
  Event go;
  Seen<int> child_failed, both_failed;
  auto ok_body = [&](Scope& s) -> Task<int> {
    s.spawn(fail_after(go, "child"));
    co_return 1;
  };
  auto failing_body = [&](Scope& s) -> Task<int> {
    s.spawn(fail_after(go, "child"));
    co_await yield();  // the child is started and waits
    throw Boom("body");
  };
  detach(ms, await_into(scoped(ok_body), child_failed));
  turnstile_test::run_detached(ms, await_into(scoped(failing_body), both_failed));
  ASSERT_NO_FATAL_FAILURE(open_and_settle(ms, go, child_failed));
  EXPECT_FALSE(child_failed.value.has_value()) << "a child failed: no value";
  EXPECT_EQ(child_failed.error, "child");
  ASSERT_TRUE(both_failed.done);
  EXPECT_EQ(both_failed.error, "body");
}

// spec: [RT-5.5] [RT-4.4]
TEST(Scoped, AVoidBodyWithoutChildrenCompletesAndNeedsAFiberOnlyToSpawn) {
  bool ran = false;
  auto body = [&](Scope&) -> Task<> {
    ran = true;
    co_return;
  };
  sync_wait(scoped(body));
  EXPECT_TRUE(ran);
  auto spawn_body = [](Scope& s) -> Task<> {
    s.spawn(yield_once());
    co_return;
  };
  EXPECT_NO_THROW(sync_wait(scoped(spawn_body)));  // sync_wait runs it on a fiber
}

// ---------------------------------------------------------------- [RT-5.6]

Task<int> number_after(Event& ev, int n, std::vector<int>& order) {
  co_await ev.wait();
  order.push_back(n);
  co_return n;
}

Task<std::string> text(std::string s) { co_return s; }

Task<> nothing(bool& ran) {
  ran = true;
  co_return;
}

// spec: [RT-5.6] [RT-5.1]
TEST(WhenAll, ReturnsEveryResultInArgumentOrderWhateverTheOrderTheyFinish) {
  ManualScheduler ms;
  Event first, second;
  std::vector<int> order;
  bool ran = false;
  using Result = std::tuple<int, std::string, std::monostate, int>;
  Seen<Result> seen;
  Task<Result> all =
      when_all(number_after(first, 1, order), text("two"), nothing(ran), number_after(second, 4, order));
  static_assert(std::is_same_v<decltype(all), Task<Result>>);
  EXPECT_FALSE(ran) << "nothing starts before the co_await";
  detach(ms, await_into(std::move(all), seen));
  ms.run_next();  // the awaiter: spawns the four children, posted
  EXPECT_FALSE(ran) << "a child runs in its own posted fiber, never inline";
  EXPECT_EQ(ms.ready(), 4u);
  ms.run_until_idle();
  EXPECT_TRUE(ran);
  second.set();  // the last argument finishes first
  ms.run_until_idle();
  EXPECT_FALSE(seen.done);
  ASSERT_NO_FATAL_FAILURE(open_and_settle(ms, first, seen));
  EXPECT_EQ(order, (std::vector<int>{4, 1}));
  ASSERT_TRUE(seen.value.has_value()) << seen.error;
  EXPECT_EQ(std::get<0>(*seen.value), 1);
  EXPECT_EQ(std::get<1>(*seen.value), "two");
  EXPECT_EQ(std::get<3>(*seen.value), 4);
}

// spec: [RT-5.6] [RT-5.3]
TEST(WhenAll, AFailureIsRethrownOnlyAfterEveryChildHasFinished) {
  ManualScheduler ms;
  Event early, late;
  std::vector<int> order;
  Seen<std::tuple<std::monostate, int>> seen;
  auto all = when_all(fail_after(early, "first failure"), number_after(late, 7, order));
  detach(ms, await_into(std::move(all), seen));
  early.set();
  ms.run_until_idle();
  EXPECT_FALSE(seen.done) << "rethrown while a sibling still ran";
  ASSERT_NO_FATAL_FAILURE(open_and_settle(ms, late, seen));
  EXPECT_EQ(seen.error, "first failure");
  EXPECT_FALSE(seen.value.has_value());
  EXPECT_EQ(order, (std::vector<int>{7}));
}

const FiberLocal<std::string> request("request");

Task<std::string> read_request() { co_return request.or_else("-"); }

// spec: [RT-5.6] [RT-5.2] [FL-3.2]
TEST(WhenAll, ChildrenStartWithTheAwaitersBindings) {
  auto body = []() -> Task<std::tuple<std::string, std::string>> {
    auto all = when_all(read_request(), read_request());
    auto both = co_await std::move(all);
    co_return both;
  };
  auto bound = request.where("r-7", body);
  auto [a, b] = sync_wait(std::move(bound));
  EXPECT_EQ(a, "r-7");
  EXPECT_EQ(b, "r-7");
}

// ---------------------------------------------------------------- on every scheduler

// Children spread over the carriers finish in any order; when_all's results keep
// the order of its arguments.
class WhenAllOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(WhenAllOnSchedulers);

Task<int> after_yields(int n) {
  for (int i = 0; i < n; ++i) co_await yield();
  co_return n;
}

// spec: [RT-5.6]
TEST_P(WhenAllOnSchedulers, ReturnsEveryResultInArgumentOrder) {
  bool ran = false;
  const auto [three, none, zero, two] =
      run(when_all(after_yields(3), nothing(ran), after_yields(0), text("two")));
  EXPECT_EQ(three, 3);
  EXPECT_TRUE(ran);
  EXPECT_EQ(zero, 0);
  EXPECT_EQ(two, "two");
  (void)none;
}

}  // namespace
