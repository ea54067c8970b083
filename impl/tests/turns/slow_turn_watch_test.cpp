// slow_turn_watch_test.cpp: detail::SlowTurnWatch on its own ([TURN-4.2]),
// driven with a ManualScheduler's virtual clock and a report the test
// implements: the seam a test uses to hold a watchdog report open.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "turnstile/detail/slow_turn_watch.hpp"
#include "turnstile/scheduler.hpp"

namespace {

using namespace turnstile;
using namespace std::chrono_literals;

struct Recorded {
  std::string method;
  std::chrono::nanoseconds elapsed;
  std::string by;
};

class RecordingReport final : public detail::SlowTurnReport {
 public:
  void slow_turn(const std::string& method, std::chrono::nanoseconds elapsed,
                 std::string_view, const char* by) override {
    seen.push_back({method, elapsed, by});
  }
  std::vector<Recorded> seen;
};

// spec: [TURN-4.2]
TEST(SlowTurnWatch, EachTurnIsReportedOnceAtItsOwnDeadlineByWhoeverFindsItFirst) {
  ManualScheduler ms;
  RecordingReport report;
  const std::string first = "first", second = "second";
  {
    detail::SlowTurnWatch watch(ms, 100ms, {}, report);
    detail::RunningTurn a, b;
    watch.started(a, first, {});
    ms.advance(60ms);
    watch.started(b, second, {});
    ms.advance(41ms);  // `first` has run 101 ms: the watchdog reports it
    ms.run_until_idle();
    ASSERT_EQ(report.seen.size(), 1u);
    EXPECT_EQ(report.seen[0].method, "first");
    EXPECT_EQ(report.seen[0].by, "watchdog");
    EXPECT_EQ(report.seen[0].elapsed, 101ms);
    watch.check();  // `second` has run 41 ms: not late, and `first` was reported
    EXPECT_EQ(report.seen.size(), 1u);
    ms.advance(60ms);  // re-armed for `second`, due at its own deadline
    ms.run_until_idle();
    ASSERT_EQ(report.seen.size(), 2u);
    EXPECT_EQ(report.seen[1].method, "second");
    EXPECT_EQ(report.seen[1].by, "watchdog");
    watch.settled(a);  // both reported already: no second report at settle
    watch.settled(b);
    EXPECT_EQ(report.seen.size(), 2u);
  }  // the last settle stood the watchdog down: destroying the watch is safe
  EXPECT_EQ(ms.advance(1s), 0u);  // nothing left armed
}

// spec: [TURN-4.2]
TEST(SlowTurnWatch, ALateTurnNobodyReportedIsReportedAtItsSettleOrByCheck) {
  ManualScheduler ms;
  RecordingReport report;
  const std::string m = "m";
  detail::SlowTurnWatch watch(ms, 100ms, {}, report);
  detail::RunningTurn a, b;
  watch.started(a, m, {});
  watch.started(b, m, {});
  ms.advance(150ms);  // due, but its item has not run yet
  watch.check();      // check() finds both first
  ASSERT_EQ(report.seen.size(), 2u);
  EXPECT_EQ(report.seen[0].by, "check");
  ms.run_until_idle();  // the watchdog's item finds nothing left to report
  EXPECT_EQ(report.seen.size(), 2u);
  watch.settled(a);
  watch.settled(b);
  EXPECT_EQ(report.seen.size(), 2u);

  detail::RunningTurn c;
  watch.started(c, m, {});
  ms.advance(100ms);  // not longer than slow_turn yet: nothing due
  EXPECT_EQ(ms.run_until_idle(), 0u);
  ms.advance(50ms);   // due: the watchdog's item is posted, not run
  watch.settled(c);   // the settle reports it and cancels that item
  ASSERT_EQ(report.seen.size(), 3u);
  EXPECT_EQ(report.seen[2].by, "settle");
  EXPECT_EQ(report.seen[2].elapsed, 150ms);
  ms.run_until_idle();  // the cancelled item does nothing
  EXPECT_EQ(report.seen.size(), 3u);
}

}  // namespace
