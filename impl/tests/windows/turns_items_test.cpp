// turns_items_test.cpp: issue 26's turns items, as settled in spec/turns.md.
//   - item 3 ([TURN-4.2]): a turn that has run exactly `slow_turn` is not slow
//     (slow is *longer than*); once every running turn has been reported,
//     nothing stays armed until a turn starts, which arms it for itself.
//   - item 6 ([TURN-1.3]): a plain body returning a reference gives Task<T>
//     (the referenced value copied out inside the turn), never Task<T&>.
//   - item 7 ([TURN-6.1], [TURN-4.2]): when the watchdog's item and the strand's
//     item become ready in one advance(), they are posted in deadline order,
//     ties in arming order ([RT-8.3]); the watchdog, armed at the turn's
//     start, is ahead of anything the turn's body armed for the same instant.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <vector>

#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;
using namespace std::chrono_literals;

struct Recorded {
  std::vector<std::string> methods;
  std::vector<std::chrono::nanoseconds> elapsed;
  ActivationOptions options(std::chrono::nanoseconds slow_turn) {
    ActivationOptions o;
    o.slow_turn = slow_turn;
    o.on_slow_turn = [this](const std::string&, const std::string& m, std::chrono::nanoseconds e) {
      methods.push_back(m);
      elapsed.push_back(e);
    };
    return o;
  }
};

// spec: [TURN-4.2]
TEST(TurnsItems, ATurnOfExactlySlowTurnIsNotSlowAndNothingStaysArmedOnceAllAreReported) {
  ManualScheduler ms;
  Recorded rec;
  Activation<int> a("windows/exact", 0, rec.options(100ms), ms);
  Event exact;
  (void)a.call("exact", [&exact](TurnContext<int>&) -> Task<> { co_await exact.wait(); });
  ms.run_until_idle();
  ASSERT_EQ(ms.next_deadline(), ms.now() + 100ms + 1ns);  // the first instant it is longer
  EXPECT_EQ(ms.advance(100ms), 0u);  // it has run exactly slow_turn: not due
  a.check_slow_turns();              // not slow by check either
  exact.set();
  ms.run_until_idle();               // it settles at exactly slow_turn: not slow at settle
  EXPECT_TRUE(rec.methods.empty());
  EXPECT_EQ(a.slow_turns(), 0u);
  // [TURN-4.2] cancelled lazily: left armed by the settle, it fires once with
  // nothing due (a settled turn is never reported) and is dropped.
  EXPECT_EQ(ms.timers(), 1u);
  EXPECT_EQ(ms.advance(1ns), 1u);
  ms.run_until_idle();
  EXPECT_TRUE(rec.methods.empty());
  EXPECT_EQ(ms.timers(), 0u);

  // Two turns, both reported by one firing: nothing stays armed.
  ActivationOptions o = rec.options(100ms);
  o.interleaved_methods = {"b"};
  Activation<int> two("windows/reported", 0, o, ms);
  Event ea, eb;
  (void)two.call("a", [&ea](TurnContext<int>&) -> Task<> { co_await ea.wait(); });
  (void)two.call("b", [&eb](TurnContext<int>&) -> Task<> { co_await eb.wait(); });
  ms.run_until_idle();
  EXPECT_EQ(ms.timers(), 1u);  // one watchdog for the activation
  EXPECT_EQ(ms.advance(100ms + 1ns), 1u);
  ms.run_until_idle();
  EXPECT_EQ(rec.methods, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rec.elapsed, (std::vector<std::chrono::nanoseconds>{100ms + 1ns, 100ms + 1ns}));
  EXPECT_EQ(ms.timers(), 0u) << "re-armed though every running turn was reported";
  EXPECT_FALSE(ms.next_deadline().has_value());
  // A turn that starts now arms it for its own deadline; settling unreported
  // while reported turns still run, it leaves that deadline armed, which then
  // finds nothing due and is not armed again.
  const auto b2_start = ms.now();
  (void)two.call("b", [](int&) {});  // interleaved: starts at once, settles in its step
  ms.run_until_idle();
  ASSERT_EQ(ms.timers(), 1u);
  EXPECT_EQ(ms.next_deadline(), b2_start + 100ms + 1ns);
  EXPECT_EQ(ms.advance(100ms + 1ns), 1u);
  ms.run_until_idle();
  EXPECT_EQ(rec.methods.size(), 2u);  // nothing was due
  EXPECT_EQ(ms.timers(), 0u);
  // A serial turn queued behind "a" starts when "a" settles: armed for it.
  Event ec;
  (void)two.call("c", [&ec](TurnContext<int>&) -> Task<> { co_await ec.wait(); });
  ms.run_until_idle();
  EXPECT_EQ(ms.timers(), 0u);  // "c" is queued, not running
  ea.set();
  ms.run_until_idle();
  ASSERT_EQ(ms.timers(), 1u);
  EXPECT_EQ(ms.next_deadline(), ms.now() + 100ms + 1ns);
  ec.set();
  eb.set();
  ms.run_until_idle();
  EXPECT_EQ(ms.timers(), 1u);  // [TURN-4.2] cancelled lazily: "c" settled unreported
  EXPECT_EQ(ms.advance(100ms + 1ns), 1u);
  ms.run_until_idle();
  EXPECT_EQ(ms.timers(), 0u);  // fired with nothing due, dropped
  EXPECT_EQ(rec.methods.size(), 2u);
  EXPECT_EQ(two.slow_turns(), 2u);
}

