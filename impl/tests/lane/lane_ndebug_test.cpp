// lane_ndebug_test.cpp: the reentrancy check in a translation unit built as a
// release build would be (NDEBUG defined before any header). The check must not
// depend on the build mode.
#ifndef NDEBUG
#define NDEBUG 1
#endif

#include <gtest/gtest.h>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/outcome.hpp"

namespace {

using namespace turnstile;

// spec: [LANE-7.2]
TEST(LaneSurfaceRelease, ReentrancyCheckIsOnWithNdebug) {
  ManualScheduler ms;
  StateLane lane("release-mode", ms);
  bool run_threw = false, check_threw = false;
  ASSERT_TRUE(lane.try_post([&] {
    // lane.run is instantiated in this NDEBUG unit.
    run_threw = turnstile_test::throws<LaneReentrancyError>([&] { (void)lane.run([] { return 0; }); });
    check_threw = turnstile_test::throws<LaneReentrancyError>([&] { lane.throw_if_reentrant(); });
  }));
  ms.run_until_idle();
  EXPECT_TRUE(run_threw);
  EXPECT_TRUE(check_threw);
}

}  // namespace
