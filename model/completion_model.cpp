// model/completion_model.cpp: Relacy model of the completion word behind Event,
// Promise and the Scope join: turnstile::detail::BasicCompletion<RelacySync>, the
// product's own template (impl/include/turnstile/detail/completion_core.hpp).
//
// spec: [RT-4.1]
// spec: [RT-4.2]
//   RT-4.1: every published waiter is notified exactly once, in the order it was
//   published; a wait on a set latch passes at once (is_set / try_add_waiter false).
//   RT-4.2: what the completer wrote before set() is visible to every waiter, on
//   each path (notified, fast path, lost CAS race). The "never inline" half is the
//   product notify()'s post, outside this core: see model/README.md.
// Invariants exercised: [COMP-I1] [COMP-I2] [COMP-I3] [COMP-I4].
//
// Harness rules: every datum shared between model threads is a Sync::var (race-
// checked), an rl::atomic or guarded by an rl::mutex. A waiter's node is allocated
// on the waiting thread and freed there once it has been resumed, as the product's
// awaiter dies when its coroutine resumes: set() touching a node after notify()
// is then a use of freed memory. notify() "posts" the waiter like the product's
// CompletionAwaiter does (a mutex + condition variable stands in for the
// scheduler's queue); a waiter that is never notified blocks for ever, which
// Relacy reports as a deadlock.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/completion_core.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"
#include "model_resume.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Completion = turnstile::detail::BasicCompletion<Sync>;

constexpr int kPayload = 42;

using turnstile::model::Resume;  // model_resume.hpp

// Per-waiter bookkeeping that outlives the waiter's node (checked in after()).
struct WaiterRecord {
  Resume resume;
  Sync::atomic<int> notified{0};  // notify() calls; atomic: several setters may notify
  Sync::var<bool> registered;    // try_add_waiter returned true (waiting thread)
  Sync::var<int> position{-1};   // notification order (single-setter suites only)
  Sync::var<int> seen_in_notify{-1};  // payload as notify() saw it (setter's thread)
};

// Harness state every suite shares: the latch, the payload the completer writes,
// the notification order counter.
struct Harness {
  Completion latch;
  Sync::var<int> payload{0};
  Sync::var<int> next_position{0};
  WaiterRecord rec[3];
};

// A waiting node, as the product's CompletionAwaiter: allocated by the waiting
// thread, notified by the setter, freed by the waiting thread after resumption.
class TestWaiter final : public Completion::Waiter {
 public:
  TestWaiter(WaiterRecord& rec, Sync::var<int>* next_position, Sync::var<int>* payload)
      : rec_(rec), next_position_(next_position), payload_(payload) {}

  void notify() noexcept override {
    rec_.notified.fetch_add(1, std::memory_order_relaxed);
    if (next_position_ != nullptr) {  // single setter: plain bookkeeping is race-free
      const int pos = next_position_->load();
      next_position_->store(pos + 1);
      rec_.position.store(pos);
    }
    if (payload_ != nullptr) rec_.seen_in_notify.store(payload_->load());
    rec_.resume.post();  // [RT-4.2] posted, the waiter resumes on its own thread
  }

 private:
  WaiterRecord& rec_;
  Sync::var<int>* next_position_;
  Sync::var<int>* payload_;
};

// The waiting side of a fiber: publish a node; if the latch was already set,
// continue at once, else wait to be resumed. Then read what the setter wrote
// ([COMP-I4]) and free the node. Returns whether it waited.
bool wait_once(Harness& h, int i, bool check_payload, bool single_setter) {
  auto* w = new TestWaiter(h.rec[i], single_setter ? &h.next_position : nullptr,
                           check_payload ? &h.payload : nullptr);
  const bool waited = h.latch.try_add_waiter(w);
  h.rec[i].registered.store(waited);
  if (waited) h.rec[i].resume.wait();
  if (check_payload) RL_ASSERT(h.payload.load() == kPayload);  // data race here: [COMP-I4] broken
  delete w;  // the node dies when its fiber resumes: set() must be done with it
  return waited;
}

void check_exactly_once(Harness& h, int waiters) {
  for (int i = 0; i < waiters; ++i) {
    const int n = h.rec[i].notified.load(std::memory_order_relaxed);
    RL_ASSERT(n == (h.rec[i].registered.load() ? 1 : 0));  // [COMP-I3] exactly once
  }
}

