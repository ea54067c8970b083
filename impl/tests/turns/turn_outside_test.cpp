// turn_outside_test.cpp: what runs outside the turn sequence (spec/turns.md
// §5: tasks, turn re-entry, snapshots), the two schedulers (§6), the self-call
// error (§7), and the contract violations that stop the process.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "turns_support.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"

namespace {

using namespace turnstile;
using namespace turns_test;
using Log = std::vector<std::string>;

bool marker_bound() { return detail::turn_marker().is_bound(); }

// ------------------------------------------------------------------ §5

// spec: [TURN-5.1]
TEST(TurnOutside, ATaskRunsOutsideTheTurnAndMayOutliveIt) {
  ManualScheduler ms;
  Activation<int> a("tasks", 0, {}, ms);
  Log log;
  Event io;
  Outcome<void> turn;
  bool marker_in_turn = false, marker_in_task = true;
  collect(ms, a.call("start", [&](TurnContext<int>& ctx) -> Task<> {
    marker_in_turn = marker_bound();
    ctx.task([&](TaskContext<int>& t) -> Task<> {
      marker_in_task = marker_bound();
      log.push_back("task:start");
      co_await io.wait();
      log.push_back("task:seen " + std::to_string(*t.snapshot()));
    });
    log.push_back("turn:after-task-started");  // the task's start is posted, not run here
    ctx.state() = 3;
    co_return;
  }), turn);
  ms.run_until_idle();
  EXPECT_TRUE(turn.done);  // the turn settled; its task goes on
  EXPECT_EQ(log, (Log{"turn:after-task-started", "task:start"}));
  EXPECT_TRUE(marker_in_turn);
  EXPECT_FALSE(marker_in_task);  // no turn marker outside the turn sequence
  EXPECT_EQ(a.running(), 0u);    // a task is not a turn
  EXPECT_EQ(a.queued(), 0u);
  EXPECT_EQ(a.turns_completed(), 1u);
  io.set();
  ms.run_until_idle();
  EXPECT_EQ(log.back(), "task:seen 3");
  EXPECT_EQ(a.turns_completed(), 1u);
}

// spec: [TURN-5.2]
TEST(TurnOutside, TurnFromATaskIsAFullSerialTurn) {
  ManualScheduler ms;
  Activation<std::vector<int>> a("reentry", {}, {}, ms);
  Event hold, go;
  Outcome<int> plain_result, task_result;
  Outcome<void> spawner;
  collect(ms, a.call("spawner", [&](TurnContext<std::vector<int>>& ctx) -> Task<> {
    ctx.task([&](TaskContext<std::vector<int>>& t) -> Task<> {
      co_await go.wait();
      // Plain form: fn(State&) -> R.
      co_await collect_into(t.turn([](std::vector<int>& s) {
        s.push_back(2);
        return static_cast<int>(s.size());
      }), plain_result);
      // Task form: fn(TurnContext&) -> Task<R>.
      co_await collect_into(t.turn([](TurnContext<std::vector<int>>& c) -> Task<int> {
        c.state().push_back(3);
        co_await yield();
        co_return static_cast<int>(c.state().size());
      }), task_result);
    });
    co_return;
  }), spawner);
  ms.run_until_idle();
  EXPECT_TRUE(spawner.done);
  // A serial turn holds the lane when the task comes back in.
  (void)a.call("holder", [&](TurnContext<std::vector<int>>& ctx) -> Task<> {
    co_await hold.wait();
    ctx.state().push_back(1);
  });
  ms.run_until_idle();
  go.set();
  ms.run_until_idle();
  EXPECT_EQ(a.queued(), 1u);  // the task's turn is queued behind "holder", in arrival order
  EXPECT_FALSE(plain_result.done);
  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(plain_result.value, 2);
  EXPECT_EQ(task_result.value, 3);
  EXPECT_EQ(*a.snapshot(), (std::vector<int>{1, 2, 3}));  // each turn published its snapshot
  EXPECT_EQ(a.turns_completed(), 4u);
}

// spec: [TURN-5.2] [TURN-3.3]
TEST(TurnOutside, TurnFromATaskIsSerialEvenWhenTheActivationInterleaves) {
  ManualScheduler ms;
  ActivationOptions opts;
  opts.reentrancy = Reentrancy::always;
  opts.interleaved_methods = {"turn"};
  Activation<int> a("always", 0, opts, ms);
  Event e1, e2;
  Probe probe;
  auto turn_body = [&probe](Event& e) {
    return [&probe, &e](TurnContext<int>& c) -> Task<> {
      probe.turn_in();
      co_await e.wait();
      ++c.state();
      probe.turn_out();
    };
  };
  Outcome<void> spawner;
  collect(ms, a.call("spawn", [&](TurnContext<int>& ctx) -> Task<> {
    ctx.task([&](TaskContext<int>& t) -> Task<> { co_await t.turn(turn_body(e1)); });
    ctx.task([&](TaskContext<int>& t) -> Task<> { co_await t.turn(turn_body(e2)); });
    co_return;
  }), spawner);
  ms.run_until_idle();
  EXPECT_EQ(a.running(), 1u);  // the second turn() waits for the first
  EXPECT_EQ(a.queued(), 1u);
  e2.set();
  ms.run_until_idle();
  EXPECT_EQ(a.queued(), 1u);
  e1.set();
  ms.run_until_idle();
  EXPECT_EQ(probe.max_turns(), 1);
  EXPECT_EQ(*a.snapshot(), 2);
}

// spec: [TURN-5.3]
TEST(TurnOutside, SnapshotIsTheStateTheLastSerialTurnLeft) {
  ManualScheduler ms;
  Activation<int> a("snap", 10, interleaving({"touch"}), ms);
  const auto initial = a.snapshot();
  EXPECT_EQ(*initial, 10);  // before any turn: the initial state

  Event hold;
  (void)a.call("write", [&](TurnContext<int>& ctx) -> Task<> {
    ctx.state() = 20;
    co_await hold.wait();
    ctx.state() = 30;
  });
  ms.run_until_idle();
  EXPECT_EQ(*a.snapshot(), 10);  // the serial turn in progress is not visible
  hold.set();
  ms.run_until_idle();
  const auto after_write = a.snapshot();
  EXPECT_EQ(*after_write, 30);
  EXPECT_EQ(*initial, 10);  // an old snapshot is immutable

  (void)a.call("touch", [](TurnContext<int>& ctx) -> Task<> {
    ctx.state() = 31;  // interleaved: not published by itself
    co_return;
  });
  ms.run_until_idle();
  EXPECT_EQ(*a.snapshot(), 30);
  (void)a.call("noop", [](TurnContext<int>&) -> Task<> { co_return; });
  ms.run_until_idle();
  EXPECT_EQ(*a.snapshot(), 31);  // the next serial turn left it so

  // From a task and from another activation, too.
  Activation<int> reader("reader", 0, {}, ms);
  Outcome<int> via_task_turn, via_other;
  Outcome<void> spawn;
  collect(ms, reader.call("read", [&a](TurnContext<int>&) -> Task<int> { co_return *a.snapshot(); }),
          via_other);
  collect(ms, a.call("spawn", [&](TurnContext<int>& ctx) -> Task<> {
    ctx.task([&](TaskContext<int>& t) -> Task<> {
      via_task_turn.value = *t.snapshot();
      via_task_turn.done = true;
      co_return;
    });
    co_return;
  }), spawn);
  ms.run_until_idle();
  EXPECT_TRUE(spawn.done);
  EXPECT_EQ(via_other.value, 31);
  EXPECT_EQ(via_task_turn.value, 31);
}

// ------------------------------------------------------------------ §6

using Latch = turnstile_test::Gate;  // for plain threads (no sleeps)

// spec: [TURN-6.1] [TURN-1.2]
TEST(TurnSchedulers, AStrandRunsItsStepsOneAtATimeInPostedOrderOnAPool) {
  ThreadPool pool(4);
  auto strand = std::make_shared<Strand>(pool);
  Probe probe;
  std::vector<int> order;  // plain: only strand steps touch it
  Latch done;
  constexpr int kSteps = 2000;
  for (int i = 0; i < kSteps; ++i) {
    strand->post_fn([&, i] {
      probe.step_in();
      order.push_back(i);
      probe.step_out();
      if (i == kSteps - 1) done.open();
    });
  }
  done.wait();
  EXPECT_EQ(probe.max_steps(), 1);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kSteps));
  for (int i = 0; i < kSteps; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], i);
}

