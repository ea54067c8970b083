// model/lane_model.cpp: Relacy model of the state lane's queue and state word:
// turnstile::detail::BasicLaneCore<RelacySync>, the product's own template
// (impl/include/turnstile/detail/lane_core.hpp), the core behind StateLane.
//
// spec: [LANE-5.1]
// spec: [LANE-5.2]
// spec: [LANE-5.6]
// spec: [LANE-7.6]
//   LANE-5.1: at most one turn runs at a time, whatever the number of submitters.
//   LANE-5.2: a submission that happens-before another runs first; each accepted
//   item runs exactly once.
//   LANE-5.6: an item completes (its awaiter resumes) only after the turn's marker
//   is released.
//   LANE-7.6: close() stops accepting, every accepted item runs, then drained is
//   reported, exactly once; a lane whose close() completed, or whose accepted
//   items all completed, may be destroyed.
// Invariants exercised: [LANE-I1]..[LANE-I7]. The drain takes the whole queue
// at once [LANE-I7]; with budgets of 1 to 3 and up to three items queued, a
// batch longer than the step's budget is put back at the front (mutant
// LANE_BATCH_REST_BEHIND puts it behind: submitters catches it).
//
// How the product is modelled:
//  - A submission that returns accepted_start_drain posts a drain
//    (StateLane::start_drain); the Drainer calls core.drain(marker, 64) and posts
//    itself again on Drain::more. Here the posted drain runs later on the
//    submitting thread: each thread keeps a count of drains posted to it and runs
//    them (drain(marker, budget), again on more) when it reaches its scheduling
//    point, exactly as a carrier that runs its posted work after the current step.
//    The budget is 1 or 2 so that Drain::more and the repost are exercised.
//  - The marker (the product's LaneTurnMarker, an ambient FiberLocal binding of
//    the drain's fiber) is a per-model-thread Sync::var: enter() sets it to the item,
//    exit() clears it. Each slot is touched only by its own thread.
//  - Items are heap objects, as the product's are (LaneRun lives in a shared_ptr,
//    PostItem deletes itself in complete()). In `submitters` complete() posts the
//    item's owner thread (a mutex + condition variable stand in for the awaiter's
//    scheduler, as in completion_model.cpp), which frees the item when it resumes;
//    in the other suites complete() deletes the item, like PostItem. A drain that
//    touched an item after complete() is a use of freed memory.
//  - The turn's body touches the lane-owned state (a Sync::var) with no other
//    synchronisation: the lane alone must make it race-free [LANE-5.4]; an
//    rl::atomic in-turn count checks mutual exclusion directly.
//
// Harness data shared between model threads is a Sync::var, an rl::atomic or
// guarded by an rl::mutex. The `pending` drain counts are plain ints, each touched
// by its own thread only.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/lane_core.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"
#include "model_resume.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Core = turnstile::detail::BasicLaneCore<Sync>;
using Item = Core::Item;
using Submit = Core::Submit;
using Drain = Core::Drain;

constexpr int kThreads = 3;
constexpr int kMaxItems = 7;
constexpr int kStoredMark = 100;  // the marker of a recycled-storage item's turn

using turnstile::model::Resume;  // model_resume.hpp

// Per-item bookkeeping that outlives the item (checked in after()).
struct ItemRecord {
  Resume resume;                     // submitters: complete() posts the owner
  Sync::var<int> runs{0};            // turns of this item (written in its turn)
  Sync::var<int> position{-1};       // run order (written in its turn)
  Sync::atomic<int> completions{0};  // complete() calls
  Sync::var<bool> accepted;          // submit() did not refuse it (owner thread)
};

