// Task<T>'s checked preconditions (spec/runtime.md [RT-1.6]): an empty or
// consumed Task reports the broken precondition instead of crashing or
// returning a stale value.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "test_support.hpp"

namespace {

using namespace turnstile;
using tt::Boom;

Task<std::string> word() { co_return "once"; }
Task<> nothing() { co_return; }
Task<int> throws() {
  throw Boom("the body's own failure");
  co_return 0;
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// Awaits `t` and returns the logic_error's message ("" when none was thrown).
template <class T>
Task<std::string> await_expecting_logic_error(Task<T>& t) {
  try {
    co_await std::move(t);
  } catch (const std::logic_error& e) {
    co_return e.what();
  }
  co_return "";
}

// spec: [RT-1.6]
TEST(TaskPrecondition, AwaitingAnEmptyTaskThrowsLogicErrorNamingIt) {
  Task<int> empty;
  EXPECT_FALSE(empty.valid());
  const std::string msg = sync_wait(await_expecting_logic_error(empty));
  EXPECT_TRUE(has(msg, "empty Task")) << msg;
  EXPECT_TRUE(has(msg, "RT-1.6")) << msg;

  Task<std::string> source = word();
  Task<std::string> taken = std::move(source);
  const std::string moved = sync_wait(await_expecting_logic_error(source));  // moved from
  EXPECT_TRUE(has(moved, "empty Task")) << moved;
  EXPECT_EQ(sync_wait(std::move(taken)), "once") << "the task it was moved into still works";
}

// spec: [RT-1.6] [RT-1.4]
TEST(TaskPrecondition, AwaitingATaskASecondTimeThrowsInsteadOfRepeatingItsResult) {
  auto twice = []() -> Task<std::string> {
    Task<std::string> w = word();
    std::string first = co_await std::move(w);
    Task<std::string> again = await_expecting_logic_error(w);  // named: GCC 12 (see README)
    std::string second = co_await std::move(again);
    co_return first + "|" + second;
  };
  const std::string both = sync_wait(twice());
  EXPECT_TRUE(has(both, "once|")) << both;
  EXPECT_TRUE(has(both, "already taken")) << both;
  EXPECT_TRUE(has(both, "RT-1.6")) << both;

  auto void_twice = []() -> Task<std::string> {
    Task<> n = nothing();
    co_await std::move(n);
    Task<std::string> again = await_expecting_logic_error(n);
    std::string second = co_await std::move(again);
    co_return second;
  };
  EXPECT_TRUE(has(sync_wait(void_twice()), "already taken"));

  // A failed task rethrows its own exception once, then reports the misuse.
  auto failure_twice = []() -> Task<std::string> {
    Task<int> t = throws();
    std::string first;
    try {
      (void)co_await std::move(t);
    } catch (const Boom& e) {
      first = e.what();
    }
    Task<std::string> again = await_expecting_logic_error(t);
    std::string second = co_await std::move(again);
    co_return first + "|" + second;
  };
  const std::string failed = sync_wait(failure_twice());
  EXPECT_TRUE(has(failed, "the body's own failure|")) << failed;
  EXPECT_TRUE(has(failed, "already taken")) << failed;
}

Task<std::size_t> spawn_empty(std::string& message) {
  Scope scope;
  try {
    scope.spawn(Task<>{});
  } catch (const std::logic_error& e) {
    message = e.what();
  }
  const std::size_t running = scope.running();
  Task<> joined = scope.join();
  co_await std::move(joined);  // nothing was counted: the join passes at once
  co_return running;
}

// spec: [RT-1.6] [RT-5.1]
TEST(TaskPrecondition, AnEmptyTaskHandedToDetachOrSpawnIsRefusedAtTheCall) {
  ManualScheduler ms;
  EXPECT_THROW(detach(ms, Task<>{}), std::logic_error);
  EXPECT_EQ(ms.ready(), 0u) << "nothing was started";
  std::string message;
  EXPECT_EQ(sync_wait(spawn_empty(message)), 0u);
  EXPECT_TRUE(has(message, "Scope::spawn of an empty Task")) << message;
}

}  // namespace
