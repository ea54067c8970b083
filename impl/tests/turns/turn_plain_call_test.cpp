// turn_plain_call_test.cpp: Activation::call with a plain `fn(State&) -> R`
// body ([TURN-1.3]), checked against every turn rule the coroutine form obeys;
// the TurnBody constraint; and scoped()/when_all() inside turns and lanes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "turns_support.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/on_schedulers.hpp"

namespace {

using namespace turnstile;
using namespace turns_test;
using namespace std::chrono_literals;

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// ------------------------------------------------ the constraint [TURN-1.3]
// A wrong body is rejected by call()'s requires-clause (so the compiler's
// first error is the unsatisfied TurnBody constraint at the call, not an error
// from inside the library). Checked here at compile time; the ctest
// turns.compile_fail.call_wrong_body checks the diagnostic itself. [TURN-1.3]
template <class F>
concept Callable = requires(Activation<int>& a, F f) { a.call("m", std::move(f)); };

// Bodies as function objects.
struct PlainRead {
  int operator()(int& s) const { return s; }
};
struct PlainWrite {
  void operator()(int& s) const { ++s; }
};
struct GenericPlain {
  auto operator()(auto& s) const { return s + 1; }  // never instantiated with a TurnContext
};
struct CoroutineBody {
  Task<int> operator()(TurnContext<int>& c) const { co_return c.state(); }
};
struct ContextNotCoroutine {
  int operator()(TurnContext<int>& c) const { return c.state(); }
};
struct PlainReturningTask {
  Task<int> operator()(int& s) const { co_return s; }
};
struct NoParameter {
  int operator()() const { return 1; }
};
struct WrongState {
  std::size_t operator()(std::string& s) const { return s.size(); }
};

// The two forms, including a generic plain lambda, are accepted:
// spec: [TURN-1.3]
static_assert(Callable<PlainRead> && Callable<PlainWrite> && Callable<GenericPlain> &&
              Callable<CoroutineBody>);
// A context body that is no coroutine, a plain body returning a Task, no
// parameter, the wrong state type: rejected by the constraint.
// spec: [TURN-1.3]
static_assert(!Callable<ContextNotCoroutine> && !Callable<PlainReturningTask> &&
              !Callable<NoParameter> && !Callable<WrongState>);
// spec: [TURN-1.3]
static_assert(TurnBody<PlainRead, int> && !TurnBody<NoParameter, int>);

// ------------------------------------------------- plain bodies [TURN-1.3]

// spec: [TURN-1.3] [TURN-3.1] [TURN-2.2] [TURN-5.3]
TEST(PlainCall, AValueBodyRunsAsASerialTurnInArrivalOrder) {
  ManualScheduler ms;
  Activation<std::vector<int>> a("list", {1, 2}, {}, ms);
  Event hold;
  auto append = [&hold](TurnContext<std::vector<int>>& ctx) -> Task<> {
    co_await hold.wait();  // holds the serial lane
    ctx.state().push_back(3);
  };
  Outcome<void> first;
  collect(ms, a.call("append", append), first);
  auto count = a.call("count", [](std::vector<int>& v) { return v.size(); });
  static_assert(std::is_same_v<decltype(count), Task<std::size_t>>);
  Outcome<std::size_t> counted;
  collect(ms, std::move(count), counted);
  ms.run_until_idle();
  EXPECT_FALSE(counted.done) << "a plain body waits for the serial turn in progress";
  EXPECT_EQ(a.queued(), 1u);
  hold.set();
  ms.run_until_idle();
  ASSERT_TRUE(counted.done);
  EXPECT_EQ(counted.value, 3u) << "it ran after the turn before it, in arrival order";
  EXPECT_EQ(a.turns_completed(), 2u);
}

// On every scheduler: a plain body's turn runs on the activation's strand over
// whichever carrier takes it; its result or exception reaches the awaiter there.
class PlainCallOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(PlainCallOnSchedulers);

// spec: [TURN-1.3] [TURN-5.3]
TEST_P(PlainCallOnSchedulers, AVoidBodyGivesTaskVoidAndPublishesTheSnapshot) {
  Activation<int> a("counter", 0, {}, sched());
  auto bump = a.call("bump", [](int& n) { n += 5; });
  static_assert(std::is_same_v<decltype(bump), Task<>>);
  run(std::move(bump));
  EXPECT_EQ(*a.snapshot(), 5);
  // A returned reference is copied out inside the turn.
  auto ref = a.call("ref", [](int& n) -> int& { return n; });
  static_assert(std::is_same_v<decltype(ref), Task<int>>);
  EXPECT_EQ(run(std::move(ref)), 5);
}

// spec: [TURN-1.3] [TURN-2.5]
TEST_P(PlainCallOnSchedulers, AnExceptionReachesTheAwaiterAndTheNextTurnRuns) {
  Activation<int> a("fragile", 0, {}, sched());
  auto fail = a.call("fail", [](int& n) -> int {
    n = 7;  // not rolled back
    throw std::runtime_error("plain body failed");
  });
  auto after = a.call("after", [](int& n) { return n; });
  const Outcome<int> failed = run(turnstile_test::outcome_of(std::move(fail)));
  const Outcome<int> next = run(turnstile_test::outcome_of(std::move(after)));
  ASSERT_TRUE(failed.done);
  EXPECT_EQ(what(failed.error), "plain body failed");
  EXPECT_EQ(next.value, 7);
}

// spec: [TURN-1.3] [TURN-7.1]
TEST(PlainCall, AwaitingAPlainSelfCallFromItsOwnTurnIsRefusedAtTheAwait) {
  ManualScheduler ms;
  Activation<int> a("self", 1, {}, ms);
  std::string refused;
  std::optional<Task<int>> unawaited;
  auto outer = [&](TurnContext<int>& ctx) -> Task<int> {
    auto read = ctx.activation().call("read", [](int& n) { return n; });  // queues
    try {
      (void)co_await std::move(read);
    } catch (const TurnReentrancyError& e) {
      refused = e.what();
    }
    ctx.state() = 2;
    unawaited.emplace(ctx.activation().call("later", [](int& n) { return n * 10; }));
    co_return ctx.state();
  };
  EXPECT_EQ(sync_wait(ms, a.call("outer", outer)), 2);
  EXPECT_TRUE(has(refused, "turn 'outer' of 'self' awaits call 'read' into 'self'")) << refused;
  EXPECT_EQ(sync_wait(ms, std::move(*unawaited)), 20) << "ran after the turn, saw its state";
  EXPECT_EQ(a.turns_completed(), 3u) << "the refused call still ran";
}

const FiberLocal<std::string> plain_request("request");

// A lane item calls an actor with a plain body: the turn runs off the lane,
// with the item's bindings and its own turn marker ([FL-3.9] table).
// spec: [TURN-1.3] [FL-3.9] [LANE-5.3]
TEST(PlainCall, ACallFromALaneItemRunsItsTurnOffTheLaneWithItsOwnMarker) {
  ManualScheduler ms;
  StateLane lane("L", ms);
  Activation<int> a("a", 4, {}, ms);
  struct Saw {
    std::string user;
    const StateLane* lane = reinterpret_cast<const StateLane*>(1);
    bool turn_marker = false;
    std::size_t running = 0;
  } saw;
  std::optional<Task<int>> call;
  auto body = [&]() -> Task<int> {
    auto item = lane.run([&] {
      call.emplace(a.call("from-lane", [&](int& n) {
        saw.user = plain_request.or_else("-");
        saw.lane = StateLane::current();
        const detail::TurnMarkerRef* m = detail::turn_marker().try_get();
        saw.turn_marker = m != nullptr && *m != nullptr;
        saw.running = a.running();
        return n;
      }));
    });
    co_await std::move(item);
    int v = co_await std::move(*call);
    co_return v;
  };
  auto bound = plain_request.where("r9", body);
  EXPECT_EQ(sync_wait(ms, std::move(bound)), 4);
  EXPECT_EQ(saw.user, "r9");
  EXPECT_EQ(saw.lane, nullptr);
  EXPECT_TRUE(saw.turn_marker);
  EXPECT_EQ(saw.running, 1u);
  sync_wait(ms, lane.close());
}

// spec: [TURN-1.3] [TURN-4.2]
TEST(PlainCall, ASlowPlainBodyIsReportedOnce) {
  ManualScheduler ms;
  std::vector<std::string> reports;
  const auto report = [&](const std::string& id, const std::string& method, std::chrono::nanoseconds) {
    reports.push_back(id + "/" + method);
  };
  const ActivationOptions opts = slow_after(100ms, report);
  Activation<int> a("slow", 0, opts, ms);
  auto stall = a.call("stall", [&ms](int& n) {
    ms.advance(250ms);  // the turn's one step takes 250ms of virtual time
    ++n;
  });
  sync_wait(ms, std::move(stall));
  ms.run_until_idle();
  EXPECT_EQ(reports, (std::vector<std::string>{"slow/stall"}));
  EXPECT_EQ(a.slow_turns(), 1u);
  EXPECT_EQ(ms.timers(), 0u) << "the watchdog, due inside the turn, fired and was not re-armed";
}

// ------------------------------------------------ scoped() in turns [RT-5.5]

// A serial turn's scoped body throws while a child awaits another activation:
// the child is joined before the turn settles (the lane stays held), then the
// body's exception fails the call.
// spec: [RT-5.5] [TURN-1.1] [TURN-4.1] [TURN-2.5]
TEST(ScopedInATurn, ChildrenAreJoinedBeforeTheTurnSettlesEvenWhenTheBodyThrows) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Activation<int> b("b", 40, {}, ms);
  Event release;
  auto hold_b = [&release](TurnContext<int>&) -> Task<> { co_await release.wait(); };
  Outcome<void> held;
  collect(ms, b.call("hold", hold_b), held);  // b's serial lane is busy until release
  int child_got = 0;
  auto child = [](Activation<int>& other, int& out) -> Task<> {
    auto read = other.call("read", [](int& n) { return n + 2; });
    out = co_await std::move(read);
  };
  auto fan = [&](TurnContext<int>& ctx) -> Task<> {
    auto body = [&](Scope& s) -> Task<> {
      s.spawn(child(b, child_got));
      ctx.state() = 1;
      throw std::runtime_error("body failed");
      co_return;
    };
    auto run = scoped("fan", body);
    co_await std::move(run);
  };
  Outcome<void> fanned, next;
  collect(ms, a.call("fan", fan), fanned);
  collect(ms, a.call("next", [](int& n) { n += 10; }), next);
  ms.run_until_idle();
  EXPECT_FALSE(fanned.done) << "the body threw but its child still runs";
  EXPECT_FALSE(next.done) << "the turn holds the serial lane until its children are joined";
  EXPECT_EQ(a.queued(), 1u);
  release.set();
  ms.run_until_idle();
  ASSERT_TRUE(fanned.done);
  EXPECT_EQ(what(fanned.error), "body failed");
  EXPECT_EQ(child_got, 42) << "the child finished before the turn's caller resumed";
  EXPECT_TRUE(next.done);
  EXPECT_EQ(*a.snapshot(), 11) << "the failed turn's change stays; the next turn ran after it";
}

