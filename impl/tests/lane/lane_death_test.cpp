// lane_death_test.cpp: contract violations that stop the process with a message
// instead of leaking or hanging.
#include <gtest/gtest.h>

#include <optional>

#include "turnstile/gate.hpp"
#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;

// spec: [LANE-7.6]
TEST(LaneDeathTest, DestroyedWithPendingTurnsAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ManualScheduler ms;
        StateLane lane("abandoned", ms);
        (void)lane.try_post([] {});
        // Never driven, never closed: the lane still owns a queued turn.
      },
      "StateLane 'abandoned'.*LANE-7\\.6");
}

// spec: [LANE-4.5]
TEST(LaneDeathTest, GateDestroyedWhileHeldAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::optional<Gate::Holder> h;
        {
          Gate gate("forgotten");
          h = gate.try_acquire();
        }
      },
      "Gate 'forgotten'");
}

}  // namespace
