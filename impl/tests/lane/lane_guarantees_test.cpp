// lane_guarantees_test.cpp: what a StateLane guarantees and requires (spec
// §5) and its C++ surface (§7).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "lane_support.hpp"
#include "turnstile_test/on_schedulers.hpp"
#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;
using turnstile_test::Lcg;

// ----------------------------------------------------------------- [LANE-5.1]

struct ExclusionProbe {
  std::atomic<int> in_turn{0};
  std::atomic<int> max_in_turn{0};
  long total = 0;  // plain: owned by the lane
};

Task<> hammer(StateLane& lane, ExclusionProbe& p, int n) {
  for (int i = 0; i < n; ++i) {
    co_await lane.run([&p] {
      const int now = p.in_turn.fetch_add(1) + 1;
      int seen = p.max_in_turn.load();
      while (now > seen && !p.max_in_turn.compare_exchange_weak(seen, now)) {
      }
      // Stay in the turn a little (no sleep: give the carrier away a few times),
      // so a second, overlapping turn would have a window to show up in.
      for (int k = 0; k < 20; ++k) std::this_thread::yield();
      ++p.total;
      p.in_turn.fetch_sub(1);
    });
  }
}

Task<> hammer_all(StateLane& lane, ExclusionProbe& p, int fibers, int n) {
  Scope scope;
  for (int f = 0; f < fibers; ++f) scope.spawn(hammer(lane, p, n));
  co_await scope.join();
  co_await lane.close();
}

// spec: [LANE-5.1]
TEST(LaneGuarantees, OneTurnAtATimeOnFourCarriers) {
  ThreadPool pool(4);
  StateLane lane("exclusion", pool);
  ExclusionProbe p;
  sync_wait(pool, hammer_all(lane, p, 8, 500));
  EXPECT_EQ(p.max_in_turn.load(), 1);
  EXPECT_EQ(p.total, 8 * 500);
}

// spec: [LANE-5.1]
TEST(LaneGuarantees, TryPostTurnsNeverOverlapEither) {
  ThreadPool pool(4);
  StateLane lane("exclusion-post", pool);
  ExclusionProbe p;
  turnstile_test::run_threads(3, [&](int) {
    for (int i = 0; i < 1000; ++i)
      ASSERT_TRUE(lane.try_post([&p] {
        const int now = p.in_turn.fetch_add(1) + 1;
        if (now > p.max_in_turn.load()) p.max_in_turn.store(now);
        ++p.total;
        p.in_turn.fetch_sub(1);
      }));
  });
  sync_wait(lane.close());
  EXPECT_EQ(p.max_in_turn.load(), 1);
  EXPECT_EQ(p.total, 3000);
}

// ----------------------------------------------------------------- [LANE-5.2]

// Three submitters; each submission is logged at the call, which is the moment
// it takes effect. On a ManualScheduler the calls are totally ordered, so every
// earlier call happens-before every later one and must run first.
Task<> submitter(StateLane& lane, int id, int n, std::vector<int>& submitted,
                 std::vector<int>& executed) {
  for (int i = 0; i < n; ++i) {
    const int tag = id * 100 + i;
    submitted.push_back(tag);
    if (i % 2 == 0) {
      co_await lane.run([&executed, tag] { executed.push_back(tag); });
    } else {
      EXPECT_TRUE(lane.try_post([&executed, tag] { executed.push_back(tag); }));
      co_await yield();
    }
  }
}

// spec: [LANE-5.2]
TEST(LaneGuarantees, FifoAcrossThreeSubmittersUnderManySchedules) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    ManualScheduler ms;
    StateLane lane("fifo", ms);
    std::vector<int> submitted, executed;
    for (int id = 1; id <= 3; ++id) detach(ms, submitter(lane, id, 8, submitted, executed));
    Lcg rng(seed);
    turnstile_test::run_random(ms, rng);
    ASSERT_EQ(executed.size(), 24u) << "seed " << seed;
    EXPECT_EQ(executed, submitted) << "seed " << seed;
  }
}