// The lane and everything the harness shares about it.
struct Lane {
  Core* core = nullptr;
  Sync::atomic<int> in_turn{0};        // turns running now [LANE-5.1]
  Sync::var<int> next_position{0};     // the lane-owned state: plain, guarded by the lane only
  Sync::var<int> marker[kThreads];     // per model thread: 1 + id of the item whose turn runs there
  int pending[kThreads] = {};          // drains posted to each thread (own thread only)
  Core::Spare** slots = nullptr;       // recycled-storage: each thread's spare slot (own thread)
  int destroy_after = 0;               // completion-handoff: completions before the lane goes
  Sync::atomic<int> completed{0};      // completions so far (completion-handoff)
  ItemRecord rec[kMaxItems];
};

class TestItem;

// The product's LaneTurnMarker (state_lane.cpp): installed around each turn,
// released before the item completes [LANE-I5].
class Marker {
 public:
  explicit Marker(Lane& lane) : lane_(lane), self_(rl::thread_index()) {}
  void enter(Item* item);
  void exit() { lane_.marker[self_].store(0); }

 private:
  Lane& lane_;
  unsigned self_;
};

// An item of the lane. run_turn() is the turn; complete() is where the product
// resumes the awaiter (LaneRun) or frees the item (PostItem).
class TestItem : public Item {
 public:
  TestItem(Lane& lane, int id) : lane_(lane), id_(id) {}
  int id() const noexcept { return id_; }

  void run_turn() noexcept override {
    const unsigned self = rl::thread_index();
    RL_ASSERT(lane_.marker[self].load() == id_ + 1);  // the turn runs with its marker held
    const int others = lane_.in_turn.fetch_add(1, std::memory_order_relaxed);
    RL_ASSERT(others == 0);  // [LANE-5.1] one turn at a time
    ItemRecord& r = lane_.rec[id_];
    r.runs.store(r.runs.load() + 1);
    const int pos = lane_.next_position.load();  // lane-owned plain state: a race if turns overlap
    lane_.next_position.store(pos + 1);
    r.position.store(pos);
    lane_.in_turn.fetch_sub(1, std::memory_order_relaxed);
  }

  Core::Spare* complete() noexcept override {
    Lane& lane = lane_;  // resumed() may free this item
    // [LANE-5.6] whatever resumes from here (even inline, on this thread) finds
    // no turn of this lane in progress: it could enter the lane without a
    // reentrancy error.
    RL_ASSERT(lane.marker[rl::thread_index()].load() == 0);
    lane.rec[id_].completions.fetch_add(1, std::memory_order_relaxed);
    resumed();
    // completion-handoff: the continuation that completes last destroys the
    // lane at once, inline, while the drain that completed it is still on the
    // stack [LANE-7.6].
    if (lane.destroy_after != 0 &&
        lane.completed.fetch_add(1, std::memory_order_acq_rel) == lane.destroy_after - 1) {
      RL_ASSERT(lane.core->is_idle());  // ~StateLane would abort otherwise
      delete lane.core;
    }
    return nullptr;
  }

 protected:
  virtual void resumed() noexcept = 0;
  ~TestItem() = default;

  Lane& lane_;
  const int id_;
};

void Marker::enter(Item* item) {
  RL_ASSERT(lane_.marker[self_].load() == 0);  // turns do not nest
  const auto* tested = dynamic_cast<const TestItem*>(item);  // else a StoredItem
  lane_.marker[self_].store(tested != nullptr ? tested->id() + 1 : kStoredMark);
}

// LaneRun-like: complete() posts the awaiter; its owner frees the item once resumed.
class AwaitedItem final : public TestItem {
 public:
  using TestItem::TestItem;
  ~AwaitedItem() = default;

 private:
  void resumed() noexcept override { lane_.rec[id_].resume.post(); }
};

// PostItem-like: complete() frees the item.
class PostedItem final : public TestItem {
 public:
  using TestItem::TestItem;

 private:
  void resumed() noexcept override { delete this; }
};