// spec: [TURN-6.1]
TEST(TurnSchedulers, TheTurnSchedulerDecidesOverlapPerActivation) {
  // Two activations' turns overlap on the pool (each blocks its carrier until
  // the other has started), while each activation's own steps never do.
  ThreadPool pool(2);
  Activation<int> a("a", 0, {}, pool);
  Activation<int> b("b", 0, {}, pool);
  Latch a_in, b_in;
  auto ta = a.call("m", [&](TurnContext<int>& ctx) -> Task<> {
    a_in.open();
    b_in.wait();  // blocks this carrier: b must be running on the other one
    ctx.state() = 1;
    co_return;
  });
  auto tb = b.call("m", [&](TurnContext<int>& ctx) -> Task<> {
    b_in.open();
    a_in.wait();
    ctx.state() = 1;
    co_return;
  });
  sync_wait(std::move(ta));
  sync_wait(std::move(tb));
  EXPECT_EQ(*a.snapshot() + *b.snapshot(), 2);
}

// §7 (self-calls and wait cycles) is in turn_wait_test.cpp.

// ------------------------------------------------------------ violations

class TurnDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// spec: [TURN-1.1]
TEST_F(TurnDeathTest, DestroyedWithARunningTurnAborts) {
  EXPECT_DEATH(
      {
        ManualScheduler ms;
        Event never;
        Activation<int> a("doomed", 0, {}, ms);
        (void)a.call("stuck", [&never](TurnContext<int>&) -> Task<> { co_await never.wait(); });
        ms.run_until_idle();
      },
      "activation 'doomed'.*1 turn\\(s\\) running.*TURN-1\\.1");
}