// spec: [LANE-5.2]
TEST(LaneGuarantees, NoFrontInsertion) {
  ManualScheduler ms;
  StateLane lane("no-front", ms);
  std::vector<std::string> log;
  ASSERT_TRUE(lane.try_post([&] {
    log.push_back("a");
    // Posted from inside a turn, behind everything already queued.
    EXPECT_TRUE(lane.try_post([&] { log.push_back("urgent"); }));
  }));
  ASSERT_TRUE(lane.try_post([&] { log.push_back("b"); }));
  ASSERT_TRUE(lane.try_post([&] { log.push_back("c"); }));
  ms.run_until_idle();
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b", "c", "urgent"}));
}

// ----------------------------------------------------------------- [LANE-5.3]

// spec: [LANE-5.3]
TEST(LaneGuarantees, ReentrantRunThrowsAtTheCallSiteAndQueuesNothing) {
  ManualScheduler ms;
  StateLane lane("orders", ms);
  bool threw_at_call = false;
  bool inner_ran = false;
  ASSERT_TRUE(lane.try_post([&] {
    threw_at_call = turnstile_test::throws<LaneReentrancyError>([&] {
      auto t = lane.run([&] { inner_ran = true; });  // throws here, inside the turn
      (void)t;
    });
  }));
  ms.run_until_idle();
  EXPECT_TRUE(threw_at_call);
  EXPECT_FALSE(inner_ran);  // nothing was queued
  EXPECT_EQ(ms.ready(), 0u);
}

// spec: [LANE-5.3]
TEST(LaneGuarantees, ThrowIfReentrantThrowsOnlyOnItsOwnLane) {
  ManualScheduler ms;
  StateLane lane("a", ms);
  StateLane other("b", ms);
  EXPECT_NO_THROW(lane.throw_if_reentrant());  // plain thread: not on any lane
  bool own = false, foreign = false;
  ASSERT_TRUE(lane.try_post([&] {
    own = turnstile_test::throws<LaneReentrancyError>([&] { lane.throw_if_reentrant(); });
    foreign = turnstile_test::throws<LaneReentrancyError>([&] { other.throw_if_reentrant(); });
  }));
  ms.run_until_idle();
  EXPECT_TRUE(own);
  EXPECT_FALSE(foreign);
}

// ----------------------------------------------------------------- [LANE-5.4]

// A component whose state is a plain std::map and a plain counter, touched from
// four carriers only through its lane. Under ThreadSanitizer this is the check
// that the lane's single turn, not a lock, makes the plain structures safe.
class Ledger {
 public:
  explicit Ledger(Scheduler& s) : lane_("ledger", s) {}
  Task<> credit(std::string who, int n) {
    return lane_.run([this, who = std::move(who), n] {
      balances_[who] += n;  // [LANE-5.4] plain map, no lock
      ++entries_;
    });
  }
  Task<std::pair<long, long>> totals() {
    return lane_.run([this] {
      long sum = 0;
      for (const auto& [who, b] : balances_) sum += b;
      return std::pair<long, long>(sum, entries_);
    });
  }
  Task<> close() { return lane_.close(); }

 private:
  StateLane lane_;
  std::map<std::string, long> balances_;
  long entries_ = 0;
};

Task<> credit_many(Ledger& l, int who, int n) {
  for (int i = 0; i < n; ++i) co_await l.credit("acct-" + std::to_string((who + i) % 5), 1);
}

Task<std::pair<long, long>> ledger_run(Ledger& l) {
  Scope scope;
  for (int f = 0; f < 6; ++f) scope.spawn(credit_many(l, f, 300));
  co_await scope.join();
  auto t = co_await l.totals();
  co_await l.close();
  co_return t;
}

