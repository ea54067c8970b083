// turn_await_test.cpp: why an await holds the serial lane (spec/turns.md §4):
// the held lane, slow-turn reporting (with an injected clock, no sleeps), and
// the three ways out.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "turns_support.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/threads.hpp"

namespace {

using namespace turnstile;
using namespace turns_test;
using namespace std::chrono_literals;

// spec: [TURN-4.1]
TEST(TurnAwaitHoldsTheLane, OnlyThisActivationsSerialCallsWait) {
  ManualScheduler ms;
  Activation<int> quotes("quotes", 0, {}, ms);
  Activation<int> cart("cart", 0, interleaving({"read"}), ms);
  Activation<int> other("other-cart", 0, {}, ms);
  Event io;  // the slow operation

  Outcome<int> checkout;
  collect(ms, cart.call("checkout", [&](TurnContext<int>& ctx) -> Task<int> {
    // An awaited call into another activation: this turn stays open until it returns.
    ctx.state() = co_await quotes.call("quote", [&](TurnContext<int>&) -> Task<int> {
      co_await io.wait();
      co_return 99;
    });
    co_return ctx.state();
  }), checkout);
  ms.run_until_idle();

  Outcome<void> add, other_add;
  Outcome<int> read;
  collect(ms, cart.call("add", [](TurnContext<int>& ctx) -> Task<> {
    ++ctx.state();
    co_return;
  }), add);
  collect(ms, cart.call("read", [](TurnContext<int>& ctx) -> Task<int> { co_return ctx.state(); }),
          read);
  collect(ms, other.call("add", [](TurnContext<int>& ctx) -> Task<> {
    ++ctx.state();
    co_return;
  }), other_add);
  ms.run_until_idle();
  EXPECT_FALSE(add.done);  // held for the whole await
  EXPECT_EQ(cart.queued(), 1u);
  EXPECT_TRUE(read.done);       // this activation's interleaved lane is free
  EXPECT_TRUE(other_add.done);  // other activations are not affected

  io.set();
  ms.run_until_idle();
  EXPECT_EQ(checkout.value, 99);
  EXPECT_TRUE(add.done);
  EXPECT_EQ(*cart.snapshot(), 100);
}

// A slow-turn fixture: an activation with an injected clock and a recording
// handler, driven by a ManualScheduler.
class SlowTurn : public ::testing::Test {
 protected:
  ActivationOptions options(std::chrono::nanoseconds threshold = 100ms) {
    const auto record = [this](const std::string& id, const std::string& method,
                               std::chrono::nanoseconds elapsed) {
      reports.push_back({id, method, elapsed});
    };
    ActivationOptions o = slow_after(threshold, record);
    o.clock = clock.fn();
    return o;
  }

  ManualScheduler ms;
  FakeClock clock;
  std::vector<SlowReport> reports;
};

// spec: [TURN-4.2]
TEST_F(SlowTurn, ReportedOnceByCheckAndNotAgainAtSettle) {
  Activation<int> a("slow/1", 0, options(), ms);
  Event hold;
  start_held(ms, a, "checkout", hold);
  clock.advance(60ms);
  a.check_slow_turns();
  EXPECT_TRUE(reports.empty());  // 60 ms: not slow yet

  clock.advance(60ms);
  a.check_slow_turns();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].id, "slow/1");
  EXPECT_EQ(reports[0].method, "checkout");
  EXPECT_EQ(reports[0].elapsed, 120ms);
  EXPECT_EQ(a.slow_turns(), 1u);

  clock.advance(1s);
  a.check_slow_turns();
  EXPECT_EQ(reports.size(), 1u);  // once per slow turn

  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(reports.size(), 1u);  // not again when it settles
  EXPECT_EQ(a.slow_turns(), 1u);
  EXPECT_EQ(a.turns_completed(), 1u);
}

// spec: [TURN-4.2]
TEST_F(SlowTurn, ReportedAtSettleWhenNobodyChecked) {
  Activation<int> a("slow/2", 0, options(), ms);
  Event hold;
  start_held(ms, a, "export", hold);
  clock.advance(250ms);
  EXPECT_TRUE(reports.empty());  // the watchdog runs on the scheduler's clock, which did not move
  hold.set();
  ms.run_until_idle();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].method, "export");
  EXPECT_EQ(reports[0].elapsed, 250ms);
  a.check_slow_turns();
  EXPECT_EQ(reports.size(), 1u);
}

// spec: [TURN-4.2]
TEST_F(SlowTurn, FastTurnsAndQueueTimeAreNotReported) {
  Activation<int> a("slow/3", 0, options(), ms);
  Event hold_first, hold_second;
  (void)a.call("first", held_by(hold_first));
  (void)a.call("second", held_by(hold_second));
  ms.run_until_idle();
  clock.advance(100ms);  // exactly the threshold: not longer than it
  a.check_slow_turns();
  hold_first.set();
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());
  // "second" waited 100 ms in the queue; its turn started only now.
  clock.advance(50ms);
  hold_second.set();
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());
  EXPECT_EQ(a.slow_turns(), 0u);
}