// Submits `item` as StateLane::submit does: on accepted_start_drain, a drain is
// posted to this thread. Returns whether the item was accepted.
bool submit(Lane& lane, Item* item, int id, Core::Spare** refill = nullptr) {
  const Submit s = lane.core->submit(item, refill);
  lane.rec[id].accepted.store(s != Submit::refused_closed);
  if (s == Submit::accepted_start_drain) ++lane.pending[rl::thread_index()];
  return s != Submit::refused_closed;
}

// Runs the drains posted to this thread, as StateLane::Drainer::run does: one
// drain step of `budget` turns, posted again on Drain::more. `on_drained` is the
// product's `drained_.set()` [LANE-7.6].
template <class OnDrained>
void run_posted_drains(Lane& lane, std::size_t budget, OnDrained on_drained) {
  int& pending = lane.pending[rl::thread_index()];
  while (pending > 0) {
    --pending;
    Marker marker(lane);
    // recycled-storage: a step's last storage goes to this thread's slot [LANE-I6]
    Core::Spare** leftover = lane.slots != nullptr ? &lane.slots[rl::thread_index()] : nullptr;
    switch (lane.core->drain(marker, budget, leftover)) {
      case Drain::more: ++pending; break;  // budget used: repost
      case Drain::idle: break;             // the lane may be destroyed from here on
      case Drain::drained: on_drained(); break;
    }
  }
}

void run_posted_drains(Lane& lane, std::size_t budget) {
  run_posted_drains(lane, budget, [] { RL_ASSERT(!"drained reported on a lane nobody closed"); });
}

// ---------------------------------------------------------------------------
// submitters: three submitters, five items, no close.
//  thread 0: submits A0, publishes "A0 submitted" (release), submits A1, then
//            runs the drains posted to it (budget 1);
//  thread 1: looks (acquire) whether A0 was submitted, submits B0, runs its
//            drains at once (budget 2);
//  thread 2: submits C0, runs its drains, submits C1, runs its drains (budget 1).
// A submitter's fiber resumes, after awaiting its run(), wherever its scheduler
// runs it, not necessarily on the carrier that drained the lane: here the
// awaiters of thread i's items resume on thread (i+1) % 3, after that thread's
// own submissions and drains. Each resumed awaiter frees its item, possibly while
// the drain that completed it goes on with the next item on another thread. The
// awaiter that resumes last (all five items completed, nothing queued) destroys
// the lane, as a program that awaited its last run() may [LANE-7.6]. (Every
// thread resumes its awaiters after its own drains, so here all drains have
// returned by then; completion-handoff destroys the lane while the last drain is
// still returning.)
// Checks: one turn at a time, the lane-owned plain state is race-free [LANE-5.1];
// A0 before A1, C0 before C1, A0 before B0 when thread 1 saw A0 submitted
// [LANE-5.2]; every item runs and completes exactly once; no turn's marker is seen
// at complete() [LANE-5.6]; the lane is idle when the last awaiter resumes, and no
// drain touches the lane or an item after completing it (use of freed memory
// otherwise).
struct Submitters : rl::test_suite<Submitters, kThreads> {
  static constexpr const char* kChecks =
      "3 submitters, 5 items, drains posted to the submitters (budget 1-2), awaiters resumed on "
      "another thread: one turn at a time, FIFO per submitter and across a happens-before, each "
      "item runs and completes once, lane idle and destroyable after the last awaiter resumes";
  static constexpr int kItems = 5;
  Lane lane;
  Sync::atomic<int> a0_submitted{0};
  Sync::var<int> b0_saw_a0{0};
  Sync::atomic<int> resumed{0};
  // Each item, handed to the thread its awaiter resumes on: written by the
  // submitter before the submission, read after the resumption it causes.
  Sync::var<AwaitedItem*> item_of[kItems];

  void before() { lane.core = new Core; }

