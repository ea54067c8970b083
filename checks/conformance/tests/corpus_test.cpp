// tests/corpus_test.cpp: the hand-written trace corpus (../corpus).
//
// corpus/bad/<RULE-ID>.<slug>.jsonl must each break exactly that rule: every
// violation the checker reports for it names RULE-ID, or is a consequence of
// one that does (`consequence_of`), and there is at least one. A
// <name>.scenario.json beside a trace is the scenario it executes: its
// `expect`s are checked too (check_with_scenario).
// corpus/good/*.jsonl (tricky legal traces among them) must pass every check.
#include <map>

#include "corpus_support.hpp"

namespace turnstile::oracle::testing {
namespace {

// The rules of spec/trace-format.md section 5, each with its test below.
const std::vector<std::string> kCheckedRules = {
    "LANE-5.1", "LANE-5.2", "LANE-8.1", "LANE-5.3", "LANE-8.4", "LANE-8.7", "LANE-7.7",
    "LANE-7.4", "LANE-7.6", "LANE-5.6", "LANE-7.5", "FL-3.1",   "FL-3.2",   "FL-3.3",
    "FL-3.4",   "FL-3.5",   "FL-3.6",   "TURN-3.1", "TURN-2.2", "TURN-2.1", "TURN-7.1",
    "TURN-5.2", "LANE-8.5", "LANE-8.6", "LANE-8.8", "LANE-8.9", "LANE-8.10", "TURN-1.1",
    "TURN-2.3", "TURN-3.2", "TURN-4.2", "TURN-3.3", "FL-3.9"};

// Every bad trace named RULE.*.jsonl is rejected under RULE and nothing else.
void expect_bad_corpus(const std::string& rule) {
  const auto files = corpus_files("bad", rule + ".");
  ASSERT_FALSE(files.empty()) << "no bad trace for " << rule << " in corpus/bad";
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    Trace trace;
    const auto violations = check_corpus_file(file, &trace);
    ASSERT_FALSE(violations.empty()) << "the bad trace passed";
    for (const auto& v : violations) {
      // A consequence may name another rule; its root names this one.
      const std::string& root = v.consequence_of ? v.consequence_of->rule : v.rule;
      EXPECT_EQ(root, rule) << "unexpected violation:" << describe(violations);
      EXPECT_FALSE(v.lines.empty()) << to_string(v);
      EXPECT_TRUE(std::is_sorted(v.lines.begin(), v.lines.end())) << to_string(v);
      EXPECT_FALSE(v.message.empty());
      for (const auto line : v.lines) {
        EXPECT_GE(line, 1u);
        EXPECT_LE(line, trace.events.size());
      }
    }
  }
}

void expect_good(const std::string& name) {
  const auto path = corpus_dir() / "good" / (name + ".jsonl");
  SCOPED_TRACE(path.filename().string());
  const auto violations = check_corpus_file(path);
  EXPECT_TRUE(violations.empty()) << describe(violations);
}


// spec: [LANE-5.1] [TRACE-5.1]
TEST(BadTraceCorpus, Lane5_1_MutualExclusion) { expect_bad_corpus("LANE-5.1"); }
// spec: [LANE-5.2] [TRACE-5.1]
TEST(BadTraceCorpus, Lane5_2_Fifo) { expect_bad_corpus("LANE-5.2"); }
// spec: [LANE-8.1] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_1_NoLostItem) { expect_bad_corpus("LANE-8.1"); }
// spec: [LANE-5.3] [TRACE-5.1]
TEST(BadTraceCorpus, Lane5_3_ReentrantRunRefused) { expect_bad_corpus("LANE-5.3"); }
// spec: [LANE-8.4] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_4_ReentryHangIsReported) { expect_bad_corpus("LANE-8.4"); }
// spec: [LANE-8.7] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_7_NoFalseReentrancy) { expect_bad_corpus("LANE-8.7"); }
// spec: [LANE-7.7] [TRACE-5.1]
TEST(BadTraceCorpus, Lane7_7_PostFromOwnTurnAccepted) { expect_bad_corpus("LANE-7.7"); }
// spec: [LANE-7.4] [TRACE-5.1]
TEST(BadTraceCorpus, Lane7_4_ClosedLaneRefuses) { expect_bad_corpus("LANE-7.4"); }
// spec: [LANE-7.6] [TRACE-5.1]
TEST(BadTraceCorpus, Lane7_6_CloseDrains) { expect_bad_corpus("LANE-7.6"); }
// spec: [LANE-5.6] [TRACE-5.1]
TEST(BadTraceCorpus, Lane5_6_ResumeAfterReleaseOffLane) { expect_bad_corpus("LANE-5.6"); }
// spec: [LANE-7.5] [TRACE-5.1]
TEST(BadTraceCorpus, Lane7_5_OutcomeReachesAwaiter) { expect_bad_corpus("LANE-7.5"); }
// spec: [FL-3.1] [TRACE-5.1]
TEST(BadTraceCorpus, Fl3_1_WhereBindsForTheExtent) { expect_bad_corpus("FL-3.1"); }
// spec: [FL-3.2] [TRACE-5.1]
TEST(BadTraceCorpus, Fl3_2_ChildInheritsAtSpawn) { expect_bad_corpus("FL-3.2"); }
// spec: [FL-3.3] [TRACE-5.1]
TEST(BadTraceCorpus, Fl3_3_ChildRebindingIsPrivate) { expect_bad_corpus("FL-3.3"); }
// spec: [FL-3.4] [TRACE-5.1]
TEST(BadTraceCorpus, Fl3_4_HandoffCarriesNothing) { expect_bad_corpus("FL-3.4"); }
// spec: [FL-3.5] [TRACE-5.1]
TEST(BadTraceCorpus, Fl3_5_InstallSeesTheSnapshot) { expect_bad_corpus("FL-3.5"); }
// spec: [FL-3.6] [TRACE-5.1]
TEST(BadTraceCorpus, Fl3_6_UninstallRestoresTheWorker) { expect_bad_corpus("FL-3.6"); }
// spec: [FL-3.9] [TRACE-5.1]
TEST(BadTraceCorpus, Fl3_9_LaneTurnKeysFlowFromItsSubmitter) { expect_bad_corpus("FL-3.9"); }
// spec: [TURN-3.1] [TRACE-5.1]
TEST(BadTraceCorpus, Turn3_1_OneSerialTurnAtATime) { expect_bad_corpus("TURN-3.1"); }
// spec: [TURN-2.2] [TRACE-5.1]
TEST(BadTraceCorpus, Turn2_2_SerialTurnsInCallOrder) { expect_bad_corpus("TURN-2.2"); }
// spec: [TURN-2.1] [TRACE-5.1]
TEST(BadTraceCorpus, Turn2_1_EveryCallRunsOnce) { expect_bad_corpus("TURN-2.1"); }
// spec: [TURN-7.1] [TRACE-5.1]
TEST(BadTraceCorpus, Turn7_1_CyclesRefusedAtTheAwaitOnly) { expect_bad_corpus("TURN-7.1"); }
// spec: [TURN-5.2] [TRACE-5.1]
TEST(BadTraceCorpus, Turn5_2_ReentryIsASerialCall) { expect_bad_corpus("TURN-5.2"); }

// spec: [LANE-8.5] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_5_LongRunningOperationEntersNormally) { expect_bad_corpus("LANE-8.5"); }
// spec: [LANE-8.6] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_6_CallbackRunsOutsideTheTurn) { expect_bad_corpus("LANE-8.6"); }
// spec: [LANE-8.8] [LANE-5.8] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_8_SubmissionAnsweredBeforeTheFiberGoesOn) { expect_bad_corpus("LANE-8.8"); }
// spec: [LANE-8.9] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_9_WaitingForTheLaneReturns) { expect_bad_corpus("LANE-8.9"); }
// spec: [LANE-8.10] [TRACE-5.1]
TEST(BadTraceCorpus, Lane8_10_LaneTurnNeverWaits) { expect_bad_corpus("LANE-8.10"); }
// spec: [TURN-1.1] [TRACE-5.1]
TEST(BadTraceCorpus, Turn1_1_TurnEndsWhenItsResultSettles) { expect_bad_corpus("TURN-1.1"); }
// spec: [TURN-2.3] [TRACE-5.1]
TEST(BadTraceCorpus, Turn2_3_CountersMatchTheTrace) { expect_bad_corpus("TURN-2.3"); }
// spec: [TURN-3.2] [TRACE-5.1]
TEST(BadTraceCorpus, Turn3_2_InterleavedLaneWaitsForNoSerialTurn) { expect_bad_corpus("TURN-3.2"); }
// spec: [TURN-4.2] [TRACE-5.1]
TEST(BadTraceCorpus, Turn4_2_SlowTurnReportedOnceWhileItRuns) { expect_bad_corpus("TURN-4.2"); }
// spec: [TURN-3.3] [TRACE-5.1]
TEST(BadTraceCorpus, Turn3_3_TheActivationChoosesTheLane) { expect_bad_corpus("TURN-3.3"); }

// Issue 14, finding 1: an accepted item whose body never ran is reported once,
// at its lines, under LANE-8.1; the ops of its body (and the run itself)
// left no outcome as consequences of it, at the item's lines, not at none.
// spec: [LANE-8.1] [TRACE-4.2]
TEST(BadTraceCorpus, BodyThatNeverRanIsOneRootWithConsequences) {
  const auto violations = bad_violations("LANE-8.1.body-never-ran");
  ASSERT_EQ(violations.size(), 4u) << describe(violations);
  EXPECT_EQ(violations[0].rule, "LANE-8.1");
  EXPECT_FALSE(violations[0].consequence_of) << to_string(violations[0]);
  std::set<std::string> rules;
  for (std::size_t i = 1; i < violations.size(); ++i) {
    const auto& v = violations[i];
    rules.insert(v.rule);
    ASSERT_TRUE(v.consequence_of) << to_string(v);
    EXPECT_EQ(v.consequence_of->rule, "LANE-8.1");
    EXPECT_EQ(v.consequence_of->lines, violations[0].lines);
    EXPECT_EQ(v.lines, (std::vector<std::size_t>{2, 3})) << to_string(v);
  }
  EXPECT_EQ(rules, (std::set<std::string>{"LANE-8.1", "FL-3.2", "LANE-7.7"}));
  const auto json = to_json(violations[1]);
  EXPECT_EQ(json["consequence_of"]["rule"], "LANE-8.1");
  EXPECT_NE(to_string(violations[1]).find("(consequence of [LANE-8.1] at lines 3,4)"), std::string::npos);
}

// Finding 1 for fiber-local: a binding whose `where` did not end it, seen on
// its fiber, by a child spawned after, and through a snapshot captured after,
// is one FL-3.1 root (the first read) and consequences, not FL-3.1..3.6.
// spec: [FL-3.1]
TEST(BadTraceCorpus, LeakedBindingIsOneRootWithConsequences) {
  const auto violations = bad_violations("FL-3.1.leaked-binding-seen-everywhere");
  ASSERT_EQ(violations.size(), 3u) << describe(violations);
  EXPECT_EQ(violations[0].lines, (std::vector<std::size_t>{3, 4}));
  EXPECT_FALSE(violations[0].consequence_of);
  for (std::size_t i = 1; i < violations.size(); ++i) {
    EXPECT_EQ(violations[i].rule, "FL-3.1");
    ASSERT_TRUE(violations[i].consequence_of) << to_string(violations[i]);
    EXPECT_EQ(violations[i].consequence_of->lines, (std::vector<std::size_t>{3, 4}));
  }
}

// Finding 2: a close that never drained before a timeout is reported with what
// was left open; a lost item it waits for is the root.
// spec: [LANE-7.6] [LANE-8.1]
TEST(BadTraceCorpus, CloseThatNeverDrainedIsReported) {
  auto v = bad_violations("LANE-7.6.close-never-drained-at-timeout");
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].lines, (std::vector<std::size_t>{4, 7}));
  v = bad_violations("LANE-8.1.close-waits-for-a-lost-item");
  ASSERT_EQ(v.size(), 2u) << describe(v);
  EXPECT_EQ(v[0].rule, "LANE-7.6");
  ASSERT_TRUE(v[0].consequence_of);
  EXPECT_EQ(v[0].consequence_of->rule, "LANE-8.1");
  EXPECT_NE(v[0].message.find("'a' (never started)"), std::string::npos) << v[0].message;
}