// A scoped child awaiting its own activation waits for its joiner: refused,
// and reported as a child failure is ([RT-5.3]).
// spec: [RT-5.5] [TURN-7.1] [FL-3.9]
TEST(ScopedInATurn, AChildAwaitingItsOwnActivationIsRefusedAndReportedByTheJoin) {
  ManualScheduler ms;
  Activation<int> a("loop", 0, {}, ms);
  auto self_child = [](Activation<int>& self) -> Task<> {
    auto read = self.call("read", [](int& n) { return n; });
    (void)co_await std::move(read);
  };
  auto turn = [&](TurnContext<int>& ctx) -> Task<int> {
    auto body = [&](Scope& s) -> Task<int> {
      s.spawn(self_child(ctx.activation()));
      co_return 5;
    };
    auto run = scoped(body);
    co_return co_await std::move(run);
  };
  Outcome<int> out;
  collect(ms, a.call("fan", turn), out);
  ms.run_until_idle();
  ASSERT_TRUE(out.done);
  EXPECT_FALSE(out.value.has_value());
  EXPECT_TRUE(has(what(out.error), "turn 'fan' of 'loop' awaits call 'read' into 'loop'"))
      << what(out.error);
  EXPECT_EQ(a.turns_completed(), 2u) << "the refused call still ran, after the turn";
}