  // The awaiter of `item` resumes on this thread: it frees its item; the last
  // one destroys the lane.
  void resume_awaiter(int id) {
    lane.rec[id].resume.wait();
    delete item_of[id].load();  // the awaiter's frame dies when it resumes
    if (resumed.fetch_add(1, std::memory_order_acq_rel) == kItems - 1) {
      RL_ASSERT(lane.core->is_idle());  // ~StateLane would abort otherwise [LANE-7.6]
      delete lane.core;                 // awaiting the last run() is enough to destroy it
    }
  }

  AwaitedItem* make(int id) {
    auto* item = new AwaitedItem(lane, id);
    item_of[id].store(item);
    return item;
  }

  void thread(unsigned idx) {
    if (idx == 0) {
      AwaitedItem* a0 = make(0);
      AwaitedItem* a1 = make(1);
      const bool ok0 = submit(lane, a0, 0);
      a0_submitted.store(1, std::memory_order_release);
      const bool ok1 = submit(lane, a1, 1);
      RL_ASSERT(ok0 && ok1);  // no close: always accepted
      run_posted_drains(lane, 1);
    } else if (idx == 1) {
      AwaitedItem* b0 = make(2);
      b0_saw_a0.store(a0_submitted.load(std::memory_order_acquire));
      const bool ok = submit(lane, b0, 2);
      RL_ASSERT(ok);
      run_posted_drains(lane, 2);
    } else {
      AwaitedItem* c0 = make(3);
      AwaitedItem* c1 = make(4);
      const bool ok0 = submit(lane, c0, 3);
      run_posted_drains(lane, 1);
      const bool ok1 = submit(lane, c1, 4);
      run_posted_drains(lane, 1);
      RL_ASSERT(ok0 && ok1);
    }
    // The awaiters that resume on this thread: thread 0 hosts C0 and C1 (ids 3,
    // 4), thread 1 hosts A0 and A1 (0, 1), thread 2 hosts B0 (2).
    static constexpr int kHosted[kThreads][2] = {{3, 4}, {0, 1}, {2, -1}};
    for (int id : kHosted[idx])
      if (id >= 0) resume_awaiter(id);
  }

  void after() {
    RL_ASSERT(resumed.load(std::memory_order_relaxed) == kItems);
    for (int i = 0; i < kItems; ++i) {
      RL_ASSERT(lane.rec[i].runs.load() == 1);  // no item lost, none run twice
      RL_ASSERT(lane.rec[i].completions.load(std::memory_order_relaxed) == 1);
    }
    RL_ASSERT(lane.next_position.load() == kItems);
    const auto pos = [&](int i) { return lane.rec[i].position.load(); };
    RL_ASSERT(pos(0) < pos(1));                         // [LANE-5.2] same submitter
    RL_ASSERT(pos(3) < pos(4));
    if (b0_saw_a0.load() == 1) RL_ASSERT(pos(0) < pos(2));  // [LANE-5.2] happens-before
    for (int t = 0; t < kThreads; ++t) RL_ASSERT(lane.pending[t] == 0);
  }
};

// ---------------------------------------------------------------------------
// close-vs-submit: close() racing submissions.
//  thread 0: submits A0 and A1 (either may be refused), then runs its drains
//            (budget 1);
//  thread 1: submits B0, closes, then runs its drains (budget 2) and waits for
//            close() to complete;
//  thread 2: closes (concurrently with thread 1's close: only the first reports),
//            then submits C0, which must be refused [LANE-7.4], then waits for
//            close() to complete; it then destroys the lane if threads 0 and 1 are
//            done calling it, as a program whose close() completed may.
// "close() completes" is the product's drained_.set(): by close() itself when it
// finds the lane idle, or by the drain that returns Drain::drained.
// Checks: every accepted item runs exactly once and every refused one never
// does; a submission after a refusal on the same thread is refused too; drained
// is reported exactly once, and when it is, every accepted item has already run
// (the run count read by the reporter is race-checked and compared with the
// number accepted); nothing touches the lane after close() completed (use of
// freed memory otherwise); the lane ends idle and closed.
struct CloseVsSubmit : rl::test_suite<CloseVsSubmit, kThreads> {
  static constexpr const char* kChecks =
      "two close() racing three submissions: accepted items run once, refused never, refusal "
      "after close, drained reported once after the last accepted turn, lane destroyable then";
  Lane lane;
  Sync::atomic<int> drained_reports{0};
  Sync::var<int> runs_at_drained{-1};
  Sync::mutex drained_mu;
  rl::condition_variable drained_cv;
  Sync::var<bool> drained{false};
  Sync::atomic<int> t0_done{0}, t1_done{0};
  Sync::var<bool> lane_destroyed{false};  // written by thread 2, read in after()

