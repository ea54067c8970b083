// turn_wait_test.cpp: self-calls and wait cycles (spec/turns.md §7). call()
// always queues; an await that would wait for itself throws at the co_await,
// naming every hop; nothing ever hangs, and nothing else is refused.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "turns_support.hpp"
#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;
using namespace turns_test;
using Log = std::vector<std::string>;

// `o` settled with `expected`, without an error.
void expect_value(const Outcome<int>& o, int expected) {
  ASSERT_TRUE(o.done);
  EXPECT_FALSE(o.error) << what(o.error);
  EXPECT_EQ(o.value, expected);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Task<> noop_body(TurnContext<int>&) { co_return; }

// spec: [TURN-7.1]
TEST(TurnWait, AnAwaitedSelfCallThrowsAtTheAwaitAndStillRunsAfterTheTurn) {
  ManualScheduler ms;
  Activation<int> a("acc/1", 0, {}, ms);
  std::string error;
  Outcome<int> outer;
  collect(ms, a.call("deposit", [&](TurnContext<int>& ctx) -> Task<int> {
    auto audit = ctx.activation().call("audit", [](TurnContext<int>& c) -> Task<> {
      c.state() += 100;  // runs after "deposit" settled
      co_return;
    });
    try {
      co_await std::move(audit);
    } catch (const TurnReentrancyError& e) {
      error = e.what();
    }
    ctx.state() += 1;
    co_return ctx.state();
  }), outer);
  ms.run_until_idle();
  ASSERT_TRUE(outer.done);  // no hang: the turn went on
  EXPECT_EQ(outer.value, 1);
  EXPECT_TRUE(has(error, "call 'audit' into 'acc/1'")) << error;
  EXPECT_TRUE(has(error, "turn 'deposit' of 'acc/1'")) << error;
  EXPECT_TRUE(has(error, "queued behind")) << error;
  EXPECT_TRUE(has(error, "[TURN-7.1]")) << error;
  EXPECT_EQ(a.turns_completed(), 2u);  // the call was queued, not refused
  EXPECT_EQ(*a.snapshot(), 101);
}

// spec: [TURN-7.1] [TURN-2.2]
TEST(TurnWait, AnUnawaitedSelfCallRunsAfterTheTurnAndSeesItsState) {
  ManualScheduler ms;
  Activation<int> a("acc/2", 0, {}, ms);
  Log log;
  Outcome<void> outer;
  collect(ms, a.call("deposit", [&](TurnContext<int>& ctx) -> Task<> {
    ctx.state() = 5;
    (void)ctx.activation().call("audit", [&](TurnContext<int>& c) -> Task<> {
      log.push_back("audit saw " + std::to_string(c.state()));
      co_return;
    });
    log.push_back("called");
    co_await yield();  // the turn is still open: audit waits behind it
    ctx.state() = 7;
    log.push_back("deposit ends");
  }), outer);
  ms.run_until_idle();
  ASSERT_TRUE(outer.done);
  EXPECT_FALSE(outer.error) << what(outer.error);
  EXPECT_EQ(log, (Log{"called", "deposit ends", "audit saw 7"}));
}

// spec: [TURN-7.1] [TURN-5.2]
TEST(TurnWait, AwaitingTurnFnInsideATurnThrowsUnawaitedItQueues) {
  ManualScheduler ms;
  Activation<int> a("acc/3", 0, {}, ms);
  std::string error;
  Outcome<void> outer;
  collect(ms, a.call("deposit", [&](TurnContext<int>& ctx) -> Task<> {
    auto inc = ctx.turn([](int& s) { ++s; });
    try {
      co_await std::move(inc);
    } catch (const TurnReentrancyError& e) {
      error = e.what();
    }
    (void)ctx.turn([](int& s) { s += 10; });
  }), outer);
  ms.run_until_idle();
  ASSERT_TRUE(outer.done);
  EXPECT_TRUE(has(error, "call 'turn' into 'acc/3'")) << error;
  EXPECT_EQ(*a.snapshot(), 11);  // both queued turns ran after "deposit"
}

// spec: [TURN-7.1] [FL-3.8]
TEST(TurnWait, AContextRunInsideTheTurnKeepsTheTurnMarker) {
  ManualScheduler ms;
  Activation<int> a("acc/4", 0, {}, ms);
  const FiberContext outside = FiberContext::capture();
  std::string error;
  Outcome<void> outer;
  collect(ms, a.call("deposit", [&](TurnContext<int>& ctx) -> Task<> {
    auto body = [&]() -> Task<> {
      auto audit = ctx.activation().call("audit", noop_body);
      co_await std::move(audit);
    };
    try {
      auto under_snapshot = outside.run(body);
      co_await std::move(under_snapshot);
    } catch (const TurnReentrancyError& e) {
      error = e.what();
    }
  }), outer);
  ms.run_until_idle();
  ASSERT_TRUE(outer.done);
  EXPECT_TRUE(has(error, "'audit'")) << error;
}

// One request's chain a -> b -> c -> a (Orleans' first problem).
// spec: [TURN-7.1]
TEST(TurnWait, ACycleWithinOneRequestNamesEveryHop) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Activation<int> b("b", 0, {}, ms);
  Activation<int> c("c", 0, {}, ms);
  std::string seen_in_c;
  Outcome<void> ping;
  collect(ms, a.call("ping", [&](TurnContext<int>&) -> Task<> {
    auto relay = b.call("relay", [&](TurnContext<int>&) -> Task<> {
      auto pong = c.call("pong", [&](TurnContext<int>&) -> Task<> {
        auto back = a.call("back", noop_body);
        try {
          co_await std::move(back);
        } catch (const TurnReentrancyError& e) {
          seen_in_c = e.what();
          throw;
        }
      });
      co_await std::move(pong);
    });
    co_await std::move(relay);
  }), ping);
  ms.run_until_idle();
  ASSERT_TRUE(ping.done);  // the error travelled back up the chain; nothing waits
  EXPECT_TRUE(has(what(ping.error), "'back'")) << what(ping.error);
  EXPECT_TRUE(has(seen_in_c, "turn 'pong' of 'c' awaits call 'back' into 'a', which is queued behind "
                             "turn 'ping' of 'a', which awaits call 'relay' into 'b', which awaits "
                             "call 'pong' into 'c'"))
      << seen_in_c;
  for (auto* act : {&a, &b, &c}) {
    EXPECT_EQ(act->running(), 0u);
    EXPECT_EQ(act->queued(), 0u);
  }
  EXPECT_EQ(a.turns_completed(), 2u);  // "back" ran after "ping"
}

