// tests/attribution_test.cpp: one root per bug (spec/trace-format.md section
// 4.1, "Attribution", issue 25). Each case of the corpus below is one bug; the
// test asserts its exact roots, and the root every other violation names.
#include <set>
#include <utility>

#include "corpus_support.hpp"

namespace turnstile::oracle::testing {
namespace {

using Lines = std::vector<std::size_t>;

std::vector<const Violation*> roots_of(const std::vector<Violation>& violations) {
  std::vector<const Violation*> out;
  for (const auto& v : violations)
    if (!v.consequence_of) out.push_back(&v);
  return out;
}

// Every violation but `root` names it (A0: a consequence names a root), and
// the consequences are exactly `expected` (rule, lines).
void expect_consequences_of(const std::vector<Violation>& violations, const Violation& root,
                            const std::set<std::pair<std::string, Lines>>& expected) {
  std::set<std::pair<std::string, Lines>> seen;
  for (const auto& v : violations) {
    if (&v == &root) continue;
    ASSERT_TRUE(v.consequence_of) << to_string(v) << describe(violations);
    EXPECT_EQ(v.consequence_of->rule, root.rule) << to_string(v);
    EXPECT_EQ(v.consequence_of->lines, root.lines) << to_string(v);
    seen.emplace(v.rule, v.lines);
  }
  EXPECT_EQ(seen, expected) << describe(violations);
}

// `violations` have exactly one root, `rule` at `lines` (whose message holds
// `in_message`, when one is given); every other violation names it, and they
// are exactly `consequences` (rule, lines).
void expect_one_root(const std::vector<Violation>& violations, const std::string& rule,
                     const Lines& lines, const std::set<std::pair<std::string, Lines>>& consequences,
                     const std::string& in_message = "") {
  const auto roots = roots_of(violations);
  ASSERT_EQ(roots.size(), 1u) << describe(violations);
  EXPECT_EQ(roots[0]->rule, rule);
  EXPECT_EQ(roots[0]->lines, lines);
  if (!in_message.empty()) {
    EXPECT_NE(roots[0]->message.find(in_message), std::string::npos) << roots[0]->message;
  }
  expect_consequences_of(violations, *roots[0], consequences);
}

// (a) An accepted reentrant run that then waits (p-queue's and async-mutex's
// awaited add()): one [LANE-5.3] root; the hang is named under [LANE-8.4] as
// its consequence, and so are the `expect`s it left without an outcome (the
// awaiting run, the reentrant run, the op its fiber never reached).
// spec: [LANE-5.3] [LANE-8.4] [TRACE-4.2]
TEST(Attribution, AcceptedReentrantRunThatWaitsIsOneRootAndItsHang) {
  const auto v = bad_violations("LANE-5.3.reentrant-run-accepted-then-waits");
  expect_one_root(v, "LANE-5.3", {5, 6},
                  {{"LANE-8.4", {4, 5, 6, 7}}, {"LANE-8.9", {2, 3, 4}}, {"LANE-5.3", {5, 6}},
                   {"LANE-7.7", {7}}});
  bool named = false;
  for (const auto& x : v) named = named || (x.rule == "LANE-8.4" && x.message.find("possible hang") != std::string::npos);
  EXPECT_TRUE(named) << describe(v);
}

// (b) A handoff that carries its spawner's binding: one [FL-3.4] root at the
// handoff's first read; the structured child's read and the read through a
// snapshot captured in the handoff are its consequences (not FL-3.2, FL-3.5).
// spec: [FL-3.4] [TRACE-4.2]
TEST(Attribution, CarriedBindingIsOneHandoffRoot) {
  expect_one_root(bad_violations("FL-3.4.carried-into-child-and-snapshot"), "FL-3.4", {3, 4},
                  {{"FL-3.4", {6}}, {"FL-3.4", {10}}});
}

// (c) Items accepted after a close request that run after the drain, or that
// the drain left unfinished: [LANE-7.6] follows from [LANE-7.4]; the second
// lane's [LANE-7.4] is a repeat of the first (A5), and what follows from it
// names the first (A0).
// spec: [LANE-7.4] [LANE-7.6] [TRACE-4.2]
TEST(Attribution, ClosedLaneThatRunsLateWorkIsOneRoot) {
  expect_one_root(bad_violations("LANE-7.4.accepted-after-close-runs-after-drain"), "LANE-7.4",
                  {2, 4, 5},
                  {{"LANE-7.6", {3, 6}}, {"LANE-7.4", {8, 9, 10}}, {"LANE-7.6", {10, 11}},
                   {"LANE-7.6", {11, 12}}});
}

// (d) Ops stuck behind a reported hang (a self-call awaited from its own turn,
// never refused): the call that never returned and the read its fiber never
// reached are consequences of the [TURN-7.1] cycle, not roots of their own.
// spec: [TURN-7.1] [TURN-2.1] [TRACE-4.2]
TEST(Attribution, OpsStuckBehindAHangAreItsConsequences) {
  expect_one_root(bad_violations("TURN-7.1.self-call-hangs-ops-stuck"), "TURN-7.1", {4, 5, 6},
                  {{"TURN-2.1", {2}}, {"FL-3.1", {7}}});
}

// (e) A `lane.accepted` emitted after the lane's lock was released (after the
// item's turn started and ended): [LANE-5.2] alone, at the start; no "ended
// without having started", no "resumed before the turn ended", no [LANE-8.8].
// The later out-of-order starts are repeats of it (A5).
// spec: [LANE-5.2] [TRACE-4.2]
TEST(Attribution, LateAcceptanceIsOneFifoRoot) {
  expect_one_root(bad_violations("LANE-5.2.accepted-emitted-late"), "LANE-5.2", {2, 3},
                  {{"LANE-5.2", {8, 10, 13}}, {"LANE-5.2", {8, 12, 15}}});
}

// (f) p-queue's bug: a queued turn runs in the context captured for the item
// that freed the queue. The root is [FL-3.9] at the turn's start, with the
// capture and install lines as its witness; the turn's read and a read through
// a context captured in that turn are its consequences (A3).
// spec: [FL-3.9] [TRACE-4.2]
TEST(Attribution, TurnInAnotherItemsContextIsOneFl39Root) {
  expect_one_root(bad_violations("FL-3.9.turn-in-another-items-context"), "FL-3.9", {5, 10, 17, 18},
                  {{"FL-3.2", {19}}, {"FL-3.5", {24}}}, "captured for item 'a'");
}

// The restore bug inside an install: a binding restored inside the install it
// was bound in, and still seen there and after the uninstall, is one [FL-3.1]
// root (not FL-3.5 inside, FL-3.6 after).
// spec: [FL-3.1] [TRACE-4.2]
TEST(Attribution, BindingLeakedInsideAnInstallIsOneRestoreRoot) {
  expect_one_root(bad_violations("FL-3.1.leaked-inside-install"), "FL-3.1", {5, 6}, {{"FL-3.1", {5, 8}}});
}

// (i) An accepted reentrant run that runs inline, inside the turn that
// submitted it (asio's dispatch from inside its strand): one [LANE-5.3] root;
// its turn's overlap with the submitter's ([LANE-5.1]), its start ahead of the
// item queued before it ([LANE-5.2]) and its awaiter resumed inside the
// submitter's turn ([LANE-5.6]) are its consequences (A6).
// spec: [LANE-5.3] [LANE-5.1] [LANE-5.2] [LANE-5.6] [TRACE-4.2]
TEST(Attribution, ReentrantRunRunInlineIsOneRoot) {
  expect_one_root(bad_violations("LANE-5.3.reentrant-run-runs-inline"), "LANE-5.3", {7, 8},
                  {{"LANE-5.1", {6, 9}}, {"LANE-5.2", {5, 8, 9}}, {"LANE-5.6", {10, 11}}});
}

// (g) Queued items dropped by a library's clear() (p-queue's `clear()`,
// async-mutex's `cancel()`), reported with the optional `lane.dropped`: one
// [LANE-8.1] root, accepted work lost, at the first item's acceptance and
// drop. Its awaiter's resumption with `error`, that run's unmet `expect`, the
// read its body never made and the second dropped item (a repeat, A5) are its
// consequences; no [LANE-5.6] ("resumed before the turn ended"), no
// [LANE-5.2], and the drain does not wait for what was dropped.
// spec: [LANE-8.1] [TRACE-4.2]
TEST(Attribution, DroppedQueuedItemsAreOneLostWorkRoot) {
  expect_one_root(bad_violations("LANE-8.1.queued-items-dropped-by-clear"), "LANE-8.1", {6, 9},
                  {{"LANE-8.1", {8, 10}}, {"LANE-8.1", {9, 11}}, {"LANE-8.1", {5, 6, 11}},
                   {"FL-3.2", {5, 6, 11}}},
                  "was dropped (clear) before its turn started");
}

// (h) CAF's self-request awaited by its own handler, left at the request
// timeout and reported with the optional `turn.await_abandoned`: one [TURN-7.1]
// root, the cycle; the turn's end after the abandon is no [TURN-1.1] (its await
// waits no more), so the hang is the only diagnosis.
// spec: [TURN-7.1] [TURN-1.1] [TRACE-4.2]
TEST(Attribution, CycleLeftAtATimeoutIsOneCycleRoot) {
  const auto v = bad_violations("TURN-7.1.self-request-abandoned-at-timeout");
  ASSERT_EQ(v.size(), 1u) << describe(v);
  EXPECT_EQ(v[0].rule, "TURN-7.1");
  EXPECT_EQ(v[0].lines, (Lines{4, 5, 6}));
  EXPECT_FALSE(v[0].consequence_of);
}

// A0 over the whole corpus: a consequence names a root, never a consequence.
// spec: [TRACE-4.2]
TEST(Attribution, EveryConsequenceNamesARoot) {
  for (const auto& file : corpus_files("bad")) {
    SCOPED_TRACE(file.filename().string());
    const auto v = check_corpus_file(file);
    std::set<std::pair<std::string, Lines>> roots;
    for (const auto& x : v)
      if (!x.consequence_of) roots.emplace(x.rule, x.lines);
    for (const auto& x : v) {
      if (!x.consequence_of) continue;
      EXPECT_EQ(roots.count({x.consequence_of->rule, x.consequence_of->lines}), 1u)
          << to_string(x) << describe(v);
    }
  }
}

}  // namespace
}  // namespace turnstile::oracle::testing
