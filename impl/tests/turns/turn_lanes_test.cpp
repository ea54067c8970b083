// turn_lanes_test.cpp: what a turn is (spec/turns.md §1), turns chain and do
// not queue (§2), and the two lanes (§3).
//
// Interleavings come from a ManualScheduler driven step by step from the test
// thread, with Events standing in for slow work; the ThreadPool stress runs the
// same checks on real carriers (for tsan). No test sleeps.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "turns_support.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/on_schedulers.hpp"

namespace {

using namespace turnstile;
using namespace turns_test;
using Log = std::vector<std::string>;

// Index of `entry` in `log`, or -1.
int index_of(const Log& log, const std::string& entry) {
  for (std::size_t i = 0; i < log.size(); ++i)
    if (log[i] == entry) return static_cast<int>(i);
  return -1;
}

// ------------------------------------------------------------------ §1

// spec: [TURN-1.1] [TURN-4.1]
TEST(TurnWhatATurnIs, EndsWhenItsResultSettlesNotAtItsFirstSuspension) {
  ManualScheduler ms;
  Activation<int> a("doc/1", 0, {}, ms);
  Log log;  // read by the test between steps (one thread: the ManualScheduler's driver)
  Event io;
  Outcome<int> first;
  Outcome<void> second;
  collect(ms, a.call("slow", [&](TurnContext<int>& ctx) -> Task<int> {
    log.push_back("slow:start");
    ctx.state() = 1;
    co_await io.wait();  // suspended, but the turn is still open
    log.push_back("slow:resumed");
    co_await yield();
    log.push_back("slow:end");
    co_return 7;
  }), first);
  collect(ms, a.call("next", [&](TurnContext<int>& ctx) -> Task<> {
    log.push_back("next:start:" + std::to_string(ctx.state()));
    co_return;
  }), second);

  ms.run_until_idle();
  EXPECT_EQ(log, (Log{"slow:start"}));
  EXPECT_EQ(a.running(), 1u);  // "slow" is suspended and still the turn in progress
  EXPECT_EQ(a.queued(), 1u);   // "next" has not started
  EXPECT_EQ(a.turns_completed(), 0u);
  EXPECT_EQ(*a.snapshot(), 0);  // the turn has not settled
  EXPECT_FALSE(first.done);
  EXPECT_FALSE(second.done);

  io.set();
  // Step by step: "next" never starts before "slow" has finished.
  while (ms.ready() > 0) {
    ms.run_next(0);
    if (index_of(log, "next:start:1") >= 0) {
      EXPECT_GE(index_of(log, "slow:end"), 0);
      EXPECT_LT(index_of(log, "slow:end"), index_of(log, "next:start:1"));
    }
  }
  EXPECT_EQ(log, (Log{"slow:start", "slow:resumed", "slow:end", "next:start:1"}));
  ASSERT_TRUE(first.done);
  EXPECT_EQ(first.value, 7);
  EXPECT_TRUE(second.done);
  EXPECT_EQ(a.turns_completed(), 2u);
  EXPECT_EQ(a.running(), 0u);
  EXPECT_EQ(a.queued(), 0u);
}

// A body that runs `steps` steps, each bracketed in the log and the probe, with
// a yield (a suspension point) after each.
auto stepper(Log& log, Probe& probe, std::string name, int steps, bool serial) {
  return [&log, &probe, name, steps, serial](TurnContext<int>&) -> Task<> {
    if (serial) probe.turn_in();
    for (int i = 0; i < steps; ++i) {
      probe.step_in();
      log.push_back(name + "<" + std::to_string(i));
      log.push_back(name + ">" + std::to_string(i));
      probe.step_out();
      co_await yield();
    }
    if (serial) probe.turn_out();
  };
}

// spec: [TURN-1.2] [TURN-3.1] [TURN-3.2]
TEST(TurnWhatATurnIs, StepsRunOneAtATimeAndInterleaveOnlyAtAwaits) {
  ManualScheduler ms;
  Activation<int> a("steps", 0, interleaving({"peek"}), ms);
  Log log;
  Probe probe;
  Outcome<void> w1, w2, peek;
  collect(ms, a.call("w1", stepper(log, probe, "w1", 3, true)), w1);
  collect(ms, a.call("w2", stepper(log, probe, "w2", 3, true)), w2);
  collect(ms, a.call("peek", stepper(log, probe, "peek", 3, false)), peek);
  while (ms.ready() > 0) ms.run_next(ms.ready() - 1);  // newest first: a different order
  ASSERT_TRUE(w1.done && w2.done && peek.done);
  EXPECT_EQ(probe.max_steps(), 1);
  EXPECT_EQ(probe.max_turns(), 1);
  ASSERT_EQ(log.size(), 18u);
  // Every step is whole: its two entries are adjacent.
  for (std::size_t i = 0; i < log.size(); i += 2) {
    EXPECT_EQ(log[i].substr(0, log[i].find('<')), log[i + 1].substr(0, log[i + 1].find('>')))
        << "a step was split at " << i;
  }
  // The serial turns do not overlap: all of w1 before any of w2.
  EXPECT_LT(index_of(log, "w1>2"), index_of(log, "w2<0"));
  // The interleaved turn ran between w1's awaits.
  EXPECT_LT(index_of(log, "w1<0"), index_of(log, "peek<1"));
  EXPECT_LT(index_of(log, "peek<1"), index_of(log, "w1>2"));
}

struct Counter {
  long count = 0;   // plain, not atomic: serial turns are the only writers
  long reads = 0;   // written by interleaved turns
};

Task<> hammer(Activation<Counter>& a, Probe& probe, int calls) {
  std::vector<Task<long>> pending;
  for (int i = 0; i < calls; ++i) {
    if (i % 4 == 3) {
      pending.push_back(a.call("peek", [&probe](TurnContext<Counter>& ctx) -> Task<long> {
        probe.step_in();
        const long before = ctx.state().count;
        ++ctx.state().reads;
        probe.step_out();
        co_await yield();
        probe.step_in();
        const long after = ctx.state().count;  // re-read: it may have moved
        probe.step_out();
        co_return after - before;
      }));
    } else {
      pending.push_back(a.call("inc", [&probe](TurnContext<Counter>& ctx) -> Task<long> {
        probe.turn_in();
        probe.step_in();
        const long v = ctx.state().count;
        probe.step_out();
        co_await yield();  // a lost update if another serial turn ran here
        co_await yield();
        probe.step_in();
        ctx.state().count = v + 1;
        probe.step_out();
        probe.turn_out();
        co_return v + 1;
      }));
    }
  }
  // Awaited in reverse: arrival order was fixed at call().
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) (void)co_await std::move(*it);
}

