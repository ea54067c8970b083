// lane_gate_test.cpp: Gate, the operation-protocol gate (spec §4: the gate
// conditions and the one allowed direction between a gate and a lane).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "lane_support.hpp"
#include "turnstile/gate.hpp"
#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;

// ----------------------------------------------------------------- [LANE-4.5]

struct GateProbe {
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  long operations = 0;  // written only by the holder
};

Task<> operate(Gate& gate, GateProbe& p, int n) {
  for (int i = 0; i < n; ++i) {
    Gate::Holder held = co_await gate.acquire();
    const int now = p.inside.fetch_add(1) + 1;
    int seen = p.max_inside.load();
    while (now > seen && !p.max_inside.compare_exchange_weak(seen, now)) {
    }
    co_await yield();  // the external operation: the holder may suspend
    ++p.operations;
    p.inside.fetch_sub(1);
  }
}

Task<> operate_all(Gate& gate, GateProbe& p) {
  Scope scope;
  for (int f = 0; f < 6; ++f) scope.spawn(operate(gate, p, 200));
  co_await scope.join();
}

// spec: [LANE-4.5]
TEST(LaneGate, OneHolderAtATimeAcrossSuspensions) {
  ThreadPool pool(4);
  Gate gate("socket");
  GateProbe p;
  sync_wait(pool, operate_all(gate, p));
  EXPECT_EQ(p.max_inside.load(), 1);
  EXPECT_EQ(p.operations, 6 * 200);
  EXPECT_FALSE(gate.is_held());
}

Task<> take_and_log(Gate& gate, std::vector<int>& log, int id, std::optional<Gate::Holder>& keep) {
  Gate::Holder h = co_await gate.acquire();
  log.push_back(id);
  keep.emplace(std::move(h));  // held until the test releases it
}

// spec: [LANE-4.5]
TEST(LaneGate, WaitersAreServedFifoAndResumedPostedNotInline) {
  ManualScheduler ms;
  Gate gate("handshake");
  auto first = gate.try_acquire();
  ASSERT_TRUE(first.has_value());
  std::vector<int> log;
  std::optional<Gate::Holder> h1, h2, h3;
  detach(ms, take_and_log(gate, log, 1, h1));
  detach(ms, take_and_log(gate, log, 2, h2));
  turnstile_test::run_detached(ms, take_and_log(gate, log, 3, h3));
  EXPECT_EQ(gate.waiting(), 3u);
  EXPECT_FALSE(gate.try_acquire().has_value());  // held; and waiters are never overtaken

  first->release();
  EXPECT_TRUE(log.empty()) << "a waiter ran inside release()";
  EXPECT_EQ(ms.ready(), 1u);  // the oldest waiter was posted
  EXPECT_TRUE(gate.is_held());  // handed over, not freed: nobody can barge in
  EXPECT_FALSE(gate.try_acquire().has_value());
  ms.run_until_idle();
  h1.reset();
  ms.run_until_idle();
  h2.reset();
  ms.run_until_idle();
  EXPECT_EQ(log, (std::vector<int>{1, 2, 3}));
  h3.reset();
  EXPECT_FALSE(gate.is_held());
  EXPECT_EQ(gate.waiting(), 0u);
}

// spec: [LANE-4.5]
TEST(LaneGate, HolderReturnsTheOwnershipExactlyOnce) {
  Gate gate("dispose");
  std::optional<Gate::Holder> h = gate.try_acquire();
  ASSERT_TRUE(h && h->owns());
  EXPECT_EQ(h->gate(), &gate);
  Gate::Holder moved = std::move(*h);
  EXPECT_FALSE(h->owns());
  EXPECT_TRUE(moved.owns());
  h->release();  // a moved-from holder releases nothing
  EXPECT_TRUE(gate.is_held());
  moved.release();
  EXPECT_FALSE(gate.is_held());
  moved.release();  // idempotent
  EXPECT_FALSE(gate.is_held());
  {
    auto again = gate.try_acquire();
    ASSERT_TRUE(again.has_value());
    Gate::Holder assigned;
    assigned = std::move(*again);
    EXPECT_TRUE(gate.is_held());
  }  // destruction releases
  EXPECT_FALSE(gate.is_held());
}