// spec: [LANE-5.4]
TEST(LaneGuarantees, OwnedCollectionsArePlainAndUnlocked) {
  ThreadPool pool(4);
  Ledger ledger(pool);
  auto [sum, entries] = sync_wait(pool, ledger_run(ledger));
  EXPECT_EQ(sum, 6 * 300);
  EXPECT_EQ(entries, 6 * 300);
}

// ----------------------------------------------------------------- [LANE-5.5]

// spec: [LANE-5.5]
TEST(LaneGuarantees, ReentrancyErrorNamesTheLane) {
  ManualScheduler ms;
  StateLane lane("session-catalog", ms);
  std::string message;
  ASSERT_TRUE(lane.try_post([&] {
    message = turnstile_test::thrown<LaneReentrancyError>([&] { lane.throw_if_reentrant(); }).value_or("");
  }));
  ms.run_until_idle();
  EXPECT_NE(message.find("'session-catalog'"), std::string::npos) << message;
  EXPECT_NE(message.find("LANE-5.3"), std::string::npos) << message;
  // Both fixes: the on-lane body for a self-call (kind 1), split_callback for
  // a callback that calls back in (kind 3).
  EXPECT_NE(message.find("on-lane body directly"), std::string::npos) << message;
  EXPECT_NE(message.find("split_callback"), std::string::npos) << message;
}

// ----------------------------------------------------------------- [LANE-5.6]

struct Observed {
  const StateLane* in_turn = nullptr;
  bool on_lane_in_turn = false;
  const StateLane* after = reinterpret_cast<const StateLane*>(1);
  bool on_lane_after = true;
  bool done = false;
};

Task<> observe_completion(StateLane& lane, Observed& o) {
  co_await lane.run([&] {
    o.in_turn = StateLane::current();
    o.on_lane_in_turn = lane.is_on_lane();
  });
  o.after = StateLane::current();
  o.on_lane_after = lane.is_on_lane();
  o.done = true;
}

// spec: [LANE-5.6]
TEST(LaneGuarantees, AwaiterResumesAfterTheMarkerIsReleased) {
  ManualScheduler ms;
  StateLane lane("marker", ms);
  Observed o;
  detach(ms, observe_completion(lane, o));
  ms.run_next(0);  // the fiber starts and queues its turn; the drain is posted
  ASSERT_EQ(ms.ready(), 1u);
  ms.run_next(0);  // the drain step runs the turn and completes it
  EXPECT_FALSE(o.done) << "the awaiter ran inside the drain step";
  ASSERT_EQ(ms.ready(), 1u);  // its resumption was posted instead
  ms.run_next(0);
  ASSERT_TRUE(o.done);
  EXPECT_EQ(o.in_turn, &lane);
  EXPECT_TRUE(o.on_lane_in_turn);
  EXPECT_EQ(o.after, nullptr);
  EXPECT_FALSE(o.on_lane_after);
}

// spec: [LANE-5.6]
TEST(LaneGuarantees, AwaiterOnAnotherCarrierNeverSeesTheMarker) {
  ThreadPool pool(4);
  StateLane lane("marker-pool", pool);
  for (int i = 0; i < 200; ++i) {
    Observed o;
    sync_wait(observe_completion(lane, o));
    ASSERT_EQ(o.in_turn, &lane);
    ASSERT_EQ(o.after, nullptr);
    ASSERT_FALSE(o.on_lane_after);
  }
  sync_wait(lane.close());
}

// ----------------------------------------------------------------- [LANE-5.7]

Task<int> forty_two() { co_return 42; }

// spec: [LANE-5.7]
TEST(LaneGuarantees, SyncWaitInsideATurnThrowsFrameworkContextError) {
  ThreadPool pool(2);
  StateLane lane("bridge", pool);
  auto attempt = [&lane]() -> Task<> {
    co_await lane.run([] { return sync_wait(forty_two()); });
  };
  EXPECT_THROW(sync_wait(attempt()), FrameworkContextError);
  // The lane went on: it still serves turns.
  EXPECT_EQ(sync_wait(lane.run([] { return 7; })), 7);
  sync_wait(lane.close());
}