  void before() { lane.core = new Core; }

  // The product's drained_.set(): the awaiters of close() resume.
  void report_drained() {
    const int before = drained_reports.fetch_add(1, std::memory_order_relaxed);
    RL_ASSERT(before == 0);  // [LANE-I4] exactly once
    runs_at_drained.store(lane.next_position.load());  // every accepted turn has run
    drained_mu.lock();
    drained.store(true);
    drained_cv.notify_all($);
    drained_mu.unlock();
  }

  void await_close() {
    drained_mu.lock();
    while (!drained.load()) drained_cv.wait(drained_mu.native(), $);
    drained_mu.unlock();
  }

  PostedItem* make(int id) { return new PostedItem(lane, id); }

  // Submits; a refused item was never linked, so its owner frees it.
  bool submit_or_free(int id) {
    PostedItem* item = make(id);
    const bool ok = submit(lane, item, id);
    if (!ok) delete item;
    return ok;
  }

  void thread(unsigned idx) {
    const auto on_drained = [this] { report_drained(); };
    if (idx == 0) {
      const bool a0 = submit_or_free(0);
      const bool a1 = submit_or_free(1);
      RL_ASSERT(a0 || !a1);  // closed stays closed
      t0_done.store(1, std::memory_order_release);
      run_posted_drains(lane, 1, on_drained);
    } else if (idx == 1) {
      submit_or_free(2);
      if (lane.core->close()) report_drained();
      t1_done.store(1, std::memory_order_release);
      run_posted_drains(lane, 2, on_drained);
      await_close();
    } else {
      if (lane.core->close()) report_drained();
      const bool accepted_after_close = submit_or_free(3);
      RL_ASSERT(!accepted_after_close);  // [LANE-7.4] refused at once after close
      run_posted_drains(lane, 1, on_drained);  // none in the product: nothing was accepted
      await_close();
      RL_ASSERT(lane.core->is_closed());
      if (t0_done.load(std::memory_order_acquire) == 1 && t1_done.load(std::memory_order_acquire) == 1) {
        // Threads 0 and 1 call the lane no more (their drains may still be
        // returning): close() has completed, so the lane may go [LANE-7.6].
        RL_ASSERT(lane.core->is_idle());
        delete lane.core;
        lane_destroyed.store(true);
      }
    }
  }

  void after() {
    int accepted = 0;
    for (int i = 0; i < 4; ++i) {
      const bool acc = lane.rec[i].accepted.load();
      accepted += acc ? 1 : 0;
      RL_ASSERT(lane.rec[i].runs.load() == (acc ? 1 : 0));  // accepted: ran once; refused: never
      RL_ASSERT(lane.rec[i].completions.load(std::memory_order_relaxed) == (acc ? 1 : 0));
    }
    if (lane.rec[0].accepted.load() && lane.rec[1].accepted.load())
      RL_ASSERT(lane.rec[0].position.load() < lane.rec[1].position.load());  // [LANE-5.2]
    RL_ASSERT(drained_reports.load(std::memory_order_relaxed) == 1);
    RL_ASSERT(runs_at_drained.load() == accepted);  // drained after the last accepted item ran
    if (!lane_destroyed.load()) {
      RL_ASSERT(lane.core->is_idle());
      RL_ASSERT(lane.core->is_closed());
      delete lane.core;
    }
  }
};