// Two independent requests: a's turn awaits b while b's turn awaits a
// (Orleans' second problem). The await that closes the cycle throws; the other
// request goes on normally.
// spec: [TURN-7.1]
TEST(TurnWait, ACycleOfTwoIndependentRequestsIsRefusedAtTheClosingAwait) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Activation<int> b("b", 0, {}, ms);
  Event go_a, go_b;
  Outcome<int> r1, r2;
  collect(ms, a.call("x", [&](TurnContext<int>&) -> Task<int> {
    co_await go_a.wait();
    auto y = b.call("y", [](TurnContext<int>&) -> Task<int> { co_return 2; });
    co_return 1 + co_await std::move(y);
  }), r1);
  collect(ms, b.call("u", [&](TurnContext<int>&) -> Task<int> {
    co_await go_b.wait();
    auto v = a.call("v", [](TurnContext<int>&) -> Task<int> { co_return 20; });
    co_return 10 + co_await std::move(v);
  }), r2);
  ms.run_until_idle();  // both turns hold their serial lanes
  go_a.set();
  ms.run_until_idle();  // x awaits y, queued behind u: no cycle yet
  EXPECT_FALSE(r1.done);
  go_b.set();
  ms.run_until_idle();  // u awaits v, queued behind x: closes the cycle
  expect_value(r1, 3);
  ASSERT_TRUE(r2.done);
  const std::string e = what(r2.error);
  EXPECT_TRUE(has(e, "turn 'u' of 'b' awaits call 'v' into 'a', which is queued behind turn 'x' of "
                     "'a', which awaits call 'y' into 'b', which is queued behind turn 'u' of 'b'"))
      << e;
  EXPECT_EQ(a.turns_completed(), 2u);
  EXPECT_EQ(b.turns_completed(), 2u);
}

