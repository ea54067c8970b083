// turn_position_test.cpp: the position-key table of spec/fiber-local.md
// [FL-3.9], one test per boundary (column), each checking a user key, the lane
// marker and the turn marker; and the seams between lanes and turns that the
// table fixes (issue: a lane turn calls an actor, a turn awaits a lane item).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>

#include "turns_support.hpp"
#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;
using namespace turns_test;

const FiberLocal<std::string> request("request");

// What the code at one point sees of each key of the table.
struct Seen {
  bool looked = false;
  std::string user;           // the user key, "-" when unbound
  const StateLane* lane = nullptr;
  const void* turn = nullptr;  // the turn marker's node, null when none
};

const void* current_turn() {
  const detail::TurnMarkerRef* m = detail::turn_marker().try_get();
  return m != nullptr ? m->get() : nullptr;
}

Seen look() { return Seen{true, request.or_else("-"), StateLane::current(), current_turn()}; }


// spec: [FL-3.9] [LANE-6.2]
TEST(PositionTable, ALaneTurnHasTheSubmittersBindingsThisLaneAndNoTurn) {
  ManualScheduler ms;
  StateLane lane("L", ms);
  Seen in_run, in_post;
  auto body = [&]() -> Task<> {
    auto run = lane.run([&] { in_run = look(); });
    co_await std::move(run);
    lane.try_post([&] { in_post = look(); });
  };
  auto bound = request.where("r1", body);
  sync_wait(ms, std::move(bound));
  ms.run_until_idle();
  for (const Seen* s : {&in_run, &in_post}) {
    ASSERT_TRUE(s->looked);
    EXPECT_EQ(s->user, "r1");
    EXPECT_EQ(s->lane, &lane);
    EXPECT_EQ(s->turn, nullptr);
  }
  sync_wait(ms, lane.close());
}

// spec: [FL-3.9] [TURN-7.1]
TEST(PositionTable, AnActorTurnHasTheCallersBindingsItsOwnTurnAndNoLane) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Activation<int> b("b", 0, interleaving({"peek"}), ms);
  Seen caller, serial, interleaved;
  auto outer = a.call("outer", [&](TurnContext<int>&) -> Task<> {
    auto body = [&]() -> Task<> {
      caller = look();
      auto s = b.call("serial", [&](TurnContext<int>&) -> Task<> {
        serial = look();
        co_return;
      });
      co_await std::move(s);
      auto i = b.call("peek", [&](TurnContext<int>&) -> Task<> {
        interleaved = look();
        co_return;
      });
      co_await std::move(i);
    };
    auto bound = request.where("r2", body);
    co_await std::move(bound);
  });
  sync_wait(ms, std::move(outer));
  ASSERT_TRUE(serial.looked && interleaved.looked);
  for (const Seen* s : {&serial, &interleaved}) {
    EXPECT_EQ(s->user, "r2");       // flows
    EXPECT_EQ(s->lane, nullptr);    // reset
    EXPECT_NE(s->turn, nullptr);    // its own
    EXPECT_NE(s->turn, caller.turn);
  }
  EXPECT_NE(serial.turn, interleaved.turn);
}

// spec: [FL-3.9] [TURN-5.1] [TURN-5.2] [FL-3.4]
TEST(PositionTable, ATaskAndADetachedFiberStartNowhereAndTurnFnGetsItsOwnTurn) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Seen in_turn, in_task, in_detached, in_turn_fn;
  auto start = a.call("start", [&](TurnContext<int>& ctx) -> Task<> {
    auto body = [&]() -> Task<> {
      in_turn = look();
      ctx.task([&](TaskContext<int>& t) -> Task<> {
        in_task = look();
        auto fn_body = [&]() -> Task<> {
          auto r = t.turn([&](TurnContext<int>&) -> Task<> {
            in_turn_fn = look();
            co_return;
          });
          co_await std::move(r);
        };
        auto bound = request.where("task", fn_body);
        co_await std::move(bound);
      });
      detach(ms, [](Seen& out) -> Task<> {
        out = look();
        co_return;
      }(in_detached));
      co_return;
    };
    auto bound = request.where("r3", body);
    co_await std::move(bound);
  });
  sync_wait(ms, std::move(start));
  ms.run_until_idle();
  for (const Seen* s : {&in_task, &in_detached}) {
    ASSERT_TRUE(s->looked);
    EXPECT_EQ(s->user, "-");
    EXPECT_EQ(s->lane, nullptr);
    EXPECT_EQ(s->turn, nullptr);
  }
  ASSERT_TRUE(in_turn_fn.looked);
  EXPECT_EQ(in_turn_fn.user, "task");  // the task's bindings flow into its turn
  EXPECT_NE(in_turn_fn.turn, nullptr);
  EXPECT_NE(in_turn_fn.turn, in_turn.turn);
}