// ---------------------------------------------------------------------------
// completion-handoff: each item's complete() stands for its continuation
// resuming, modelled at its worst: inline, on the draining thread, at once. It
// must find the marker released [LANE-5.6]; it then enters the lane again (for
// items 0 and 1): a follow-up submission, as an awaiter that resumes and calls
// run() again, which queues behind (or posts a new drain if the lane went idle).
//  thread 0: submits X0 (continuation submits X1), runs its drains (budget 1);
//  thread 1: submits Y0 (continuation submits Y1), runs its drains (budget 2);
//  thread 2: submits Z0, runs its drains (budget 1).
// Items free themselves in complete() (PostItem), so a drain that touched an
// item after completing it is a use of freed memory. The continuation that
// completes the fifth and last item (follow-ups included; each follow-up is
// submitted before its parent counts as completed, so then nothing is queued)
// destroys the lane at once, inline, as a program that awaited its last run()
// may [LANE-7.6]: that is the earliest point another carrier could destroy it
// while the drain that completed the item is still returning, so any later
// access by the drain to the lane (a pop after the last completion, a repost) is
// a use of freed memory.
// Checks: no continuation observes a marker; every item, follow-ups included,
// runs and completes exactly once, one turn at a time; a follow-up runs after the
// item whose continuation submitted it; the lane is idle when the last item
// completes, and no drain touches it afterwards; no drain is left pending.
class FollowUpItem;

struct CompletionHandoff : rl::test_suite<CompletionHandoff, kThreads> {
  static constexpr const char* kChecks =
      "continuations run inline at complete() and re-enter the lane: never see a marker, "
      "follow-ups queue behind, every item runs once; the last one destroys the lane at once "
      "and the drain never touches it again";
  Lane lane;
  void before() {
    lane.core = new Core;
    lane.destroy_after = 5;
  }
  void thread(unsigned idx);
  void after() {
    for (int i = 0; i < 5; ++i) {
      RL_ASSERT(lane.rec[i].runs.load() == 1);
      RL_ASSERT(lane.rec[i].completions.load(std::memory_order_relaxed) == 1);
    }
    RL_ASSERT(lane.rec[0].position.load() < lane.rec[3].position.load());
    RL_ASSERT(lane.rec[1].position.load() < lane.rec[4].position.load());
    for (int t = 0; t < kThreads; ++t) {
      RL_ASSERT(lane.marker[t].load() == 0);
      RL_ASSERT(lane.pending[t] == 0);
    }
    RL_ASSERT(lane.completed.load(std::memory_order_relaxed) == 5);  // and the lane was destroyed
  }
};

// An item whose continuation (complete(), after the marker check) enters the
// lane again with a follow-up item, then frees itself.
class FollowUpItem final : public TestItem {
 public:
  FollowUpItem(Lane& lane, int id, int follow_up) : TestItem(lane, id), follow_up_(follow_up) {}

 private:
  void resumed() noexcept override {
    if (follow_up_ >= 0) {
      // The product would throw LaneReentrancyError here if the marker were
      // still installed; the check above (marker clear) is that condition.
      const bool ok = submit(lane_, new PostedItem(lane_, follow_up_), follow_up_);
      RL_ASSERT(ok);
    }
    delete this;
  }
  const int follow_up_;
};

void CompletionHandoff::thread(unsigned idx) {
  static constexpr int kFollowUp[kThreads] = {3, 4, -1};
  static constexpr std::size_t kBudget[kThreads] = {1, 2, 1};
  const int id = static_cast<int>(idx);
  const bool ok = submit(lane, new FollowUpItem(lane, id, kFollowUp[idx]), id);
  RL_ASSERT(ok);  // no close: always accepted
  run_posted_drains(lane, kBudget[idx]);
}