// scoped + when_all on a fiber with a binding: the children enter a lane with
// the parent's bindings, and each lane item calls an actor with a plain body.
// spec: [RT-5.5] [RT-5.6] [FL-3.9] [LANE-5.1] [TURN-1.3]
TEST(ScopedWithALane, ChildrenEnterTheLaneAndItsItemsCallAnActor) {
  ManualScheduler ms;
  StateLane lane("orders", ms);
  Activation<int> stock("stock", 100, {}, ms);
  std::vector<std::string> in_lane;  // owned by the lane: touched only in its items
  auto reserve = [&](int n) -> Task<int> {
    std::optional<Task<int>> call;
    auto item = lane.run([&] {
      in_lane.push_back(plain_request.or_else("-") + ":" + std::to_string(n));
      call.emplace(stock.call("reserve", [n](int& left) { return left -= n; }));
    });
    co_await std::move(item);
    int left = co_await std::move(*call);
    co_return left;
  };
  auto body = [&](Scope&) -> Task<std::tuple<int, int>> {
    auto both = when_all(reserve(10), reserve(5));
    auto lefts = co_await std::move(both);
    co_return lefts;
  };
  auto fiber = [&]() -> Task<std::tuple<int, int>> {
    auto run = scoped("orders", body);
    auto lefts = co_await std::move(run);
    co_return lefts;
  };
  auto bound = plain_request.where("req-1", fiber);
  auto [first, second] = sync_wait(ms, std::move(bound));
  // The oldest-first schedule runs the first child's item first; results come
  // back in argument order.
  EXPECT_EQ(first, 90);
  EXPECT_EQ(second, 85);
  EXPECT_EQ(*stock.snapshot(), 85);
  ASSERT_EQ(in_lane.size(), 2u);
  EXPECT_EQ(in_lane[0].substr(0, 6), "req-1:") << "children carry the parent's bindings";
  EXPECT_EQ(in_lane[1].substr(0, 6), "req-1:");
  sync_wait(ms, lane.close());
}

}  // namespace