// Three independent requests a -> b -> c -> a (Orleans' third problem).
// spec: [TURN-7.1]
TEST(TurnWait, ALongerCycleOfIndependentRequestsIsRefused) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms), b("b", 0, {}, ms), c("c", 0, {}, ms);
  Activation<int>* next[] = {&b, &c, &a};
  Activation<int>* acts[] = {&a, &b, &c};
  Event go[3];
  Outcome<void> r[3];
  for (int i = 0; i < 3; ++i) {
    collect(ms, acts[i]->call("hold", [&, i](TurnContext<int>&) -> Task<> {
      co_await go[i].wait();
      auto onward = next[i]->call("onward", noop_body);
      co_await std::move(onward);
    }), r[i]);
  }
  ms.run_until_idle();
  for (auto& g : go) {
    g.set();
    ms.run_until_idle();
  }
  int refused = 0;
  for (auto& out : r) {
    ASSERT_TRUE(out.done);
    if (out.error) {
      ++refused;
      EXPECT_TRUE(has(what(out.error), "[TURN-7.1]"));
      EXPECT_TRUE(has(what(out.error), "'a'") && has(what(out.error), "'b'") && has(what(out.error), "'c'"));
    }
  }
  EXPECT_EQ(refused, 1);  // only the closing await (c's)
  EXPECT_TRUE(r[2].error);
}

// No false positive: waits that form no cycle all go through.
// spec: [TURN-7.1] [TURN-4.1]
TEST(TurnWait, ChainsDiamondsAndQueuedWaitsAreNotCycles) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms), b("b", 0, {}, ms), c("c", 0, {}, ms);
  Event slow;
  Outcome<void> held, diamond, behind;
  // b's serial lane is held by a turn waiting on an Event (not a call).
  collect(ms, b.call("held", [&](TurnContext<int>&) -> Task<> { co_await slow.wait(); }), held);
  // a awaits b (queued behind "held") and c, c awaits b as well: a diamond.
  collect(ms, a.call("fan", [&](TurnContext<int>&) -> Task<> {
    auto viac = c.call("viac", [&](TurnContext<int>&) -> Task<> {
      auto inner = b.call("inner", noop_body);
      co_await std::move(inner);
    });
    auto direct = b.call("direct", noop_body);
    co_await std::move(viac);
    co_await std::move(direct);
  }), diamond);
  // A second request to a, queued behind "fan".
  collect(ms, a.call("behind", noop_body), behind);
  ms.run_until_idle();
  EXPECT_FALSE(diamond.done);
  slow.set();
  ms.run_until_idle();
  for (auto* out : {&held, &diamond, &behind}) {
    ASSERT_TRUE(out->done);
    EXPECT_FALSE(out->error) << what(out->error);
  }
}

// spec: [TURN-7.1] [TURN-3.2]
TEST(TurnWait, InterleavedCallsWaitForNoTurn) {
  ManualScheduler ms;
  Activation<int> a("self", 4, interleaving({"peek", "refresh"}), ms);
  Outcome<int> serial_then_peek, refresh;
  Outcome<void> serial_peek_serial;
  // A serial turn may await an interleaved call on its own activation.
  collect(ms, a.call("write", [&](TurnContext<int>& ctx) -> Task<int> {
    ctx.state() = 5;
    auto peek = ctx.activation().call("peek", [](TurnContext<int>& c) -> Task<int> { co_return c.state(); });
    co_return co_await std::move(peek);
  }), serial_then_peek);
  ms.run_until_idle();
  EXPECT_EQ(serial_then_peek.value, 5);
  // An interleaved turn nobody serial awaits may await a serial call on its own activation.
  collect(ms, a.call("refresh", [](TurnContext<int>& ctx) -> Task<int> {
    auto bump = ctx.activation().call("bump", [](TurnContext<int>& c) -> Task<int> { co_return ++c.state(); });
    co_return co_await std::move(bump);
  }), refresh);
  ms.run_until_idle();
  EXPECT_EQ(refresh.value, 6);
  // But serial -> interleaved -> serial on one activation waits for itself.
  collect(ms, a.call("write", [](TurnContext<int>& ctx) -> Task<> {
    auto peek = ctx.activation().call("peek", [](TurnContext<int>& c) -> Task<int> {
      auto bump = c.activation().call("bump", [](TurnContext<int>&) -> Task<int> { co_return 0; });
      co_return co_await std::move(bump);
    });
    co_await std::move(peek);
  }), serial_peek_serial);
  ms.run_until_idle();
  ASSERT_TRUE(serial_peek_serial.done);
  EXPECT_TRUE(has(what(serial_peek_serial.error), "turn 'peek' of 'self' (interleaved) awaits call 'bump'"))
      << what(serial_peek_serial.error);
}