// The closer's side of the drain: a close() that returns before its lane
// drained (a shutdown not awaiting termination) is reported at its return.
// spec: [LANE-7.6]
TEST(BadTraceCorpus, CloseReturnedBeforeTheDrainIsReported) {
  const auto v = bad_violations("LANE-7.6.close-returned-before-drain");
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].lines, (std::vector<std::size_t>{3, 4, 5}));
  EXPECT_NE(v[0].message.find("accepted item 'a'"), std::string::npos) << v[0].message;
}

// Finding 3: a bind never restored is reported at a quiescent end, not at a
// timeout (the fiber may still be inside its `where`).
// spec: [FL-3.1]
TEST(BadTraceCorpus, BindNeverRestoredAtAQuiescentEnd) {
  const auto v = bad_violations("FL-3.1.bind-never-restored");
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].lines, (std::vector<std::size_t>{2, 4}));
  expect_good("fl-bind-open-at-timeout");
}

// spec: [LANE-8.5] [LANE-8.6]
TEST(GoodTraceCorpus, WorkStartedInATurnEntersTheLaneNormally) {
  expect_good("lane-detached-prefix-enters-during-turn");
  expect_good("lane-callback-outside-turn-enters");
}

// spec: [TURN-2.3] [TURN-4.2]
TEST(GoodTraceCorpus, CountersAndSlowReportsAgreeWithTheTrace) {
  expect_good("turns-counters");
  expect_good("turns-slow-reported");
}