// ---------------------------------------------------------------------------
// recycled-storage: items built in spares and their storage recycled, as
// try_post's PostItem is [LANE-I6].
// Each thread owns a chain of spares (the product's thread_local SpareSlot; a
// plain pointer, touched by its own thread only). It builds each item in its
// chain's first spare when it has one, else in new storage (Core::kSpareBytes
// from ::operator new), and, when its chain is then empty, submits with it as
// the refill (the lane's whole list), as StateLane::submit does. complete()
// destroys the item and returns its storage as a spare; the drain keeps it on
// the lane's list when it goes on with a next item (else puts it in the
// draining thread's chain when empty, or frees it), and a later submission
// takes the list back.
//  thread 0: submits R0, R1, R2, then runs its drains (budget 3);
//  thread 1: submits S0, runs its drains (budget 2), submits S1 (in a spare
//            its first submission or its drain left it, if any), runs its drains;
//  thread 2: submits T0, then T1 (likewise), then runs its drains (budget 2).
// At the end each thread frees its chain and the lane is destroyed with
// the spares still on its list (~BasicLaneCore frees them).
// Checks: every item runs and completes exactly once, one turn at a time, FIFO
// per submitter; the item's id lives in its storage as a Sync::var, written when
// the item is built and read by its turn: a spare handed to a submitter while
// it is still on the list, or while its item is linked or running, is built
// over (a race on that id, an item run twice and another never, or a queue
// that loops); no storage leaks and none is freed twice (Relacy's heap checks).
class StoredItem;

//
// recycled-through-depot: the same with the lane's list bounded at 1 spare and
// a depot of at most 2 spares in 2 chains (spare_depot.hpp), so a drain gives
// what its list has no room for to the depot, and a submitter whose chain is
// empty takes a chain from the depot before it allocates, as the product's
// take_item_storage() does; the lane, destroyed, gives its list to the depot.
// Checks, as above, that no storage is on the list, in the depot, or in a
// chain at once, or built over while its item is linked or running.
template <bool kThroughDepot>
struct RecycledStorage : rl::test_suite<RecycledStorage<kThroughDepot>, kThreads> {
  static constexpr const char* kChecks =
      kThroughDepot
          ? "items built in recycled spares, the lane's list bounded at 1 and the rest through "
            "a depot of 2: each runs once, FIFO per submitter, no spare on the list, in the "
            "depot or in a chain twice, no leak, no double free"
          : "items built in recycled spares (the drain keeps a completed item's storage, a later "
            "submission takes it back): each runs once, FIFO per submitter, no spare handed out "
            "while on the list or while its item is linked, no leak, no double free";
  Lane lane;
  Core::Spare* slot[kThreads] = {};  // each thread's own chain of spares (own thread only)
  Sync::atomic<int> from_spare{0};   // items built in a recycled spare (statistics only)
  Core::SpareDepot* depot = nullptr;  // recycled-through-depot only

  void before() {
    if (kThroughDepot) {
      depot = new Core::SpareDepot(2, 2);
      lane.core = new Core(depot, 1);
    } else {
      lane.core = new Core;
    }
    lane.slots = slot;
  }
  void thread(unsigned idx);
  void submit_stored(int id);
  void after() {
    for (int i = 0; i < 7; ++i) {
      RL_ASSERT(lane.rec[i].runs.load() == 1);
      RL_ASSERT(lane.rec[i].completions.load(std::memory_order_relaxed) == 1);
    }
    const auto pos = [&](int i) { return lane.rec[i].position.load(); };
    RL_ASSERT(pos(0) < pos(1) && pos(1) < pos(2));  // [LANE-5.2]
    RL_ASSERT(pos(3) < pos(4));
    RL_ASSERT(pos(5) < pos(6));
    for (int t = 0; t < kThreads; ++t) RL_ASSERT(lane.pending[t] == 0);
    RL_ASSERT(lane.core->is_idle());
    delete lane.core;  // frees the spares left on its list, or gives them to the depot
    if (depot != nullptr) {
      RL_ASSERT(depot->spares() <= 2);  // [DEPOT-I2]
      delete depot;  // frees what it keeps
    }
  }
};