// The plain bodies whose result is asked about.
struct Counter {
  int n = 0;
  std::string name = "counter";
};
using CallOf = decltype(std::declval<Activation<Counter>&>().call(
    "m", std::declval<int& (*)(Counter&)>()));
using ConstCallOf = decltype(std::declval<Activation<Counter>&>().call(
    "m", std::declval<const std::string& (*)(Counter&)>()));
using RvalueCallOf = decltype(std::declval<Activation<Counter>&>().call(
    "m", std::declval<int&& (*)(Counter&)>()));

// spec: [TURN-1.3]
TEST(TurnsItems, APlainBodyReturningAReferenceGivesATaskOfTheValueType) {
  static_assert(std::is_same_v<CallOf, Task<int>>, "int& -> Task<int>");
  static_assert(std::is_same_v<ConstCallOf, Task<std::string>>, "const std::string& -> Task<std::string>");
  static_assert(std::is_same_v<RvalueCallOf, Task<int>>, "int&& -> Task<int>");
  static_assert(!std::is_reference_v<CallOf::value_type>, "never a reference into the state");
}

// spec: [TURN-1.3]
TEST(TurnsItems, TheValueOfAPlainBodyReturningAReferenceIsACopyMadeInsideTheTurn) {
  ManualScheduler ms;
  Activation<Counter> a("windows/reference", Counter{}, {}, ms);
  Task<std::string> name = a.call("name", [](Counter& c) -> const std::string& { return c.name; });
  Task<> rename = a.call("rename", [](Counter& c) { c.name = "renamed"; });  // after it, serially
  ms.run_until_idle();
  EXPECT_EQ(sync_wait(ms, std::move(name)), "counter") << "the copy was made inside its turn";
  sync_wait(ms, std::move(rename));
  EXPECT_EQ(a.snapshot()->name, "renamed");
}

// spec: [TURN-6.1] [TURN-4.2] [RT-8.3]
TEST(TurnsItems, TheWatchdogDueWithASleepOfTheTurnAtOneInstantRunsFirst) {
  ManualScheduler ms;
  Recorded rec;
  Activation<int> a("windows/order", 0, rec.options(100ms), ms);
  std::vector<std::string> order;
  std::size_t reports_at_resume = 99;
  Task<> sleeper = a.call("sleeper", [&](TurnContext<int>&) -> Task<> {
    co_await sleep_for(100ms + 1ns);  // armed after the watchdog, due at its instant
    order.push_back("turn resumed");
    reports_at_resume = rec.methods.size();
  });
  ms.run_until_idle();
  EXPECT_EQ(ms.timers(), 2u);
  EXPECT_EQ(ms.advance(100ms + 1ns), 2u);  // both due in one advance
  ASSERT_EQ(ms.ready(), 2u);               // the watchdog's item, then the strand's
  ms.run_next();                           // the oldest: the watchdog reports the turn
  EXPECT_EQ(rec.methods, std::vector<std::string>{"sleeper"});
  EXPECT_TRUE(order.empty());
  ms.run_next();  // the strand: the turn resumes, reported already, and settles
  EXPECT_EQ(order, std::vector<std::string>{"turn resumed"});
  EXPECT_EQ(reports_at_resume, 1u);
  ms.run_until_idle();
  EXPECT_EQ(rec.methods.size(), 1u);
  EXPECT_EQ(a.slow_turns(), 1u);
  EXPECT_EQ(ms.timers(), 0u);
  sync_wait(ms, std::move(sleeper));

  // Different instants: deadline order, whichever was armed first. A sleep
  // that ends at exactly slow_turn resumes first, and the turn settles at
  // exactly slow_turn: not slow (item 3); its watchdog fires once, with nothing due.
  Task<> exact = a.call("exact", [&](TurnContext<int>&) -> Task<> {
    co_await sleep_for(100ms);
    order.push_back("exact resumed");
  });
  ms.run_until_idle();
  EXPECT_EQ(ms.advance(100ms), 1u);  // the sleep only: the watchdog is due 1 ns later
  ms.run_until_idle();
  EXPECT_EQ(order.back(), "exact resumed");
  EXPECT_EQ(rec.methods.size(), 1u);
  EXPECT_EQ(ms.timers(), 1u);  // [TURN-4.2] cancelled lazily: the settle left it armed
  EXPECT_EQ(ms.advance(1ns), 1u);
  ms.run_until_idle();
  EXPECT_EQ(rec.methods.size(), 1u);  // nothing due: "exact" settled unreported
  EXPECT_EQ(ms.timers(), 0u);
  sync_wait(ms, std::move(exact));
}

}  // namespace