// spec: [TURN-4.2]
TEST_F(SlowTurn, EachSlowTurnIsReportedOnceOnEitherLane) {
  ActivationOptions o = options();
  o.interleaved_methods = {"scan"};
  Activation<int> a("slow/4", 0, o, ms);
  Event h1, h2, h3;
  (void)a.call("write", held_by(h1));
  (void)a.call("scan", held_by(h2));
  (void)a.call("write", held_by(h3));
  ms.run_until_idle();
  clock.advance(200ms);
  a.check_slow_turns();  // "write" #1 and "scan" are running; "write" #2 is queued
  EXPECT_EQ(reports.size(), 2u);
  h1.set();
  h2.set();
  ms.run_until_idle();
  clock.advance(101ms);
  h3.set();
  ms.run_until_idle();  // the second "write", reported at settle
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[2].method, "write");
  EXPECT_EQ(reports[2].elapsed, 101ms);
  EXPECT_EQ(a.slow_turns(), 3u);
}

// spec: [TURN-4.2]
TEST_F(SlowTurn, DefaultThresholdIsFiveSeconds) {
  EXPECT_EQ(ActivationOptions{}.slow_turn, std::chrono::seconds(5));
  ActivationOptions o = options();
  o.slow_turn = ActivationOptions{}.slow_turn;
  Activation<int> a("slow/5", 0, o, ms);
  Event h1, h2;
  start_held(ms, a, "under", h1);
  clock.advance(4900ms);
  h1.set();
  ms.run_until_idle();
  EXPECT_TRUE(reports.empty());
  start_held(ms, a, "over", h2);
  clock.advance(5100ms);
  h2.set();
  ms.run_until_idle();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].method, "over");
}

// spec: [TURN-4.2]
TEST_F(SlowTurn, DefaultHandlerWarnsOnStderr) {
  ActivationOptions o = options();
  o.on_slow_turn = nullptr;
  Activation<int> a("cart/user-42", 0, o, ms);
  Event hold;
  start_held(ms, a, "checkout", hold);
  clock.advance(1500ms);
  ::testing::internal::CaptureStderr();
  a.check_slow_turns();
  hold.set();
  ms.run_until_idle();  // settles: must not warn twice
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("slow turn"), std::string::npos) << err;
  EXPECT_NE(err.find("'cart/user-42'"), std::string::npos) << err;
  EXPECT_NE(err.find("'checkout'"), std::string::npos) << err;
  EXPECT_NE(err.find("1500 ms"), std::string::npos) << err;
  EXPECT_EQ(err.find("slow turn"), err.rfind("slow turn")) << "warned twice: " << err;
  EXPECT_EQ(a.slow_turns(), 1u);
}

// spec: [TURN-4.2]
TEST_F(SlowTurn, HostChecksEveryActivation) {
  Host host(ms);
  auto& a = host.activate<int>("a", 0, options());
  auto& b = host.activate<int>("b", 0, options(500ms));
  Event ha, hb;
  (void)a.call("ma", held_by(ha));
  (void)b.call("mb", held_by(hb));
  ms.run_until_idle();
  clock.advance(300ms);
  host.check_slow_turns();
  ASSERT_EQ(reports.size(), 1u);  // "b" has a 500 ms threshold
  EXPECT_EQ(reports[0].id, "a");
  clock.advance(300ms);
  host.check_slow_turns();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[1].id, "b");
  host.check_slow_turns();
  EXPECT_EQ(reports.size(), 2u);
  ha.set();
  hb.set();
  ms.run_until_idle();
  EXPECT_EQ(reports.size(), 2u);
  auto list = host.activations();
  EXPECT_EQ(list[0].slow_turns, 1u);
  EXPECT_EQ(list[1].slow_turns, 1u);
}

// spec: [TURN-4.2] [TURN-2.3]
TEST_F(SlowTurn, AHandlerMayCallBackIntoTheHost) {
  Host host(ms);
  ActivationOptions o = options();
  std::vector<ActivationStats> seen;
  o.on_slow_turn = [&](const std::string&, const std::string&, std::chrono::nanoseconds) {
    seen = host.activations();  // from inside Host::check_slow_turns: no self-deadlock
  };
  auto& a = host.activate<int>("a", 0, o);
  Event hold;
  start_held(ms, a, "m", hold);
  clock.advance(1s);
  host.check_slow_turns();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, "a");
  EXPECT_EQ(seen[0].running, 1u);
  EXPECT_EQ(seen[0].slow_turns, 1u);
  hold.set();
  ms.run_until_idle();
}