// PostItem-like, built in a spare's storage: complete() hands the storage back.
class StoredItem final : public Item {
 public:
  StoredItem(Lane& lane, int id) : lane_(lane), id_(id) {}

  void run_turn() noexcept override {
    const int id = id_.load();  // races with a submitter building over this item
    const unsigned self = rl::thread_index();
    RL_ASSERT(lane_.marker[self].load() == kStoredMark);
    const int others = lane_.in_turn.fetch_add(1, std::memory_order_relaxed);
    RL_ASSERT(others == 0);  // [LANE-5.1]
    ItemRecord& r = lane_.rec[id];
    r.runs.store(r.runs.load() + 1);
    const int pos = lane_.next_position.load();
    lane_.next_position.store(pos + 1);
    r.position.store(pos);
    lane_.in_turn.fetch_sub(1, std::memory_order_relaxed);
  }

  Core::Spare* complete() noexcept override {
    RL_ASSERT(lane_.marker[rl::thread_index()].load() == 0);  // [LANE-5.6]
    lane_.rec[id_.load()].completions.fetch_add(1, std::memory_order_relaxed);
    void* storage = this;
    this->~StoredItem();
    return Core::make_spare(storage);  // [LANE-I6] kept by the drain, or freed
  }

 private:
  Lane& lane_;
  Sync::var<int> id_;
};

#pragma push_macro("new")
#undef new
template <bool kThroughDepot>
void RecycledStorage<kThroughDepot>::submit_stored(int id) {
  Core::Spare*& mine = slot[rl::thread_index()];
  void* storage = nullptr;
  if (mine != nullptr) {
    storage = Core::take_storage(mine);
    from_spare.fetch_add(1, std::memory_order_relaxed);
  } else {
    storage = ::operator new(Core::kSpareBytes);
  }
  static_assert(sizeof(StoredItem) <= Core::kSpareBytes);
  auto* item = ::new (storage) StoredItem(lane, id);
  // The product's spare_slot_if_empty(): the whole list, into an empty chain;
  // then, when the lane had none, refill_from_depot_if_empty(): a depot chain.
  const bool refill = mine == nullptr;
  const bool ok = submit(lane, item, id, refill ? &mine : nullptr);
  RL_ASSERT(ok);  // no close: always accepted
  if (refill && mine == nullptr && depot != nullptr) mine = depot->take();
}
#pragma pop_macro("new")

template <bool kThroughDepot>
void RecycledStorage<kThroughDepot>::thread(unsigned idx) {
  if (idx == 0) {
    submit_stored(0);
    submit_stored(1);
    submit_stored(2);
    run_posted_drains(lane, 3);
  } else if (idx == 1) {
    submit_stored(3);
    run_posted_drains(lane, 2);
    submit_stored(4);
    run_posted_drains(lane, 2);
  } else {
    submit_stored(5);
    submit_stored(6);
    run_posted_drains(lane, 2);
  }
  Core::release_all(slot[idx]);  // the thread's chain, freed at its exit
}

}  // namespace

TURNSTILE_MODEL_MAIN("lane", {
    suite<Submitters, "submitters">({bounded(1), random_search(200000)}),
    suite<CloseVsSubmit, "close-vs-submit">({bounded(2), random_search(200000)}),
    suite<CompletionHandoff, "completion-handoff">({bounded(2), random_search(200000)}),
    suite<RecycledStorage<false>, "recycled-storage">({bounded(1), random_search(200000)}),
    suite<RecycledStorage<true>, "recycled-through-depot">({bounded(1), random_search(200000)}),
})
