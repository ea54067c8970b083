// turnstile_test/on_schedulers.hpp: one test body, run on a ManualScheduler and on
// ThreadPools of 1, 2 and 4 carriers (gtest value-parameterised tests).
//
//   class LaneOnSchedulers : public turnstile_test::OnSchedulers {};
//   TURNSTILE_TEST_ON_SCHEDULERS(LaneOnSchedulers);
//
//   // spec: [LANE-5.2]
//   TEST_P(LaneOnSchedulers, RunsInSubmissionOrder) {
//     StateLane lane("l", sched());
//     EXPECT_EQ(run(submit_all(lane)), ...);
//     run(lane.close());
//   }
//
// The instances are named Carriers/<Suite>.<Test>/Manual, .../Pool1, Pool2, Pool4.
// The parameter is the pool's carrier count, 0 for the ManualScheduler.
//
// run(task) is sync_wait(sched(), task): on the ManualScheduler the calling thread
// drives the scheduler until the task completes (a task that cannot complete is
// reported with FrameworkContextError, [RT-6.3]); on a pool it blocks until the
// task completes on a carrier. No sleeps either way. A test awaits, inside the
// tasks it runs, everything whose effects it reads afterwards (children through
// a Scope, calls and lane runs through their Tasks, a lane's items through
// close()): on a pool nothing else orders a carrier's writes before the test's
// reads. Data written by several fibers that may run at once (on pools of 2 and 4
// carriers) is atomic or one slot per fiber.
//
// The scheduler outlives every local of the test body (the fixture owns it), so
// an Activation or a StateLane declared in the body is destroyed first.
//
// A test body whose outcome depends on which item runs first (exact
// interleavings, virtual time) is not for this fixture: those stay on a
// ManualScheduler alone.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "turnstile/scheduler.hpp"
#include "turnstile/sync_wait.hpp"
#include "turnstile/task.hpp"

namespace turnstile_test {

class OnSchedulers : public ::testing::TestWithParam<unsigned> {
 protected:
  OnSchedulers() {
    if (GetParam() == 0) {
      manual_ = std::make_unique<turnstile::ManualScheduler>();
    } else {
      pool_ = std::make_unique<turnstile::ThreadPool>(GetParam());
    }
  }

  turnstile::Scheduler& sched() {
    if (manual_) return *manual_;
    return *pool_;
  }
  bool manual() const { return manual_ != nullptr; }
  unsigned carriers() const { return GetParam(); }

  template <class T>
  T run(turnstile::Task<T> task) {
    return turnstile::sync_wait(sched(), std::move(task));
  }

 private:
  std::unique_ptr<turnstile::ManualScheduler> manual_;
  std::unique_ptr<turnstile::ThreadPool> pool_;
};

inline std::string scheduler_name(const ::testing::TestParamInfo<unsigned>& info) {
  return info.param == 0 ? std::string("Manual") : "Pool" + std::to_string(info.param);
}

}  // namespace turnstile_test

// Instantiates every TEST_P of `Fixture` (a class derived from OnSchedulers) on the
// ManualScheduler and on pools of 1, 2 and 4 carriers.
#define TURNSTILE_TEST_ON_SCHEDULERS(Fixture)                                    \
  INSTANTIATE_TEST_SUITE_P(Carriers, Fixture, ::testing::Values(0u, 1u, 2u, 4u), \
                           ::turnstile_test::scheduler_name)