// spec: [LANE-5.7]
TEST(LaneGuarantees, SyncWaitInsideATurnOnAManualSchedulerThrowsToo) {
  ManualScheduler ms;
  StateLane lane("bridge-manual", ms);
  std::exception_ptr error;
  ASSERT_TRUE(lane.try_post([&] {
    try {
      (void)sync_wait(ms, forty_two());
    } catch (...) {
      error = std::current_exception();
    }
  }));
  ms.run_until_idle();
  ASSERT_TRUE(error);
  EXPECT_THROW(std::rethrow_exception(error), FrameworkContextError);
}

// ----------------------------------------------------------------- [LANE-5.8]

// spec: [LANE-5.8]
TEST(LaneGuarantees, RunQueuesBeforeItReturns) {
  ManualScheduler ms;
  StateLane lane("reserve", ms);
  std::vector<int> log;
  Task<int> reserved = lane.run([&] {
    log.push_back(1);
    return 1;
  });  // not awaited yet
  EXPECT_EQ(ms.ready(), 1u) << "run() returned before its item was queued";
  ASSERT_TRUE(lane.try_post([&] { log.push_back(2); }));
  ms.run_until_idle();
  EXPECT_EQ(log, (std::vector<int>{1, 2}));
  int got = 0;
  detach(ms, [](Task<int> t, int& out) -> Task<> { out = co_await std::move(t); }(
                 std::move(reserved), got));
  ms.run_until_idle();
  EXPECT_EQ(got, 1);
}

// On every scheduler: the lane's drain runs on whichever carrier takes it, and an
// awaiter resumes on whichever carrier its continuation is posted to.
class LaneOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(LaneOnSchedulers);

// One submitter mixing awaited run() and try_post(): its items run in submission
// order, wherever its awaits resume.
Task<> submit_in_order(StateLane& lane, std::vector<int>& executed, int n) {
  for (int i = 0; i < n; ++i) {
    auto item = [&executed, i] { executed.push_back(i); };
    if (i % 2 == 0) {
      co_await lane.run(item);
    } else {
      EXPECT_TRUE(lane.try_post(item));
    }
  }
}

// spec: [LANE-5.2]
TEST_P(LaneOnSchedulers, OneSubmittersItemsRunInSubmissionOrder) {
  StateLane lane("ordered", sched());
  std::vector<int> executed;  // owned by the lane
  run(submit_in_order(lane, executed, 100));
  run(lane.close());
  std::vector<int> submitted(100);
  std::iota(submitted.begin(), submitted.end(), 0);
  EXPECT_EQ(executed, submitted);
}

// spec: [LANE-5.8]
TEST_P(LaneOnSchedulers, ADroppedRunTaskStillRuns) {
  StateLane lane("dropped", sched());
  bool ran = false;
  { auto t = lane.run([&] { ran = true; }); }  // dropped without awaiting
  run(lane.close());                           // every accepted item has run
  EXPECT_TRUE(ran);
}

// ----------------------------------------------------------------- [LANE-5.9]

Task<int> async_surface(StateLane& lane, int& value) {
  co_return co_await lane.run([&value] { return ++value; });
}

// spec: [LANE-5.9]
TEST(LaneGuarantees, AsyncSurfaceIsCanonicalSyncBridgeIsSyncWaitOverIt) {
  ThreadPool pool(2);
  StateLane lane("dual", pool);
  int value = 0;
  // The bridge for tools and tests: sync_wait over the async surface, from a
  // plain thread.
  EXPECT_EQ(sync_wait(async_surface(lane, value)), 1);
  EXPECT_EQ(sync_wait(lane.run([&value] { return ++value; })), 2);
  // Inside a framework context the bridge refuses; the async surface works.
  auto inside = [&]() -> Task<int> {
    EXPECT_THROW((void)sync_wait(async_surface(lane, value)), FrameworkContextError);
    co_return co_await async_surface(lane, value);
  };
  EXPECT_EQ(sync_wait(pool, inside()), 3);
  sync_wait(lane.close());
}