Task<> hammer_all(Activation<Counter>& a, Probe& probe, int fibers, int calls) {
  Scope scope;
  for (int f = 0; f < fibers; ++f) scope.spawn(hammer(a, probe, calls));
  co_await scope.join();
}

// spec: [TURN-1.2] [TURN-3.1] [TURN-3.2]
TEST(TurnWhatATurnIs, SerialTurnsNeverOverlapOnAFourCarrierPool) {
  ThreadPool pool(4);
  Activation<Counter> a("stress", Counter{}, interleaving({"peek"}), pool);
  Probe probe;
  constexpr int kFibers = 8, kCalls = 200;
  sync_wait(pool, hammer_all(a, probe, kFibers, kCalls));
  EXPECT_EQ(probe.max_turns(), 1);  // one serial turn in progress at a time, across awaits
  EXPECT_EQ(probe.max_steps(), 1);  // one step of the activation at a time, both lanes
  EXPECT_EQ(a.snapshot()->count, kFibers * kCalls * 3 / 4);
  EXPECT_EQ(a.turns_completed(), static_cast<std::uint64_t>(kFibers * kCalls));
  EXPECT_EQ(a.queued(), 0u);
}

// ------------------------------------------------------------------ §2

// spec: [TURN-2.1]
TEST(TurnChain, EachCallLinksBehindTheTailAndHoldsItsPredecessor) {
  using Chain = detail::TurnChain;
  Chain chain;
  Chain::Link* p1 = nullptr;
  Chain::Link* l1 = chain.attach(p1);
  EXPECT_EQ(p1, nullptr);  // empty chain: start at once
  Chain::Link* p2 = nullptr;
  Chain::Link* l2 = chain.attach(p2);
  EXPECT_EQ(p2, l1);  // the second call holds the first link, nothing else does
  Chain::Link* p3 = nullptr;
  Chain::Link* l3 = chain.attach(p3);
  EXPECT_EQ(p3, l2);

  EXPECT_FALSE(p2->settled.is_set());
  Chain::settle(l1);  // turn 1 finishes: its successor sees the hand-off
  EXPECT_TRUE(p2->settled.is_set());
  EXPECT_FALSE(p3->settled.is_set());
  Chain::Link::release(p2);  // turn 2 starts and lets go of link 1 (freed here)
  Chain::settle(l2);
  EXPECT_TRUE(p3->settled.is_set());
  Chain::Link::release(p3);
  Chain::settle(l3);  // the tail is still held by the chain, and freed with it

  Chain::Link* p4 = nullptr;
  Chain::Link* l4 = chain.attach(p4);
  EXPECT_EQ(p4, l3);
  EXPECT_TRUE(p4->settled.is_set());  // a settled tail: the next turn does not wait
  Chain::Link::release(p4);
  Chain::settle(l4);
}