// ---------------------------------------------------------------------------
// set-vs-wait: one setter, two waiters, one of which first polls is_set() (the
// awaiter's await_ready fast path).
struct SetVsWait : rl::test_suite<SetVsWait, 3> {
  static constexpr const char* kChecks =
      "one set() vs two waiters (one via is_set): each published waiter notified exactly once, "
      "node not touched after notify, setter's writes visible on every path";
  Harness h;

  void thread(unsigned idx) {
    if (idx == 0) {
      h.payload.store(kPayload);
      h.latch.set();
    } else if (idx == 1) {
      wait_once(h, 1, true, true);
    } else {
      if (h.latch.is_set()) {  // await_ready: passes at once, may read the payload
        RL_ASSERT(h.payload.load() == kPayload);  // data race here: [COMP-I4] broken
        h.rec[2].registered.store(false);
      } else {
        wait_once(h, 2, true, true);
      }
    }
  }

  void after() {
    check_exactly_once(h, 3);
    RL_ASSERT(h.latch.is_set());
    for (int i = 1; i < 3; ++i)
      if (h.rec[i].registered.load()) RL_ASSERT(h.rec[i].seen_in_notify.load() == kPayload);
  }
};

// ---------------------------------------------------------------------------
// fifo: thread 1 publishes node A then node B (two fibers on one carrier);
// thread 2 publishes C, after looking (acquire) whether A was already published.
// Notification order must follow publication order: A before B always, and A
// before C when C's thread saw A published first [COMP-I3].
struct Fifo : rl::test_suite<Fifo, 3> {
  static constexpr const char* kChecks =
      "three waiters (two from one thread): notified exactly once, in publication order";
  Harness h;
  Sync::atomic<int> a_published{0};
  Sync::var<int> c_saw_a{0};

  void thread(unsigned idx) {
    if (idx == 0) {
      h.payload.store(kPayload);
      h.latch.set();
    } else if (idx == 1) {
      auto* a = new TestWaiter(h.rec[0], &h.next_position, nullptr);
      auto* b = new TestWaiter(h.rec[1], &h.next_position, nullptr);
      const bool wa = h.latch.try_add_waiter(a);
      h.rec[0].registered.store(wa);
      if (wa) a_published.store(1, std::memory_order_release);
      const bool wb = h.latch.try_add_waiter(b);
      h.rec[1].registered.store(wb);
      RL_ASSERT(wa || !wb);  // a set latch stays set: no wait after a pass
      if (wa) h.rec[0].resume.wait();
      if (wb) h.rec[1].resume.wait();
      RL_ASSERT(h.payload.load() == kPayload);
      delete a;
      delete b;
    } else {
      c_saw_a.store(a_published.load(std::memory_order_acquire));
      wait_once(h, 2, true, true);
    }
  }

  void after() {
    check_exactly_once(h, 3);
    const bool wa = h.rec[0].registered.load(), wb = h.rec[1].registered.load(),
               wc = h.rec[2].registered.load();
    if (wa && wb) RL_ASSERT(h.rec[0].position.load() < h.rec[1].position.load());
    if (wa && wc && c_saw_a.load() == 1) RL_ASSERT(h.rec[0].position.load() < h.rec[2].position.load());
  }
};

// ---------------------------------------------------------------------------
// event-reset: Event-style use. Thread 0 sets, resets and sets again; thread 1
// sets concurrently (setting a set latch does nothing); thread 2 waits once.
// The waiter is notified exactly once whichever set() takes it; reset() of a
// latch this thread set (and only it resets) succeeds; the latch ends set.
struct EventReset : rl::test_suite<EventReset, 3> {
  static constexpr const char* kChecks =
      "set/reset/set vs a concurrent set vs one waiter: exactly-once, reset succeeds, ends set";
  Harness h;

  void thread(unsigned idx) {
    if (idx == 0) {
      h.latch.set();
      RL_ASSERT(h.latch.reset());
      h.latch.set();
    } else if (idx == 1) {
      h.latch.set();
    } else {
      wait_once(h, 2, false, false);
    }
  }

  void after() {
    check_exactly_once(h, 3);
    RL_ASSERT(h.latch.is_set());
  }
};

}  // namespace

TURNSTILE_MODEL_MAIN("completion", {
    suite<SetVsWait, "set-vs-wait">({bounded(4), random_search(200000)}),
    suite<Fifo, "fifo">({bounded(2), random_search(200000)}),
    suite<EventReset, "event-reset">({full_search(), random_search(200000)}),
})