// Settled inside the gate, acted on after: the generation the operation needs
// is captured while holding the gate; after release the code acts on what it
// was handed, not on shared state.
Task<> settle_then_act(Gate& gate, int& generation, std::vector<int>& acted) {
  int mine = 0;
  {
    Gate::Holder h = co_await gate.acquire();
    mine = ++generation;  // settled before the operation starts
    co_await yield();     // the operation
  }                       // released
  co_await yield();
  acted.push_back(mine);  // acts on its own token
}

// spec: [LANE-4.5]
TEST(LaneGate, OwnershipSettledInsideTheGateStaysValidAfterIt) {
  ManualScheduler ms;
  Gate gate("generation");
  int generation = 0;
  std::vector<int> acted;
  for (int i = 0; i < 3; ++i) detach(ms, settle_then_act(gate, generation, acted));
  turnstile_test::Lcg rng(7);
  turnstile_test::run_random(ms, rng);
  std::sort(acted.begin(), acted.end());
  EXPECT_EQ(acted, (std::vector<int>{1, 2, 3}));
}

Task<> acquire_once(Gate& g) { Gate::Holder x = co_await g.acquire(); }

// spec: [LANE-4.5]
TEST(LaneGate, WaitingNeedsAFiberTakingAFreeGateDoesNot) {
  Gate gate("plain");
  auto h = gate.try_acquire();
  ASSERT_TRUE(h.has_value());
  // A coroutine resumed by hand on a plain thread (no fiber) that would have to
  // wait is refused, and is not linked as a waiter.
  auto handle = acquire_once(gate).release();
  detail::resume_step(handle);
  ASSERT_TRUE(handle.done());
  EXPECT_THROW(handle.promise().take_result(), FrameworkContextError);
  handle.destroy();
  EXPECT_EQ(gate.waiting(), 0u);
  h->release();
  // Free: the same acquire continues at once, even off a fiber.
  auto free_handle = acquire_once(gate).release();
  detail::resume_step(free_handle);
  ASSERT_TRUE(free_handle.done());
  EXPECT_NO_THROW(free_handle.promise().take_result());
  free_handle.destroy();
  EXPECT_FALSE(gate.is_held());
}

// ----------------------------------------------------------------- [LANE-4.6]

// spec: [LANE-4.6]
TEST(LaneGate, AcquiringInsideALaneTurnThrowsNamingLaneAndGate) {
  ManualScheduler ms;
  StateLane lane("catalog", ms);
  Gate gate("socket-7");
  std::string acquire_error, try_error;
  ASSERT_TRUE(lane.try_post([&] {
    acquire_error = turnstile_test::thrown<LaneGateError>([&] {
      auto a = gate.acquire();  // throws at the call, before anything can wait
      (void)a;
    }).value_or("");
    try_error = turnstile_test::thrown<LaneGateError>([&] { (void)gate.try_acquire(); }).value_or("");
  }));
  ms.run_until_idle();
  for (const std::string& m : {acquire_error, try_error}) {
    EXPECT_NE(m.find("'catalog'"), std::string::npos) << m;
    EXPECT_NE(m.find("'socket-7'"), std::string::npos) << m;
    EXPECT_NE(m.find("LANE-4.6"), std::string::npos) << m;
  }
  EXPECT_FALSE(gate.is_held());
}

Task<int> hold_gate_then_use_lane(Gate& gate, StateLane& lane, int& state) {
  Gate::Holder held = co_await gate.acquire();
  co_return co_await lane.run([&state] { return ++state; });  // the allowed direction
}

// spec: [LANE-4.6]
TEST(LaneGate, WaitingForALaneWhileHoldingAGateIsAllowed) {
  ThreadPool pool(2);
  StateLane lane("allowed", pool);
  Gate gate("outer");
  int state = 0;
  EXPECT_EQ(sync_wait(hold_gate_then_use_lane(gate, lane, state)), 1);
  EXPECT_FALSE(gate.is_held());
  sync_wait(lane.close());
}

}  // namespace