// spec: [TRACE-5.1]
TEST(BadTraceCorpus, EveryFileNamesACheckedRule) {
  for (const auto& file : corpus_files("bad")) {
    const std::string name = file.filename().string();
    const auto dot = name.find('.', name.find('-'));
    const auto slug_dot = name.find('.', dot + 1);
    ASSERT_NE(slug_dot, std::string::npos) << name << " is not RULE-ID.slug.jsonl";
    const std::string rule = name.substr(0, slug_dot);
    EXPECT_NE(std::find(kCheckedRules.begin(), kCheckedRules.end(), rule), kCheckedRules.end())
        << name << " names " << rule << ", which no corpus test checks";
  }
}

// spec: [TRACE-5.1] [LANE-5.1] [LANE-5.2] [FL-3.1] [TURN-3.1]
TEST(GoodTraceCorpus, EveryGoodTracePasses) {
  const auto files = corpus_files("good");
  ASSERT_GE(files.size(), 8u);
  for (const auto& file : files) expect_good(file.stem().string());
}

// spec: [LANE-7.7]
TEST(GoodTraceCorpus, PostFromOwnTurnIsLegal) { expect_good("lane-post-from-own-turn"); }

// spec: [LANE-5.3] [LANE-8.7]
TEST(GoodTraceCorpus, ReentrantRunRefusedAndCompletionInsideTurnEntersLater) {
  expect_good("lane-reentrant-run-refused");
  expect_good("lane-completion-inside-turn-then-enter");
}

