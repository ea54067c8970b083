// Contract violations that stop the process with a message (gtest death tests).
//
// The "threadsafe" style re-executes the test binary for the death statement,
// so the carriers of other tests (and of the statement itself) are no hazard.
#include <gtest/gtest.h>

#include "test_support.hpp"

namespace {

using namespace turnstile;

class RuntimeDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

Task<> wait_on(Event& ev) { co_await ev.wait(); }

Task<> leave_scope_with_running_child(Event& ev) {
  Scope scope;
  scope.spawn(wait_on(ev));
  co_await yield();  // the child starts and parks on the event
  co_return;         // ~Scope with the child still running
}

void destroy_scope_early() {
  ManualScheduler ms;
  Event ev;
  turnstile_test::run_detached(ms, leave_scope_with_running_child(ev));
}

// spec: [RT-5.4]
TEST_F(RuntimeDeathTest, ScopeDestroyedWithARunningChildStopsTheProcess) {
  // The message gives where the scope was created and the fix.
  EXPECT_DEATH(destroy_scope_early(),
               "Scope created at .*death_test\\.cpp:[0-9]+ \\(in .*leave_scope_with_running_child"
               ".*1 child fiber.*scoped\\(.*RT-5\\.4");
}

Task<> leave_named_scope(Event& ev) {
  Scope scope("fan-out");
  scope.spawn(wait_on(ev));
  co_await yield();
}

void destroy_named_scope_early() {
  ManualScheduler ms;
  Event ev;
  turnstile_test::run_detached(ms, leave_named_scope(ev));
}

// spec: [RT-5.4]
TEST_F(RuntimeDeathTest, AnAbortedScopeIsNamed) {
  EXPECT_DEATH(destroy_named_scope_early(), "Scope 'fan-out' created at .*death_test\\.cpp:[0-9]+");
}

void destroy_pool_from_its_carrier() {
  auto* pool = new ThreadPool(1);
  tt::Gate never;
  pool->post_fn([pool] { delete pool; });
  never.wait();
}

// spec: [RT-2.3]
TEST_F(RuntimeDeathTest, ThreadPoolDestroyedFromItsOwnCarrierStopsTheProcess) {
  EXPECT_DEATH(destroy_pool_from_its_carrier(), "own carriers.*RT-2\\.3");
}

}  // namespace