// spec: [FL-3.9] [FL-3.2] [RT-5.2]
TEST(PositionTable, AScopeChildHasEverythingOfItsParentIncludingTheTurn) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Seen parent, child;
  auto fan = a.call("fan", [&](TurnContext<int>&) -> Task<> {
    auto body = [&]() -> Task<> {
      parent = look();
      Scope scope;
      scope.spawn([](Seen& out) -> Task<> {
        out = look();
        co_return;
      }(child));
      co_await scope.join();
    };
    auto bound = request.where("r4", body);
    co_await std::move(bound);
  });
  sync_wait(ms, std::move(fan));
  ASSERT_TRUE(child.looked);
  EXPECT_EQ(child.user, "r4");
  EXPECT_EQ(child.lane, nullptr);
  EXPECT_NE(child.turn, nullptr);
  EXPECT_EQ(child.turn, parent.turn);  // flows: the joiner waits for it
}

// spec: [FL-3.9] [FL-3.4] [FL-3.5] [FL-3.8]
TEST(PositionTable, AChannelCarriesNothingAndASnapshotRunKeepsTheRunnersPosition) {
  ManualScheduler ms;
  Activation<int> a("a", 0, {}, ms);
  Activation<int> b("b", 0, {}, ms);
  StateLane lane("L", ms);
  Channel<FiberContext> ch(1);
  Seen receiver_before, receiver_after, run_in_turn, run_in_lane;
  std::optional<FiberContext> kept;
  auto send = a.call("send", [&](TurnContext<int>&) -> Task<> {
    auto body = [&]() -> Task<> {
      FiberContext snapshot = FiberContext::capture();  // has a's turn marker and "sender"
      auto sending = ch.send(std::move(snapshot));  // a named local (GCC 12, see README)
      co_await sending;
    };
    auto bound = request.where("sender", body);
    co_await std::move(bound);
  });
  auto receive = b.call("receive", [&](TurnContext<int>&) -> Task<> {
    auto body = [&]() -> Task<> {
      receiver_before = look();
      auto receiving = ch.receive();
      std::optional<FiberContext> got = co_await receiving;
      receiver_after = look();  // the handoff carried nothing
      got->run([&] { run_in_turn = look(); });
      kept = std::move(got);
    };
    auto bound = request.where("receiver", body);
    co_await std::move(bound);
  });
  sync_wait(ms, std::move(send));
  sync_wait(ms, std::move(receive));
  auto in_lane = lane.run([&] { kept->run([&] { run_in_lane = look(); }); });
  sync_wait(ms, std::move(in_lane));
  EXPECT_EQ(receiver_after.user, "receiver");
  EXPECT_EQ(receiver_after.turn, receiver_before.turn);
  EXPECT_EQ(run_in_turn.user, "sender");               // the snapshot's bindings
  EXPECT_EQ(run_in_turn.turn, receiver_before.turn);   // kept: b's turn, not a's
  EXPECT_EQ(run_in_turn.lane, nullptr);
  EXPECT_EQ(run_in_lane.user, "sender");
  EXPECT_EQ(run_in_lane.lane, &lane);                  // kept: the running lane turn
  EXPECT_EQ(run_in_lane.turn, nullptr);                // a's settled turn is not carried in
  sync_wait(ms, lane.close());
}

