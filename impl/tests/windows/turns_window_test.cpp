// turns_window_test.cpp: the turn rules that promise something while a turn
// is in progress, each held open on a ManualScheduler stepped with run_next
// and checked after every step.
//   - [TURN-1.1] [TURN-2.3]: a serial turn suspended in a co_await is still the
//     turn in progress: the next serial turn does not start; running() counts
//     the turn from its start to its settle, queued() the calls not started.
//   - [TURN-3.2]: an interleaved turn starts while a serial turn is in
//     progress, and no serial turn waits for it.
//   - [TURN-5.3]: snapshots taken while a serial turn is in progress show none
//     of its changes; a snapshot held across its settle never changes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/manual_runs.hpp"

namespace {

using namespace turnstile;

// What the turns of one scenario did, in the order they did it.
struct Steps {
  std::vector<std::string> log;
  bool has(const std::string& s) const {
    for (const auto& e : log)
      if (e == s) return true;
    return false;
  }
};

// Options putting `method` on the interleaved lane.
ActivationOptions interleaving(const std::string& method) {
  ActivationOptions o;
  o.interleaved_methods = {method};
  return o;
}

// The end of a scenario: awaits each call's Task, in call order.
template <class... Calls>
void await_calls(ManualScheduler& ms, Calls&... calls) {
  (sync_wait(ms, std::move(calls)), ...);
}

// spec: [TURN-1.1] [TURN-2.3]
TEST(TurnsWindow, ASuspendedSerialTurnHoldsTheNextOneAndCountsAsRunningUntilItSettles) {
  ManualScheduler ms;
  Activation<int> a("windows/serial", 0, {}, ms);
  Steps st;
  Event e;
  std::uint64_t completed_seen_by_second = 99;
  Task<> first = a.call("first", [&](TurnContext<int>& ctx) -> Task<> {
    st.log.push_back("first started");
    ctx.state() = 1;
    co_await e.wait();  // suspended: still the turn in progress
    ctx.state() = 2;
    st.log.push_back("first body done");
  });
  Task<> second = a.call("second", [&](TurnContext<int>& ctx) -> Task<> {
    st.log.push_back("second started at " + std::to_string(ctx.state()));
    completed_seen_by_second = ctx.activation().turns_completed();
    co_return;
  });
  // Both calls made, neither started.
  EXPECT_EQ(a.queued(), 2u);
  EXPECT_EQ(a.running(), 0u);
  // Every step until nothing is ready: the first starts and suspends; the
  // second never starts, the counts say one running and one queued.
  turnstile_test::run_each_step(ms, [&] {
    EXPECT_FALSE(st.has("second started at 1")) << "the next serial turn started at the first's await";
    if (st.has("first started")) {
      EXPECT_EQ(a.running(), 1u);
      EXPECT_EQ(a.queued(), 1u);
    }
  });
  ASSERT_TRUE(st.has("first started"));
  EXPECT_EQ(a.turns_completed(), 0u);
  // The first resumes; step by step the second starts only after it settled.
  e.set();
  turnstile_test::run_each_step(ms, [&] {
    if (!st.has("first body done")) {
      EXPECT_EQ(st.log.size(), 1u);  // nothing else started
    }
    EXPECT_LE(a.running(), 1u);
    EXPECT_LE(a.queued(), 1u);
  });
  EXPECT_EQ(st.log, (std::vector<std::string>{"first started", "first body done",
                                              "second started at 2"}));
  EXPECT_EQ(completed_seen_by_second, 1u) << "the first had settled when the second started";
  EXPECT_EQ(a.running(), 0u);
  EXPECT_EQ(a.queued(), 0u);
  EXPECT_EQ(a.turns_completed(), 2u);
  await_calls(ms, first, second);
}

// spec: [TURN-3.2]
TEST(TurnsWindow, AnInterleavedTurnStartsInsideASerialTurnAndNoSerialTurnWaitsForIt) {
  ManualScheduler ms;
  Activation<int> a("windows/lanes", 0, interleaving("peek"), ms);
  Steps st;
  Event serial_held, peek_held;
  Task<> hold = a.call("hold", [&](TurnContext<int>& ctx) -> Task<> {
    st.log.push_back("hold started");
    ctx.state() = 1;
    co_await serial_held.wait();
    st.log.push_back("hold done");
  });
  Task<> peek = a.call("peek", [&](TurnContext<int>& ctx) -> Task<> {
    st.log.push_back("peek started at " + std::to_string(ctx.state()));
    co_await peek_held.wait();  // still in progress when the next serial turn runs
    st.log.push_back("peek done at " + std::to_string(ctx.state()));
  });
  Task<> next = a.call("next", [&](TurnContext<int>& ctx) -> Task<> {
    st.log.push_back("next started");
    ctx.state() = 3;
    co_return;
  });
  // The serial turn in progress and suspended: the interleaved one starts anyway.
  turnstile_test::run_each_step(ms, [&] {
    EXPECT_FALSE(st.has("next started"));
  });
  EXPECT_EQ(st.log, (std::vector<std::string>{"hold started", "peek started at 1"}));
  EXPECT_EQ(a.running(), 2u);
  EXPECT_EQ(a.queued(), 1u);
  // The serial turn settles: the next serial turn runs, the interleaved turn
  // still suspended (nothing waits for it).
  serial_held.set();
  turnstile_test::run_each_step(ms, [&] {
    EXPECT_FALSE(st.has("peek done at 3"));
  });
  EXPECT_EQ(st.log, (std::vector<std::string>{"hold started", "peek started at 1", "hold done",
                                              "next started"}));
  EXPECT_EQ(a.running(), 1u);
  EXPECT_EQ(a.queued(), 0u);
  peek_held.set();
  ms.run_until_idle();
  EXPECT_EQ(st.log.back(), "peek done at 3");  // it sees the state as it is now
  await_calls(ms, hold, peek, next);
}

// spec: [TURN-5.3]
TEST(TurnsWindow, SnapshotsTakenWhileASerialTurnRunsShowNoneOfItsChanges) {
  ManualScheduler ms;
  Activation<int> a("windows/snapshot", 10, interleaving("poke"), ms);
  Event e;
  std::shared_ptr<const int> held = a.snapshot();  // held across the whole turn
  Task<> change = a.call("change", [&e](TurnContext<int>& ctx) -> Task<> {
    ctx.state() = 11;
    co_await e.wait();
    ctx.state() = 12;
  });
  std::vector<std::shared_ptr<const int>> taken;  // one per step inside the turn
  turnstile_test::run_each_step(ms, [&] {
    taken.push_back(a.snapshot());
    EXPECT_EQ(*taken.back(), 10) << "a change of the serial turn in progress is visible";
  });
  // An interleaved turn's change is not visible either, until a serial turn settles.
  Task<> poke = a.call("poke", [](int& s) { s += 100; });
  ms.run_until_idle();
  EXPECT_EQ(*a.snapshot(), 10);
  e.set();
  turnstile_test::run_each_step(ms, [&] {
    if (a.running() > 0) {
      EXPECT_EQ(*a.snapshot(), 10);  // not settled yet
    }
  });
  EXPECT_EQ(*a.snapshot(), 12);  // the settled serial turn left 12 (it overwrote the poke)
  EXPECT_EQ(*held, 10) << "a snapshot held across the settle changed";
  for (const auto& s : taken) EXPECT_EQ(*s, 10);
  await_calls(ms, change, poke);
}

}  // namespace
