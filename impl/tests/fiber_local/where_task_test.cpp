// When a `where` (or `run`) whose body returns Task<R> binds ([FL-4.7]): from
// the moment the task starts, on the fiber that awaits it, not where or when
// the task was made. Covered here: a task made inside another key's where and
// awaited after it; a task made on one fiber and awaited on another; a task
// made and dropped unawaited (its body never runs, nothing leaks); and a
// FiberContext::run task made in one position and started in another (the
// running fiber's position is kept, [FL-3.8]).
//
// Interleavings come from a ManualScheduler (every schedule of the first steps
// explored by bit masks) or sync_wait. No test sleeps.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fl_support.hpp"

namespace {

using namespace turnstile;
using fl_test::run_schedule;
using fl_test::Tracked;
using fl_test::TrackedLeakCheck;

// Suites whose tests count Tracked values (none may be left alive).
using WhereTaskUnawaited = TrackedLeakCheck;

FiberLocal<int> own("own");                    // the task's own key
FiberLocal<int> outer("outer");                // another key, bound around the making or the await
FiberLocal<int> maker_only("maker_only");      // bound only on the fiber that makes the task
FiberLocal<int> awaiter_only("awaiter_only");  // bound only on the fiber that awaits it
using fl_test::tracked;
using fl_test::who;

// "<label> own=5 outer=-1 ...": what the current fiber sees (-1: unbound).
std::string seen(const std::string& label) {
  return label + " own=" + std::to_string(own.or_else(-1)) +
         " outer=" + std::to_string(outer.or_else(-1)) +
         " maker_only=" + std::to_string(maker_only.or_else(-1)) +
         " awaiter_only=" + std::to_string(awaiter_only.or_else(-1));
}

// The task body: logs what it sees when it starts and after a suspension
// (possibly on another carrier step), returns its own key's value.
auto probe_body(std::vector<std::string>* log) {
  return [log]() -> Task<int> {
    log->push_back(seen("start"));
    co_await yield();
    log->push_back(seen("after yield"));
    co_return own.get();  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  };
}

// ------------------------------------------------------------------ made in another where

Task<> made_in_outer_where_awaited_after(std::vector<std::string>* log) {
  std::optional<Task<int>> t;
  outer.where(1, [&] { t.emplace(own.where(5, probe_body(log))); });  // a plain where: ends here
  log->push_back(seen("made"));
  const int r = co_await std::move(*t);  // outer's where ended; nothing bound at the await
  log->push_back(seen("result " + std::to_string(r)));
}

// spec: [FL-4.7]
TEST(WhereTaskBinding, MadeInsideAnotherKeysWhereAndAwaitedAfterItSeesOnlyItsOwnKey) {
  ManualScheduler s;
  std::vector<std::string> log;
  turnstile_test::run_detached(s, made_in_outer_where_awaited_after(&log));
  const std::vector<std::string> expected = {
      "made own=-1 outer=-1 maker_only=-1 awaiter_only=-1",  // making pushed nothing
      "start own=5 outer=-1 maker_only=-1 awaiter_only=-1",  // outer's where is over
      "after yield own=5 outer=-1 maker_only=-1 awaiter_only=-1",
      "result 5 own=-1 outer=-1 maker_only=-1 awaiter_only=-1",  // own restored after
  };
  EXPECT_EQ(log, expected);
}

Task<> made_in_outer_where_awaited_under_another(std::vector<std::string>* log) {
  std::optional<Task<int>> t;
  outer.where(1, [&] { t.emplace(own.where(5, probe_body(log))); });
  Task<> at_await = outer.where(2, [&]() -> Task<> {  // bound at the await, to another value
    const int r = co_await std::move(*t);
    log->push_back(seen("result " + std::to_string(r)));
  });
  co_await std::move(at_await);
  log->push_back(seen("after"));
}

// spec: [FL-4.7]
TEST(WhereTaskBinding, MadeInsideAnotherKeysWhereSeesThatKeyOnlyAsBoundAtTheAwait) {
  ManualScheduler s;
  std::vector<std::string> log;
  turnstile_test::run_detached(s, made_in_outer_where_awaited_under_another(&log));
  const std::vector<std::string> expected = {
      "start own=5 outer=2 maker_only=-1 awaiter_only=-1",  // the await's outer, not the making's
      "after yield own=5 outer=2 maker_only=-1 awaiter_only=-1",
      "result 5 own=-1 outer=2 maker_only=-1 awaiter_only=-1",  // own restored, outer kept
      "after own=-1 outer=-1 maker_only=-1 awaiter_only=-1",
  };
  EXPECT_EQ(log, expected);
}

// ------------------------------------------------------------------ made on one fiber, awaited on another

struct Handoff {
  std::optional<Task<int>> task;
  Event made;
  Event awaited;
  std::vector<std::string> log;
};

// Binds outer=1 and maker_only=7, makes the task, hands it over, and stays
// alive (bindings in place) until the other fiber has awaited it.
Task<> maker(Handoff* h) {
  Task<> bound = maker_only.where(7, [h]() -> Task<> {
    Task<> inner = outer.where(1, [h]() -> Task<> {
      h->task.emplace(own.where(5, probe_body(&h->log)));
      h->made.set();
      co_await h->awaited.wait();
      h->log.push_back(seen("maker after"));
    });
    co_await std::move(inner);
  });
  co_await std::move(bound);
}

// Binds outer=2 and awaiter_only=9, then awaits the other fiber's task.
Task<> awaiter(Handoff* h) {
  co_await h->made.wait();
  Task<> bound = awaiter_only.where(9, [h]() -> Task<> {
    Task<> inner = outer.where(2, [h]() -> Task<> {
      const int r = co_await std::move(*h->task);
      h->log.push_back(seen("awaiter result " + std::to_string(r)));
    });
    co_await std::move(inner);
  });
  co_await std::move(bound);
  h->awaited.set();
}

// spec: [FL-4.7] [FL-5.1]
TEST(WhereTaskBinding, MadeOnOneFiberAwaitedOnAnotherSeesTheAwaitersBindingsPlusItsOwn) {
  const std::vector<std::string> expected = {
      "start own=5 outer=2 maker_only=-1 awaiter_only=9",
      "after yield own=5 outer=2 maker_only=-1 awaiter_only=9",
      "awaiter result 5 own=-1 outer=2 maker_only=-1 awaiter_only=9",
      "maker after own=-1 outer=1 maker_only=7 awaiter_only=-1",  // the maker's own, untouched
  };
  constexpr unsigned kBits = 8;
  for (unsigned mask = 0; mask < (1u << kBits); ++mask) {
    ManualScheduler s;
    Handoff h;
    detach(s, awaiter(&h));
    detach(s, maker(&h));
    run_schedule(s, mask, kBits);
    EXPECT_EQ(h.log, expected) << "schedule mask " << mask;
  }
}

// ------------------------------------------------------------------ made and dropped

// spec: [FL-4.7] [FL-5.6]
TEST_F(WhereTaskUnawaited, ADroppedWhereTaskNeverRunsItsBodyAndFreesEverything) {
  bool ran = false;
  {
    Task<int> t = tracked.where(Tracked(1), [&ran, keep = Tracked(2)]() -> Task<int> {
      ran = true;
      co_return keep.id();
    });
    EXPECT_EQ(Tracked::values(), 2) << "the value and the body, held by the unstarted task";
    EXPECT_FALSE(tracked.is_bound()) << "making the task binds nothing";
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(Tracked::values(), 0) << "the dropped task freed its value and its body";
  EXPECT_EQ(Tracked::objects(), 0);
}

// spec: [FL-4.7] [FL-5.6]
TEST_F(WhereTaskUnawaited, ADroppedWhereTaskOnAFiberLeavesTheFibersBindingAsItWas) {
  ManualScheduler s;
  bool ran = false;
  const int seen_after = sync_wait(s, [](bool* ran_out) -> Task<int> {
    Task<int> bound = tracked.where(Tracked(10), [ran_out]() -> Task<int> {
      {
        Task<int> dropped = tracked.where(Tracked(11), [ran_out]() -> Task<int> {
          *ran_out = true;
          co_return tracked.get().id();
        });
        co_await yield();  // suspended while holding the unstarted task
      }
      co_return tracked.get().id();
    });
    co_return co_await std::move(bound);
  }(&ran));
  EXPECT_FALSE(ran);
  EXPECT_EQ(seen_after, 10) << "the fiber's binding is as it was: the dropped task pushed nothing";
  EXPECT_EQ(Tracked::values(), 0) << "every binding frame and task frame freed";
}

// spec: [FL-4.7] [FL-5.6] [FL-3.5]
TEST_F(WhereTaskUnawaited, ADroppedRunTaskReleasesItsSnapshot) {
  bool ran = false;
  {
    std::optional<Task<int>> t;
    {
      const FiberContext ctx = tracked.where(Tracked(3), [] { return FiberContext::capture(); });
      t.emplace(ctx.run([&ran]() -> Task<int> {
        ran = true;
        co_return tracked.get().id();  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
      }));
    }
    EXPECT_EQ(Tracked::values(), 1) << "the snapshot's frame, held by the unstarted task only";
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(Tracked::values(), 0) << "the dropped task released the snapshot: its frame is freed";
  EXPECT_EQ(Tracked::objects(), 0);
}

// ------------------------------------------------------------------ run task: made here, started there

// The id of the activation whose turn the running fiber is part of (by address).
const void* turn_activation() {
  const detail::TurnMarkerRef m = detail::turn_marker().or_else(nullptr);
  return m ? m->activation : nullptr;
}
std::string turn_method() {
  const detail::TurnMarkerRef m = detail::turn_marker().or_else(nullptr);
  return m ? m->method : std::string("<none>");
}

struct RunProbe {
  std::string who;
  std::string method;
  const void* activation = nullptr;
  const StateLane* lane = nullptr;
};

auto run_probe_body(RunProbe* p) {
  return [p]() -> Task<int> {
    co_await yield();  // the position is the running fiber's at every step
    p->who = who.or_else("<unbound>");
    p->method = turn_method();
    p->activation = turn_activation();
    p->lane = StateLane::current();
    co_return 1;
  };
}

Task<> await_task(std::optional<Task<int>>* t, RunProbe* after) {
  (void)co_await std::move(**t);
  after->who = who.or_else("<unbound>");
  after->method = turn_method();
  after->activation = turn_activation();
  after->lane = StateLane::current();
}

// spec: [FL-4.7] [FL-3.8] [FL-3.5]
TEST(WhereTaskRunPosition, ARunTaskMadeInATurnAndStartedOutsideIsNotInTheTurn) {
  // Made inside an activation turn from a snapshot taken in it (the snapshot
  // holds the turn marker); started on a fiber outside any turn: the snapshot's
  // user binding is seen, the turn is not.
  ManualScheduler ms;
  Activation<int> a("maker", 0, {}, ms);
  std::optional<Task<int>> t;
  RunProbe inside;
  Task<> made = a.call("make", [&](TurnContext<int>&) -> Task<> {
    who.where(std::string("in-turn"), [&] {
      const FiberContext in_turn = FiberContext::capture();
      t.emplace(in_turn.run(run_probe_body(&inside)));
    });
    co_return;
  });
  turnstile_test::run_detached(ms, std::move(made));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(a.running(), 0u) << "the turn that made the task has ended";

  RunProbe after;
  turnstile_test::run_detached(ms, await_task(&t, &after));
  EXPECT_EQ(inside.who, "in-turn");  // [FL-3.5] the snapshot's binding
  EXPECT_EQ(inside.activation, nullptr) << "turn " << inside.method << " travelled in the task";
  EXPECT_EQ(after.who, "<unbound>");
  EXPECT_EQ(after.activation, nullptr);
}

// spec: [FL-4.7] [FL-3.8] [FL-3.5]
TEST(WhereTaskRunPosition, ARunTaskMadeOutsideAndStartedInATurnKeepsTheTurn) {
  // Made outside any turn from an outside snapshot; awaited inside a serial
  // turn: the body runs in that turn (its marker stays), with the snapshot's
  // user binding; the turn still has its marker after the await.
  ManualScheduler ms;
  Activation<int> a("starter", 0, {}, ms);
  const FiberContext outside =
      who.where(std::string("outside"), [] { return FiberContext::capture(); });
  std::optional<Task<int>> t;
  RunProbe inside;
  t.emplace(outside.run(run_probe_body(&inside)));
  RunProbe after;
  Task<> start = a.call("start", [&](TurnContext<int>&) -> Task<> {
    Task<> awaiting = await_task(&t, &after);  // GCC 12: no temporary Task in a co_await operand
    co_await std::move(awaiting);
  });
  turnstile_test::run_detached(ms, std::move(start));
  EXPECT_EQ(inside.who, "outside");  // [FL-3.5] the snapshot's binding
  EXPECT_EQ(inside.activation, &a.id()) << "[FL-3.8] the running fiber's turn is kept";
  EXPECT_EQ(inside.method, "start");
  EXPECT_EQ(after.who, "<unbound>");
  EXPECT_EQ(after.activation, &a.id());
  EXPECT_EQ(after.method, "start");
}

// spec: [FL-4.7] [FL-3.8]
TEST(WhereTaskRunPosition, ARunTaskMadeInALaneTurnAndStartedAfterItIsNotOnTheLane) {
  ManualScheduler ms;
  StateLane lane("made-here", ms);
  std::optional<Task<int>> t;
  RunProbe inside;
  ASSERT_TRUE(lane.try_post([&] {
    const FiberContext in_turn = FiberContext::capture();  // holds the lane marker
    t.emplace(in_turn.run(run_probe_body(&inside)));
  }));
  ms.run_until_idle();
  ASSERT_TRUE(t.has_value());
  RunProbe after;
  turnstile_test::run_detached(ms, await_task(&t, &after));
  EXPECT_EQ(inside.lane, nullptr) << "[FL-3.8] the lane turn did not travel in the task";
  EXPECT_EQ(after.lane, nullptr);
}

}  // namespace