// ----------------------------------------------------------------- [LANE-7.1]

// spec: [LANE-7.1]
TEST(LaneSurface, TheSixNamesAndTheirShapes) {
  static_assert(std::is_same_v<decltype(&StateLane::current), const StateLane* (*)() noexcept>);
  static_assert(
      std::is_same_v<decltype(&StateLane::is_on_lane), bool (StateLane::*)() const noexcept>);
  static_assert(
      std::is_same_v<decltype(&StateLane::throw_if_reentrant), void (StateLane::*)() const>);
  static_assert(std::is_same_v<decltype(&StateLane::close), Task<> (StateLane::*)()>);
  static_assert(
      std::is_same_v<decltype(std::declval<StateLane&>().run([] { return 1; })), Task<int>>);
  static_assert(std::is_same_v<decltype(std::declval<StateLane&>().run([] {})), Task<>>);
  static_assert(std::is_same_v<decltype(std::declval<StateLane&>().try_post([] {})), bool>);
  static_assert(std::is_constructible_v<StateLane, std::string, Scheduler&>);
  static_assert(std::is_constructible_v<StateLane, std::string>);
  static_assert(!std::is_copy_constructible_v<StateLane>);

  ManualScheduler ms;
  StateLane lane("names", ms);
  EXPECT_EQ(lane.name(), "names");
  EXPECT_EQ(StateLane::current(), nullptr);
  EXPECT_FALSE(lane.is_on_lane());
}

// ----------------------------------------------------------------- [LANE-7.2]

// spec: [LANE-7.2]
TEST(LaneSurface, ReentrancyCheckIsOnInThisBuild) {
  ManualScheduler ms;
  StateLane lane("always-on", ms);
  bool threw = false;
  ASSERT_TRUE(lane.try_post([&] {
    threw = turnstile_test::throws<LaneReentrancyError>([&] {
      auto t = lane.run([] {});
      (void)t;
    });
  }));
  ms.run_until_idle();
  EXPECT_TRUE(threw);
  // lane_ndebug_test.cpp repeats this in a translation unit built with NDEBUG.
}

// ----------------------------------------------------------------- [LANE-7.3]

template <class L>
concept has_dispose = requires(L& l) { l.dispose(); };
template <class L>
concept has_close_async = requires(L& l) { l.close_async(); };

// spec: [LANE-7.3]
TEST(LaneSurface, CloseIsTheOneShutdownName) {
  static_assert(std::is_same_v<decltype(std::declval<StateLane&>().close()), Task<>>);
  static_assert(!has_dispose<StateLane>, "C++ spells the contract's close as close()");
  static_assert(!has_close_async<StateLane>);
  ManualScheduler ms;
  StateLane lane("close-name", ms);
  bool done = false;
  detach(ms, [](StateLane& l, bool& d) -> Task<> {
    co_await l.close();
    d = true;
  }(lane, done));
  ms.run_until_idle();
  EXPECT_TRUE(done);
  EXPECT_TRUE(lane.is_closed());
}

// ----------------------------------------------------------------- [LANE-7.4]