// spec: [TURN-2.1]
TEST(TurnChain, ACallOnAnIdleChainStartsWithoutWaiting) {
  ManualScheduler ms;
  Activation<int> a("idle", 0, {}, ms);
  for (int i = 0; i < 3; ++i) {
    Outcome<int> out;
    collect(ms, a.call("inc", [](TurnContext<int>& ctx) -> Task<int> { co_return ++ctx.state(); }),
            out);
    EXPECT_EQ(a.queued(), 1u);
    ms.run_until_idle();
    ASSERT_TRUE(out.done);
    EXPECT_EQ(out.value, i + 1);
    EXPECT_EQ(a.queued(), 0u);
    EXPECT_EQ(a.running(), 0u);
  }
}

// spec: [TURN-2.2] [TURN-3.1]
TEST(TurnChain, ArrivalOrderIsCallOrderEvenWhenAwaitedInReverse) {
  ManualScheduler ms;
  Activation<std::vector<int>> a("fifo", {}, {}, ms);
  Event hold;
  std::vector<Task<int>> tasks;
  tasks.push_back(a.call("first", [&](TurnContext<std::vector<int>>& ctx) -> Task<int> {
    co_await hold.wait();
    ctx.state().push_back(0);
    co_return 0;
  }));
  for (int i = 1; i <= 5; ++i) {
    tasks.push_back(a.call("m" + std::to_string(i), [i](TurnContext<std::vector<int>>& ctx) -> Task<int> {
      ctx.state().push_back(i);
      co_return i;
    }));
  }
  EXPECT_EQ(a.queued(), 6u);  // nothing awaited yet, nothing run yet: all six have arrived
  ms.run_until_idle();
  EXPECT_EQ(a.queued(), 5u);
  hold.set();
  for (int i = 5; i >= 0; --i) EXPECT_EQ(sync_wait(ms, std::move(tasks[static_cast<std::size_t>(i)])), i);
  EXPECT_EQ(*a.snapshot(), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// On every scheduler: serial turns hop between carriers at their awaits, and
// still run one at a time in arrival order.
class TurnChainOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(TurnChainOnSchedulers);

// Calls made at once, each turn suspending a few times, awaited newest first: each
// turn starts after the one before it settled, whatever carrier runs it.
// spec: [TURN-2.2] [TURN-3.1]
TEST_P(TurnChainOnSchedulers, TurnsRunInArrivalOrderWhateverOrderTheyAreAwaitedIn) {
  constexpr int kCalls = 12;
  Activation<std::vector<int>> a("fifo", {}, {}, sched());
  std::vector<Task<int>> tasks;
  for (int i = 0; i < kCalls; ++i) {
    tasks.push_back(a.call("m" + std::to_string(i), [i](TurnContext<std::vector<int>>& ctx) -> Task<int> {
      for (int k = 0; k < i % 3; ++k) co_await yield();
      ctx.state().push_back(i);
      co_return i;
    }));
  }
  for (int i = kCalls - 1; i >= 0; --i) EXPECT_EQ(run(std::move(tasks[static_cast<std::size_t>(i)])), i);
  std::vector<int> arrival(kCalls);
  std::iota(arrival.begin(), arrival.end(), 0);
  EXPECT_EQ(*a.snapshot(), arrival);
}

// spec: [TURN-2.2]
TEST(TurnChain, CallKeepsACapturingBodyAliveUntilItsTurnSettles) {
  ManualScheduler ms;
  Activation<int> a("keep", 1, {}, ms);
  Event io;
  auto owned = std::make_shared<int>(41);
  std::weak_ptr<int> watch = owned;
  // A temporary capturing coroutine lambda: its captures live in the lambda
  // object, which call() must keep alive across the turn's suspensions.
  Task<std::string> t = a.call(
      "greet", [&io, owned = std::move(owned), text = std::string(64, 'x')](TurnContext<int>& ctx)
                   -> Task<std::string> {
        co_await io.wait();
        co_return text.substr(0, 3) + std::to_string(*owned + ctx.state());
      });
  ms.run_until_idle();  // the turn started and is suspended; its caller has awaited nothing
  EXPECT_FALSE(watch.expired());
  io.set();
  ms.run_until_idle();  // the turn settles before anyone awaits it
  EXPECT_EQ(a.running(), 0u);
  EXPECT_EQ(sync_wait(ms, std::move(t)), "xxx42");
  ms.run_until_idle();
  EXPECT_TRUE(watch.expired());  // released once the turn and its caller are done
}

// spec: [TURN-2.2]
TEST_P(TurnChainOnSchedulers, ANeverAwaitedCallStillRunsInItsPlace) {
  Activation<std::vector<int>> a("dropped", {}, {}, sched());
  (void)a.call("one", [](TurnContext<std::vector<int>>& ctx) -> Task<> {
    ctx.state().push_back(1);
    co_return;
  });  // the Task is dropped at once
  const Outcome<void> two = run(turnstile_test::outcome_of(a.call(
      "two", [](TurnContext<std::vector<int>>& ctx) -> Task<> {
        ctx.state().push_back(2);
        co_return;
      })));
  EXPECT_TRUE(two.done);
  EXPECT_EQ(*a.snapshot(), (std::vector<int>{1, 2}));
}

// spec: [TURN-2.3]
TEST(TurnChain, QueuedCountsSerialCallsWaitingAtEachStep) {
  ManualScheduler ms;
  Activation<int> a("q", 0, interleaving({"peek"}), ms);
  Event e1, e2, e3;
  auto waits_on = [](Event& e) {
    return [&e](TurnContext<int>& ctx) -> Task<> {
      co_await e.wait();
      ++ctx.state();
    };
  };
  EXPECT_EQ(a.queued(), 0u);
  EXPECT_EQ(a.running(), 0u);
  Outcome<void> o1, o2, o3, op;
  collect(ms, a.call("w1", waits_on(e1)), o1);
  EXPECT_EQ(a.queued(), 1u);  // made, not started
  EXPECT_EQ(a.running(), 0u);
  ms.run_until_idle();
  EXPECT_EQ(a.queued(), 0u);
  EXPECT_EQ(a.running(), 1u);
  collect(ms, a.call("w2", waits_on(e2)), o2);
  EXPECT_EQ(a.queued(), 1u);
  collect(ms, a.call("w3", waits_on(e3)), o3);
  EXPECT_EQ(a.queued(), 2u);
  collect(ms, a.call("peek", waits_on(e1)), op);  // interleaved: never queued
  EXPECT_EQ(a.queued(), 2u);
  ms.run_until_idle();
  EXPECT_EQ(a.queued(), 2u);
  EXPECT_EQ(a.running(), 2u);  // w1 and peek

  e1.set();
  ms.run_until_idle();  // w1 and peek settle, w2 starts
  EXPECT_EQ(a.queued(), 1u);
  EXPECT_EQ(a.running(), 1u);
  EXPECT_EQ(a.turns_completed(), 2u);
  e3.set();  // w3's event first: w3 still waits for w2
  ms.run_until_idle();
  EXPECT_EQ(a.queued(), 1u);
  EXPECT_EQ(a.running(), 1u);
  e2.set();
  ms.run_until_idle();
  EXPECT_EQ(a.queued(), 0u);
  EXPECT_EQ(a.running(), 0u);
  EXPECT_EQ(a.turns_completed(), 4u);
  EXPECT_TRUE(o1.done && o2.done && o3.done && op.done);
}

struct Cart {
  std::vector<std::string> items;
};

// spec: [TURN-2.3] [TURN-4.2]
TEST(TurnChain, HostListsEveryActivationWithItsCounters) {
  ManualScheduler ms;
  FakeClock clock;
  Host host(ms);
  ActivationOptions opts;
  opts.clock = clock.fn();
  opts.slow_turn = std::chrono::milliseconds(100);
  opts.on_slow_turn = [](const std::string&, const std::string&, std::chrono::nanoseconds) {};
  auto& cart = host.activate<Cart>("cart/1", Cart{}, opts);
  auto& user = host.activate<int>("user/9", 5);
  EXPECT_EQ(&host.activate<Cart>("cart/1"), &cart);  // found, not created again
  EXPECT_THROW(host.activate<int>("cart/1"), std::logic_error);
  EXPECT_EQ(host.find("cart/1"), &cart);
  EXPECT_EQ(host.find("nobody"), nullptr);

  Event hold;
  Outcome<void> done[4];
  collect(ms, cart.call("add", [](TurnContext<Cart>& ctx) -> Task<> {
    ctx.state().items.push_back("apple");
    co_return;
  }), done[0]);
  ms.run_until_idle();
  collect(ms, cart.call("checkout", [&](TurnContext<Cart>&) -> Task<> { co_await hold.wait(); }),
          done[1]);
  ms.run_until_idle();
  clock.advance(std::chrono::milliseconds(150));
  collect(ms, cart.call("add", [](TurnContext<Cart>&) -> Task<> { co_return; }), done[2]);
  collect(ms, cart.call("add", [](TurnContext<Cart>&) -> Task<> { co_return; }), done[3]);
  host.check_slow_turns();

  auto list = host.activations();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, "cart/1");
  EXPECT_EQ(list[0].queued, 2u);
  EXPECT_EQ(list[0].running, 1u);
  EXPECT_EQ(list[0].turns_completed, 1u);
  EXPECT_EQ(list[0].slow_turns, 1u);
  EXPECT_EQ(list[1].id, "user/9");
  EXPECT_EQ(list[1].queued, 0u);
  EXPECT_EQ(list[1].running, 0u);
  EXPECT_EQ(list[1].turns_completed, 0u);
  EXPECT_EQ(list[1].slow_turns, 0u);

  hold.set();
  ms.run_until_idle();
  list = host.activations();
  EXPECT_EQ(list[0].queued, 0u);
  EXPECT_EQ(list[0].running, 0u);
  EXPECT_EQ(list[0].turns_completed, 4u);
  EXPECT_EQ(list[0].slow_turns, 1u);  // reported once, not again at settle
  EXPECT_EQ(user.stats().id, "user/9");
}

// spec: [TURN-2.4]
TEST(TurnChain, NoBoundNoPriorityNoReordering) {
  ManualScheduler ms;
  Activation<std::vector<int>> a("unbounded", {}, {}, ms);
  Event hold;
  (void)a.call("blocker", [&](TurnContext<std::vector<int>>&) -> Task<> { co_await hold.wait(); });
  ms.run_until_idle();
  constexpr int kCalls = 5000;
  const char* names[] = {"urgent", "low", "drop-me", "priority-high"};
  for (int i = 0; i < kCalls; ++i) {
    (void)a.call(names[i % 4], [i](TurnContext<std::vector<int>>& ctx) -> Task<> {
      ctx.state().push_back(i);
      co_return;
    });
  }
  EXPECT_EQ(a.queued(), static_cast<std::size_t>(kCalls));  // every call accepted
  hold.set();
  ms.run_until_idle();
  const auto snap = a.snapshot();
  ASSERT_EQ(snap->size(), static_cast<std::size_t>(kCalls));  // none dropped
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ((*snap)[static_cast<std::size_t>(i)], i);  // arrival order
}

// spec: [TURN-2.5]
TEST(TurnChain, AThrowingTurnFailsItsCallerOnlyAndTheNextTurnRuns) {
  ManualScheduler ms;
  Activation<Log> a("boom", Log{}, interleaving({"peek"}), ms);
  Event hold;
  Outcome<void> boom, peek_boom;
  Outcome<std::size_t> after;
  collect(ms, a.call("boom", [&](TurnContext<Log>& ctx) -> Task<> {
    ctx.state().push_back("before");
    co_await hold.wait();
    throw std::runtime_error("boom failed");
  }), boom);
  collect(ms, a.call("peek", [](TurnContext<Log>&) -> Task<> {
    throw std::runtime_error("peek failed");
    co_return;
  }), peek_boom);
  collect(ms, a.call("after", [](TurnContext<Log>& ctx) -> Task<std::size_t> {
    ctx.state().push_back("after");
    co_return ctx.state().size();
  }), after);
  ms.run_until_idle();
  EXPECT_TRUE(peek_boom.done);
  EXPECT_EQ(what(peek_boom.error), "peek failed");
  EXPECT_FALSE(boom.done);
  hold.set();
  ms.run_until_idle();
  ASSERT_TRUE(boom.done);
  EXPECT_EQ(what(boom.error), "boom failed");
  ASSERT_TRUE(after.done);
  EXPECT_FALSE(after.error);
  EXPECT_EQ(after.value, 2u);  // "before" was not rolled back
  EXPECT_EQ(*a.snapshot(), (Log{"before", "after"}));
  EXPECT_EQ(a.turns_completed(), 3u);
  EXPECT_EQ(a.running(), 0u);
}

// ------------------------------------------------------------------ §3

// spec: [TURN-3.1]
TEST(TurnLanes, SerialIsTheDefault) {
  const ActivationOptions defaults;
  EXPECT_EQ(defaults.reentrancy, Reentrancy::never);
  EXPECT_TRUE(defaults.interleaved_methods.empty());
  ManualScheduler ms;
  Activation<int> a("plain", 0, {}, ms);
  EXPECT_FALSE(a.is_interleaved("get"));
  EXPECT_FALSE(a.is_interleaved("set"));
  Event hold;
  Outcome<void> set;
  Outcome<int> get;
  collect(ms, a.call("set", [&](TurnContext<int>& ctx) -> Task<> {
    ctx.state() = 1;
    co_await hold.wait();
    ctx.state() = 2;
  }), set);
  collect(ms, a.call("get", [](TurnContext<int>& ctx) -> Task<int> { co_return ctx.state(); }), get);
  ms.run_until_idle();
  EXPECT_FALSE(get.done);  // a read waits too: every method is serial by default
  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(get.value, 2);
}

// spec: [TURN-3.2]
TEST(TurnLanes, InterleavedTurnStartsAtOnceAndMustReRead) {
  ManualScheduler ms;
  Activation<int> a("inter", 0, interleaving({"watch"}), ms);
  Event serial_hold, watch_hold;
  Outcome<void> slow;
  collect(ms, a.call("slow", [&](TurnContext<int>& ctx) -> Task<> {
    ctx.state() = 1;
    co_await serial_hold.wait();
  }), slow);
  ms.run_until_idle();

  // Starts at once, although the serial turn is in progress.
  Outcome<std::vector<int>> watch;
  collect(ms, a.call("watch", [&](TurnContext<int>& ctx) -> Task<std::vector<int>> {
    std::vector<int> seen{ctx.state()};
    co_await watch_hold.wait();
    seen.push_back(ctx.state());  // re-read after the await
    co_return seen;
  }), watch);
  ms.run_until_idle();
  EXPECT_EQ(a.running(), 2u);
  EXPECT_FALSE(watch.done);

  // Not waited for: later serial turns run while "watch" is still suspended.
  serial_hold.set();
  Outcome<void> write;
  collect(ms, a.call("write", [](TurnContext<int>& ctx) -> Task<> {
    ctx.state() = 5;
    co_return;
  }), write);
  ms.run_until_idle();
  EXPECT_TRUE(slow.done);
  EXPECT_TRUE(write.done);
  EXPECT_FALSE(watch.done);

  watch_hold.set();
  ms.run_until_idle();
  ASSERT_TRUE(watch.done);
  EXPECT_EQ(*watch.value, (std::vector<int>{1, 5}));  // the state moved across its await
}

// spec: [TURN-3.2] [TURN-3.3]
TEST(TurnLanes, ReentrancyAlwaysInterleavesEveryCall) {
  ManualScheduler ms;
  ActivationOptions opts;
  opts.reentrancy = Reentrancy::always;
  Activation<int> a("always", 0, opts, ms);
  EXPECT_TRUE(a.is_interleaved("anything"));
  Event hold;
  auto body = [&hold](TurnContext<int>& ctx) -> Task<int> {
    const int mine = ++ctx.state();
    co_await hold.wait();
    co_return mine * 10 + ctx.state();  // the other call's increment is visible
  };
  Outcome<int> x, y;
  collect(ms, a.call("m", body), x);
  collect(ms, a.call("m", body), y);
  EXPECT_EQ(a.queued(), 0u);
  ms.run_until_idle();
  EXPECT_EQ(a.running(), 2u);  // both in progress at once
  hold.set();
  ms.run_until_idle();
  EXPECT_EQ(x.value, 12);
  EXPECT_EQ(y.value, 22);
}

using PlainBody = Task<> (*)(TurnContext<int>&);
template <class A, class B>
concept CallerCanPickALane = requires(A& a, B b) { a.call(std::string("m"), b, Reentrancy::always); };

// spec: [TURN-3.3]
TEST(TurnLanes, TheActivationOrMethodChoosesNeverTheCaller) {
  static_assert(!CallerCanPickALane<Activation<int>, PlainBody>, "call() takes no lane argument");
  ManualScheduler ms;
  Activation<int> a("chooser", 0, interleaving({"stats"}), ms);
  EXPECT_TRUE(a.is_interleaved("stats"));
  EXPECT_FALSE(a.is_interleaved("add"));

  Event hold;
  Outcome<void> add;
  collect(ms, a.call("add", [&](TurnContext<int>&) -> Task<> { co_await hold.wait(); }), add);
  ms.run_until_idle();
  // The same method, called from a plain thread and from a fiber, takes the
  // same lane: "stats" runs past the held serial lane both times, "add" waits.
  Outcome<int> stats_plain, stats_fiber;
  Outcome<void> add_again;
  collect(ms, a.call("stats", [](TurnContext<int>& ctx) -> Task<int> { co_return ctx.state(); }),
          stats_plain);
  detach(ms, [](Activation<int>& act, Outcome<int>& out, Outcome<void>& out2) -> Task<> {
    co_await collect_into(act.call("stats", [](TurnContext<int>& ctx) -> Task<int> { co_return ctx.state(); }), out);
    co_await collect_into(act.call("add", [](TurnContext<int>&) -> Task<> { co_return; }), out2);
  }(a, stats_fiber, add_again));
  ms.run_until_idle();
  EXPECT_TRUE(stats_plain.done);
  EXPECT_TRUE(stats_fiber.done);
  EXPECT_FALSE(add_again.done);
  hold.set();
  ms.run_until_idle();
  EXPECT_TRUE(add.done && add_again.done);
}

}  // namespace