// spec: [LANE-7.4] [LANE-7.6]
TEST(GoodTraceCorpus, PostRacingCloseMayBeAccepted) { expect_good("lane-post-races-close"); }

// Every await of close() returns after the drain, a close after it at once.
// spec: [LANE-7.6]
TEST(GoodTraceCorpus, CloseReturnsAfterTheDrain) { expect_good("lane-close-returns-after-drain"); }

// spec: [TURN-3.2] [TURN-3.1]
TEST(GoodTraceCorpus, InterleavedTurnOverlapsSerialTurn) { expect_good("turns-interleaved-overlap"); }

// spec: [TURN-7.1]
TEST(GoodTraceCorpus, SelfCallRefusedAtTheAwaitIsLegal) {
  expect_good("turns-self-call-refused");
  expect_good("turns-call-after-settled-turn");
}

// An unawaited self-call queues and runs after the turn that made it.
// spec: [TURN-7.1] [TURN-2.2]
TEST(GoodTraceCorpus, UnawaitedSelfCallRunsAfterTheTurn) { expect_good("turns-unawaited-self-call"); }

// Two requests that await each other: one await refused (written after the
// other await, as a racing runtime may), the other completes.
// spec: [TURN-7.1]
TEST(GoodTraceCorpus, TwoRequestCycleRefusedOnce) { expect_good("turns-two-requests-cycle-refused"); }

// A cycle of waits left open at `end` is reported once, at the lines of every
// hop (each turn's start, each queued call, each await), and what waits in it
// is not reported again under TURN-2.1.
// spec: [TURN-7.1] [TURN-2.1]
TEST(BadTraceCorpus, Turn7_1_OpenCycleReportedOnceWithEveryHop) {
  const auto check = [](const std::string& name, const std::vector<std::size_t>& lines) {
    SCOPED_TRACE(name);
    const auto violations = check_trace(parse_corpus_file(corpus_dir() / "bad" / (name + ".jsonl")));
    ASSERT_EQ(violations.size(), 1u) << describe(violations);
    EXPECT_EQ(violations[0].rule, "TURN-7.1");
    EXPECT_EQ(violations[0].lines, lines) << to_string(violations[0]);
  };
  check("TURN-7.1.self-call-hangs", {4, 5, 6});
  check("TURN-7.1.cycle-through-another-activation", {3, 5, 6, 7, 8});
  check("TURN-7.1.two-requests-cycle-not-refused", {6, 7, 8, 9, 10, 11});
  check("TURN-7.1.scope-child-awaits-its-turn", {3, 5, 6});
}

// spec: [TURN-5.2]
TEST(GoodTraceCorpus, TaskReentryAfterItsTurnSettled) { expect_good("turns-task-reentry"); }

// spec: [FL-3.5] [FL-3.6]
TEST(GoodTraceCorpus, InstallInADetachedFiber) { expect_good("fl-install-in-detached-fiber"); }

// spec: [FL-3.2] [FL-3.3] [FL-3.4]
TEST(GoodTraceCorpus, ChildrenAndHandoffs) { expect_good("fl-nesting-and-children"); }

}  // namespace
}  // namespace turnstile::oracle::testing