// A lane turn calls an actor: the actor's turn runs after the lane turn, not
// on the lane; it sees the item's bindings and may enter the lane itself.
// spec: [FL-3.9] [LANE-5.3] [TURN-7.1]
TEST(PositionTable, ACallFromALaneItemRunsItsTurnOffTheLane) {
  ManualScheduler ms;
  StateLane lane("L", ms);
  Activation<int> a("a", 0, {}, ms);
  Seen in_item, in_turn, in_nested_item;
  std::optional<Task<>> call;
  auto body = [&]() -> Task<> {
    auto run = lane.run([&] {
      in_item = look();
      call.emplace(a.call("from-lane", [&](TurnContext<int>&) -> Task<> {
        in_turn = look();
        auto nested = lane.run([&] { in_nested_item = look(); });  // no false reentrancy
        co_await std::move(nested);
      }));
    });
    co_await std::move(run);
    co_await std::move(*call);
  };
  auto bound = request.where("r5", body);
  sync_wait(ms, std::move(bound));
  ASSERT_TRUE(in_turn.looked);
  EXPECT_EQ(in_turn.user, "r5");
  EXPECT_EQ(in_turn.lane, nullptr);
  EXPECT_NE(in_turn.turn, nullptr);
  ASSERT_TRUE(in_nested_item.looked);
  EXPECT_EQ(in_nested_item.lane, &lane);
  sync_wait(ms, lane.close());
}

// A serial turn awaits a lane item that calls the same activation without
// awaiting: the call queues behind the turn, nothing throws.
// spec: [FL-3.9] [TURN-7.1] [TURN-2.2]
TEST(PositionTable, ALaneRunFromATurnIsNotPartOfTheTurnAndMayCallItsActivation) {
  ManualScheduler ms;
  StateLane lane("L", ms);
  Activation<int> a("a", 0, {}, ms);
  Seen in_turn, in_item;
  std::optional<Task<int>> queued;
  std::string log;
  auto turn = a.call("serial", [&](TurnContext<int>& ctx) -> Task<> {
    auto body = [&]() -> Task<> {
      in_turn = look();
      auto item = lane.run([&] {
        in_item = look();
        queued.emplace(ctx.activation().call("later", [&](TurnContext<int>& c) -> Task<int> {
          log += "later;";
          co_return c.state();
        }));
      });
      co_await std::move(item);
      ctx.state() = 9;
      log += "serial ends;";
    };
    auto bound = request.where("r6", body);
    co_await std::move(bound);
  });
  sync_wait(ms, std::move(turn));
  ASSERT_TRUE(in_item.looked);
  EXPECT_EQ(in_item.user, "r6");
  EXPECT_EQ(in_item.lane, &lane);
  EXPECT_EQ(in_item.turn, nullptr);
  EXPECT_EQ(sync_wait(ms, std::move(*queued)), 9);  // ran after the turn, saw its state
  EXPECT_EQ(log, "serial ends;later;");
  sync_wait(ms, lane.close());
}

// A lane turn runs on no fiber and never waits ([LANE-8.10]), so it could not
// join a child: Scope::spawn there throws at the call, nothing is started, the
// item's error reaches its awaiter and the lane goes on. A Scope child is
// therefore never on a lane (the table's "Scope child" row); work a turn starts
// goes through detach and enters the lane normally ([LANE-8.5]).
// spec: [RT-5.1] [FL-3.9] [LANE-8.5]
TEST(PositionTable, ScopeSpawnInsideALaneTurnThrowsAndTheLaneGoesOn) {
  ManualScheduler ms;
  StateLane lane("L", ms);
  std::string message;
  bool child_ran = false, detached_entered = false, next_ran = false;
  auto fiber = [&]() -> Task<> {
    Scope scope("outer");
    auto turn = lane.run([&] {
      auto child = [](bool& ran) -> Task<> {
        ran = true;
        co_return;
      }(child_ran);
      scope.spawn(std::move(child));  // throws: no fiber to be a child of
    });
    try {
      co_await std::move(turn);
    } catch (const FrameworkContextError& e) {
      message = e.what();
    }
    auto joined = scope.join();  // nothing was counted: returns at once
    co_await std::move(joined);
    auto started = lane.run([&] {
      detach(ms, [](StateLane& l, bool& entered) -> Task<> {
        auto again = l.run([&entered] { entered = true; });  // off the lane [LANE-8.5]
        co_await std::move(again);
      }(lane, detached_entered));
    });
    co_await std::move(started);
    auto next = lane.run([&] { next_ran = true; });
    co_await std::move(next);
  };
  sync_wait(ms, fiber());
  ms.run_until_idle();
  EXPECT_NE(message.find("lane turn"), std::string::npos) << message;
  EXPECT_NE(message.find("detach"), std::string::npos) << message;
  EXPECT_NE(message.find("[RT-5.1]"), std::string::npos) << message;
  EXPECT_FALSE(child_ran);
  EXPECT_TRUE(detached_entered);
  EXPECT_TRUE(next_ran);
}

}  // namespace