// spec: [TURN-7.1] [TURN-5.2]
TEST(TurnWait, TasksAndTheirTurnsAreNotPartOfTheTurnsWait) {
  ManualScheduler ms;
  Activation<int> a("task-reentry", 0, {}, ms);
  Outcome<void> start;
  Outcome<int> stored;
  collect(ms, a.call("start", [&](TurnContext<int>& ctx) -> Task<> {
    ctx.task([&](TaskContext<int>& t) -> Task<> {
      co_await collect_into(t.turn([](int& s) { return s += 10; }), stored);
    });
    co_return;
  }), start);
  ms.run_until_idle();
  EXPECT_TRUE(start.done);
  expect_value(stored, 10);
}

// spec: [TURN-7.1]
TEST(TurnWait, CallsFromASettledTurnAreNotPartOfItsWait) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Activation<int> b("b", 0, {}, ms);
  Event later;
  Outcome<int> back;
  (void)a.call("fire", [&](TurnContext<int>&) -> Task<> {
    (void)b.call("relay", [&](TurnContext<int>&) -> Task<> {
      co_await later.wait();
      co_await collect_into(a.call("back", [](TurnContext<int>& c) -> Task<int> { co_return ++c.state(); }),
                            back);
    });
    co_return;
  });
  ms.run_until_idle();
  EXPECT_EQ(a.turns_completed(), 1u);
  later.set();
  ms.run_until_idle();
  expect_value(back, 1);
}

// A Scope child's waits are its joiner's: a child awaiting a serial call on the
// joining turn's activation waits for itself.
// spec: [TURN-7.1] [RT-5.3]
TEST(TurnWait, AScopeChildTheTurnJoinsIsPartOfItsWait) {
  ManualScheduler ms;
  Activation<int> a("scoped", 0, {}, ms);
  Activation<int> b("other", 0, {}, ms);
  Outcome<int> outer;
  collect(ms, a.call("fan", [&](TurnContext<int>& ctx) -> Task<int> {
    Scope scope;
    int got = 0;
    scope.spawn([](Activation<int>& other, int& out) -> Task<> {  // legal: another activation
      auto r = other.call("read", [](TurnContext<int>&) -> Task<int> { co_return 4; });
      out = co_await std::move(r);
    }(b, got));
    scope.spawn([](Activation<int>& self) -> Task<> {  // waits for its own joiner
      auto r = self.call("read", [](TurnContext<int>&) -> Task<int> { co_return 1; });
      (void)co_await std::move(r);
    }(ctx.activation()));
    try {
      co_await scope.join();
    } catch (const TurnReentrancyError& e) {
      got += has(e.what(), "turn 'fan' of 'scoped' awaits call 'read' into 'scoped'") ? 100 : 1000;
    }
    co_return got;
  }), outer);
  ms.run_until_idle();
  ASSERT_TRUE(outer.done);
  EXPECT_EQ(outer.value, 104);
}

// The two closing awaits race on two carriers: exactly one throws, none hangs.
// spec: [TURN-7.1]
TEST(TurnWait, RacingClosingAwaitsOnAPoolNeverBothPassNorHang) {
  ThreadPool pool(2);
  for (int round = 0; round < 200; ++round) {
    Activation<int> a("a", 0, {}, pool);
    Activation<int> b("b", 0, {}, pool);
    Event both_running;
    std::atomic<int> running{0};
    auto hold = [&](Activation<int>& peer) {
      return [&](TurnContext<int>&) -> Task<> {
        if (running.fetch_add(1) + 1 == 2) both_running.set();
        co_await both_running.wait();  // both serial lanes are held
        auto t = peer.call("back", noop_body);
        co_await std::move(t);
      };
    };
    auto r1 = a.call("x", hold(b));
    auto r2 = b.call("y", hold(a));
    int refused = 0;
    for (auto* t : {&r1, &r2}) {
      try {
        sync_wait(std::move(*t));
      } catch (const TurnReentrancyError&) {
        ++refused;
      }
    }
    ASSERT_EQ(refused, 1) << "round " << round;
    // The queued "back" turns finish before these serial fences do.
    sync_wait(a.call("fence", noop_body));
    sync_wait(b.call("fence", noop_body));
  }
}

}  // namespace