// spec: [LANE-7.4]
TEST(LaneSurface, ClosedLaneRefusesRunAndTryPost) {
  ManualScheduler ms;
  StateLane lane("shut", ms);
  auto closing = lane.close();
  (void)closing;
  try {
    auto t = lane.run([] { return 1; });
    (void)t;
    ADD_FAILURE() << "run() on a closed lane did not throw";
  } catch (const LaneClosedError& e) {
    EXPECT_NE(std::string(e.what()).find("'shut'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(lane.try_post([] {}));
  EXPECT_EQ(ms.ready(), 0u);
}

// ----------------------------------------------------------------- [LANE-7.5]

Task<> failing_then_fine(StateLane& lane, std::string& caught, int& after) {
  try {
    co_await lane.run([]() -> int { throw std::runtime_error("boom in the turn"); });
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
  after = co_await lane.run([] { return 5; });
}

// spec: [LANE-7.5]
TEST(LaneSurface, FailureReachesTheAwaiterAndTheLaneGoesOn) {
  ManualScheduler ms;
  StateLane lane("failing", ms);
  std::string caught;
  int after = 0;
  bool queued_behind_ran = false;
  detach(ms, failing_then_fine(lane, caught, after));
  ms.run_next(0);  // the failing turn is queued
  ASSERT_TRUE(lane.try_post([&] { queued_behind_ran = true; }));
  ms.run_until_idle();
  EXPECT_EQ(caught, "boom in the turn");
  EXPECT_TRUE(queued_behind_ran);
  EXPECT_EQ(after, 5);
}

// spec: [LANE-7.5]
TEST_P(LaneOnSchedulers, TryPostFailureGoesToTheErrorHandler) {
  StateLane lane("posted", sched());
  std::vector<std::string> seen;  // written inside turns: one at a time
  lane.set_error_handler([&](const StateLane& l, std::exception_ptr e) {
    seen.push_back(l.name() + ": " + turnstile_test::what(e));
  });
  bool next_ran = false;
  ASSERT_TRUE(lane.try_post([] { throw std::runtime_error("posted boom"); }));
  ASSERT_TRUE(lane.try_post([&] { next_ran = true; }));
  run(lane.close());
  EXPECT_EQ(seen, (std::vector<std::string>{"posted: posted boom"}));
  EXPECT_TRUE(next_ran);
}

// spec: [LANE-7.5]
TEST(LaneSurface, TryPostFailureDefaultsToOneLineOnStderr) {
  ManualScheduler ms;
  StateLane lane("noisy", ms);
  bool next_ran = false;
  ASSERT_TRUE(lane.try_post([] { throw std::runtime_error("unheard"); }));
  ASSERT_TRUE(lane.try_post([&] { next_ran = true; }));
  testing::internal::CaptureStderr();
  ms.run_until_idle();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("'noisy'"), std::string::npos) << err;
  EXPECT_NE(err.find("unheard"), std::string::npos) << err;
  EXPECT_TRUE(next_ran);
}

// spec: [LANE-7.5]
TEST(LaneSurface, AThrowingErrorHandlerFallsBackToStderr) {
  ManualScheduler ms;
  StateLane lane("handler-throws", ms);
  lane.set_error_handler([](const StateLane&, std::exception_ptr) { throw 1; });
  ASSERT_TRUE(lane.try_post([] { throw std::runtime_error("original"); }));
  testing::internal::CaptureStderr();
  ms.run_until_idle();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("original"), std::string::npos) << err;
}

// ----------------------------------------------------------------- [LANE-7.6]

Task<> close_and_mark(StateLane& lane, std::vector<std::string>& log, std::string tag) {
  co_await lane.close();
  log.push_back(tag);
}

// spec: [LANE-7.6]
TEST(LaneSurface, CloseRunsEverythingAcceptedThenCompletes) {
  ManualScheduler ms;
  StateLane lane("draining", ms);
  std::vector<std::string> log;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(lane.try_post([&log, i] { log.push_back("item" + std::to_string(i)); }));
  detach(ms, close_and_mark(lane, log, "closed-1"));
  detach(ms, close_and_mark(lane, log, "closed-2"));  // idempotent: a second close waits too
  ms.run_next(1);  // the first close() takes effect before the queued items run
  ms.run_next(1);  // the second close() waits as well
  EXPECT_TRUE(lane.is_closed());
  EXPECT_FALSE(lane.try_post([&] { log.push_back("late"); }));
  ms.run_until_idle();
  EXPECT_EQ(log, (std::vector<std::string>{"item0", "item1", "item2", "closed-1", "closed-2"}));
}

// spec: [LANE-7.6]
TEST_P(LaneOnSchedulers, CloseOfAnIdleLaneCompletesAtOnceAndCloseAfterCloseToo) {
  StateLane lane("idle-close", sched());
  std::vector<std::string> log;
  run(close_and_mark(lane, log, "first"));
  run(close_and_mark(lane, log, "again"));
  EXPECT_EQ(log, (std::vector<std::string>{"first", "again"}));
}

// spec: [LANE-7.6]
TEST(LaneSurface, CloseFromInsideATurnCompletesAfterThatTurn) {
  ManualScheduler ms;
  StateLane lane("self-close", ms);
  std::vector<std::string> log;
  std::optional<Task<>> closing;
  ASSERT_TRUE(lane.try_post([&] {
    closing.emplace(lane.close());  // takes effect now; nothing waits inside the turn
    log.push_back("turn");
  }));
  ASSERT_TRUE(lane.try_post([&] { log.push_back("accepted-before-close"); }));
  ms.run_until_idle();
  ASSERT_TRUE(closing.has_value());
  detach(ms, [](Task<> t, std::vector<std::string>& l) -> Task<> {
    co_await std::move(t);
    l.push_back("closed");
  }(std::move(*closing), log));
  ms.run_until_idle();
  EXPECT_EQ(log, (std::vector<std::string>{"turn", "accepted-before-close", "closed"}));
}

// The awaiter of the last run() may destroy the lane: by the time it resumes the
// drain no longer touches the lane. LatePostScheduler makes the awaiter run, to
// its end, while the drain step is still inside the completing call.
Task<> last_run_then_destroy(std::unique_ptr<StateLane>& lane, int& value) {
  value = co_await lane->run([] { return 9; });
  lane.reset();
}

// spec: [LANE-7.6]
TEST(LaneSurface, AwaiterOfTheLastRunMayDestroyTheLane) {
  lt::LatePostScheduler late;
  ManualScheduler ms;
  auto lane = std::make_unique<StateLane>("short-lived", ms);
  int value = 0;
  detach(late, last_run_then_destroy(lane, value));  // queues the turn
  ASSERT_EQ(ms.ready(), 1u);
  ms.run_next(0);  // the turn; its awaiter runs and destroys the lane inside complete()
  EXPECT_EQ(value, 9);
  EXPECT_EQ(lane, nullptr);
}

// spec: [LANE-7.6]
TEST(LaneSurface, AwaiterOfTheLastRunMayDestroyTheLaneAtTheStepBudget) {
  // One drain step runs at most 64 turns; here the 64th is the last one.
  for (int queued_before : {62, 63, 64}) {
    lt::LatePostScheduler late;
    ManualScheduler ms;
    auto lane = std::make_unique<StateLane>("budget", ms);
    int posted = 0, value = 0;
    for (int i = 0; i < queued_before; ++i) ASSERT_TRUE(lane->try_post([&posted] { ++posted; }));
    detach(late, last_run_then_destroy(lane, value));
    ms.run_until_idle();
    EXPECT_EQ(posted, queued_before);
    EXPECT_EQ(value, 9);
    EXPECT_EQ(lane, nullptr) << queued_before;
  }
}

// ----------------------------------------------------------------- [LANE-7.7]

// spec: [LANE-7.7]
TEST_P(LaneOnSchedulers, TryPostFromItsOwnTurnQueuesBehindAndNeverDeadlocks) {
  StateLane lane("self-post", sched());
  std::vector<int> log;
  Task<> t = lane.run([&] {
    log.push_back(1);
    EXPECT_TRUE(lane.try_post([&] { log.push_back(3); }));  // not reentrant: nothing waits
    log.push_back(2);
  });
  run(std::move(t));
  run(lane.close());  // drains the self-posted item
  EXPECT_EQ(log, (std::vector<int>{1, 2, 3}));
}

}  // namespace