// spec: [TURN-1.1] [TURN-2.3]
TEST_F(TurnDeathTest, DestroyedWithAQueuedCallAborts) {
  EXPECT_DEATH(
      {
        ManualScheduler ms;
        Activation<int> a("abandoned", 0, {}, ms);
        (void)a.call("never-run", [](TurnContext<int>&) -> Task<> { co_return; });
      },
      "activation 'abandoned'.*1 queued.*TURN-1\\.1");
}

// No turn is queued or running, but a ctx.task is still alive: checked too,
// under its own rule (not [TURN-1.1], which is about turns).
// spec: [TURN-5.4]
TEST_F(TurnDeathTest, DestroyedWithATaskStillAliveAborts) {
  EXPECT_DEATH(
      {
        ManualScheduler ms;
        Event never;
        Activation<int> a("tasked", 0, {}, ms);
        auto start = [&never](TurnContext<int>& ctx) -> Task<> {
          ctx.task([&never](TaskContext<int>&) -> Task<> { co_await never.wait(); });
          co_return;
        };
        sync_wait(ms, a.call("start", start));
        if (a.running() != 0 || a.queued() != 0 || a.tasks() != 1) std::exit(3);
      },
      "activation 'tasked'.*0 turn\\(s\\) running, 0 queued and 1 task\\(s\\) alive.*"
      "destroying it \\[TURN-5\\.4\\]");  // the turns' rule is not cited
}

}  // namespace