// spec: [TURN-4.2]
TEST(SlowTurnPool, CheckFromAnotherThreadWhileTurnsSettle) {
  // check_slow_turns() races with turns settling on the pool: every slow turn is
  // reported exactly once, by one side or the other.
  ThreadPool pool(4);
  FakeClock clock;
  std::atomic<int> reported{0};
  const auto report = [&](const std::string&, const std::string& method, std::chrono::nanoseconds) {
    EXPECT_EQ(method.substr(0, 4), "turn");
    reported.fetch_add(1);
  };
  ActivationOptions o = slow_after(1ms, report);
  o.clock = clock.fn();
  Activation<int> a("raced", 0, o, pool);
  constexpr int kTurns = 300;
  std::vector<Task<>> calls;
  for (int i = 0; i < kTurns; ++i) {
    calls.push_back(a.call("turn" + std::to_string(i), [&clock](TurnContext<int>& ctx) -> Task<> {
      clock.advance(2ms);  // every turn is slow
      co_await yield();
      ++ctx.state();
    }));
  }
  {
    const turnstile_test::Repeat checker([&] { a.check_slow_turns(); });  // races the settles
    for (auto& t : calls) sync_wait(std::move(t));
  }
  EXPECT_EQ(reported.load(), kTurns);
  EXPECT_EQ(a.slow_turns(), static_cast<std::uint64_t>(kTurns));
}

// ------------------------------------------------------------- the ways out

// spec: [TURN-4.3]
TEST(TurnThreeWaysOut, OneMoveTheSlowCallIntoTheCaller) {
  ManualScheduler ms;
  Activation<int> cart("cart", 0, {}, ms);
  Event io;
  Outcome<void> checkout, add;
  // The caller does the slow part first, then passes the result in.
  detach(ms, [](Activation<int>& c, Event& slow, Outcome<void>& out) -> Task<> {
    co_await slow.wait();
    int quote = 99;  // not const: clang warns a captured constant is unused
    co_await collect_into(c.call("checkout", [quote](TurnContext<int>& ctx) -> Task<> {
      ctx.state() += quote;
      co_return;
    }), out);
  }(cart, io, checkout));
  ms.run_until_idle();
  collect(ms, cart.call("add", [](TurnContext<int>& ctx) -> Task<> {
    ++ctx.state();
    co_return;
  }), add);
  ms.run_until_idle();
  EXPECT_TRUE(add.done);  // the lane was free during the slow part
  EXPECT_FALSE(checkout.done);
  io.set();
  ms.run_until_idle();
  EXPECT_TRUE(checkout.done);
  EXPECT_EQ(*cart.snapshot(), 100);
}

// spec: [TURN-4.3] [TURN-5.1] [TURN-5.2]
TEST(TurnThreeWaysOut, TwoMoveTheSlowCallIntoATaskAndComeBackWithATurn) {
  ManualScheduler ms;
  Activation<int> cart("cart", 0, {}, ms);
  Event io;
  Outcome<void> checkout, add;
  collect(ms, cart.call("checkout", [&io](TurnContext<int>& ctx) -> Task<> {
    ctx.task([&io](TaskContext<int>& t) -> Task<> {
      co_await io.wait();  // outside the turn sequence
      int quote = 99;  // not const: see above
      co_await t.turn([quote](int& total) { total += quote; });  // back in, only to store
    });
    co_return;  // the turn settles now
  }), checkout);
  ms.run_until_idle();
  EXPECT_TRUE(checkout.done);
  collect(ms, cart.call("add", [](TurnContext<int>& ctx) -> Task<> {
    ++ctx.state();
    co_return;
  }), add);
  ms.run_until_idle();
  EXPECT_TRUE(add.done);
  EXPECT_EQ(*cart.snapshot(), 1);
  io.set();
  ms.run_until_idle();
  EXPECT_EQ(*cart.snapshot(), 100);
}

// spec: [TURN-4.3] [TURN-3.3]
TEST(TurnThreeWaysOut, ThreeLetTheReadInterleave) {
  ManualScheduler ms;
  Activation<int> cart("cart", 7, interleaving({"total"}), ms);
  Event io;
  Outcome<void> slow_write;
  Outcome<int> total;
  collect(ms, cart.call("reprice", [&io](TurnContext<int>& ctx) -> Task<> {
    co_await io.wait();
    ctx.state() *= 2;
  }), slow_write);
  ms.run_until_idle();
  collect(ms, cart.call("total", [](TurnContext<int>& ctx) -> Task<int> { co_return ctx.state(); }),
          total);
  ms.run_until_idle();
  EXPECT_TRUE(total.done);  // did not queue behind the slow write
  EXPECT_EQ(total.value, 7);
  io.set();
  ms.run_until_idle();
  EXPECT_TRUE(slow_write.done);
}

}  // namespace
