// model/loop_inbox_model.cpp: Relacy model of sync_wait's private loop inbox:
// turnstile::detail::BasicLoopInbox<RelacySync, int>, the product's own
// template (impl/include/turnstile/detail/loop_inbox.hpp), the one
// PrivateLoop (impl/src/sync_wait.cpp) instantiates with StdSync and
// Runnable*.
//
// spec: [RT-6.1]
//   What the model checks of RT-6.1 (sync_wait(task) returns after every
//   fiber started on its loop has finished): the loop's thread, asleep in the
//   inbox between items, is woken by the post, the last finish or the poke it
//   waits for, and ends only once every fiber has finished.
// Invariants exercised: [INBOX-I1] (no lost wake-up: a loop that sleeps is
// woken by the post, the last fiber's finish or the poke it waits for; a lost
// one is a deadlock Relacy reports), [INBOX-I2] (a wake-up is made after the
// unlock and the inbox outlives it: a notify or a count on an inbox its loop
// deleted is a use of a destroyed condition variable or of freed memory),
// [INBOX-I3] (items in post order, each once).
//
// How the product is modelled:
//  - the loop's thread is T0: it takes until `done`, as PrivateLoop::run()
//    does (an item is recorded instead of run), then deletes the inbox, as
//    sync_wait's return destroys the loop;
//  - posters are carriers: they post items and finish fibers, as a fiber's
//    resumption and its last step do; nothing joins them (a carrier outlives
//    the loop), so their wake-ups may still be under way at the delete;
//  - a deadline makes the loop's waits timed: Relacy may time each one out at
//    any point, as a timer that falls due does, so the loop also ends between
//    a poster's decision to wake it and that wake-up;
//  - the window: in last-finish, the poster's notify is held (it yields) until
//    the loop announces its delete, or a bound of rounds passes (so a wake-up
//    the loop sleeps for is still made): a free scheduler puts the loop's
//    take, return and delete inside that window too rarely to find
//    (HeldNotifySync, model_held_notify.hpp).
// Not modelled: the timer queue (timer_queue.cpp; its wake-up window is held
// open by impl/tests/windows/timer_wake_window_test.cpp) and the items' runs.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/loop_inbox.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"
#include "model_held_notify.hpp"
#include "model_resume.hpp"

namespace {

using Sync = turnstile::RelacySync;
using Clock = std::chrono::steady_clock;

using Inbox = turnstile::detail::BasicLoopInbox<turnstile::model::HeldNotifySync, int>;
using Taken = Inbox::Taken;

// What the loop took, in order (the loop's thread only).
struct Taken3 {
  int items[3] = {0, 0, 0};
  int n = 0;
  void add(int v) {
    RL_ASSERT(n < 3);  // [INBOX-I3] no item taken twice
    items[n++] = v;
  }
};

// The loop's thread: takes until done, as PrivateLoop::run() does.
void run_loop(Inbox& inbox, Taken3& taken, bool timed) {
  const std::optional<Clock::time_point> deadline =
      timed ? std::optional<Clock::time_point>(Clock::time_point{}) : std::nullopt;
  for (;;) {
    int item = 0;
    const Taken t = inbox.take(item, deadline);
    if (t == Taken::done) return;
    if (t == Taken::item) taken.add(item);
  }
}

// last-finish: a carrier (T1) posts the fiber's last resumption and then
// finishes the fiber, as a fiber whose last step ran on the pool does; the
// loop (T0) waits with a deadline, takes the item, ends and deletes the inbox.
// The carrier also pokes it first (a timer armed from a carrier), racing the
// loop's timed-out waits. Checks [INBOX-I2]: the inbox is not deleted under a
// wake-up made after the unlock (held open: the poster's notifies wait for the
// delete); [INBOX-I1]: the loop ends; the item is taken once. (That a wake-up
// is made after the unlock is what the product does; the model checks its
// consequence for the inbox's lifetime, not the switches it saves.)
struct LastFinish : rl::test_suite<LastFinish, 2> {
  static constexpr const char* kChecks =
      "a carrier pokes, posts the last resumption and finishes the fiber while the loop waits "
      "with a deadline, its notifies held until the loop deletes the inbox: the destructor "
      "waits for them, the item is taken once, the loop ends";
  Inbox* inbox = nullptr;
  Sync::atomic<int> deleting{0};
  Taken3 taken;

  void before() {
    inbox = new Inbox;
    inbox->fiber_started();  // sync_wait's task, started before the loop runs
    turnstile::model::g_held_notify = {1, &deleting};
  }
  void thread(unsigned idx) {
    if (idx == 1) {
      inbox->poke();
      inbox->post(1);
      inbox->fiber_finished();
      return;  // nothing joins the carrier: its wake-ups may still be under way
    }
    run_loop(*inbox, taken, true);
    RL_ASSERT(taken.n == 1 && taken.items[0] == 1);
    deleting.store(1, std::memory_order_relaxed);  // the held notify may go now, or after
    delete inbox;  // [INBOX-I2] waits for a wake-up still being made
    inbox = nullptr;
  }
  void after() { turnstile::model::g_held_notify = {}; }
};

// two-posters: two carriers (T1, T2) each post and finish one of the loop's
// two fibers; the loop (T0) waits without a deadline, so only a wake-up ends
// each of its sleeps. Checks [INBOX-I1] (no lost wake-up: the loop ends),
// [INBOX-I3] (T1's two items in order, each of the three once) and
// [INBOX-I2] (the loop deletes the inbox as soon as it ends).
struct TwoPosters : rl::test_suite<TwoPosters, 3> {
  static constexpr const char* kChecks =
      "two carriers post and finish the loop's two fibers while it sleeps without a deadline: "
      "it is woken for each, takes every item once in post order, ends and deletes the inbox";
  Inbox* inbox = nullptr;
  Taken3 taken;

  void before() {
    inbox = new Inbox;
    inbox->fiber_started();
    inbox->fiber_started();
  }
  void thread(unsigned idx) {
    if (idx == 1) {
      inbox->post(10);
      inbox->post(11);
      inbox->fiber_finished();
      return;
    }
    if (idx == 2) {
      inbox->post(20);
      inbox->fiber_finished();
      return;
    }
    run_loop(*inbox, taken, false);
    RL_ASSERT(taken.n == 3);  // [INBOX-I3] every item, before `done`
    int at10 = -1, at11 = -1, at20 = -1;
    for (int i = 0; i < 3; ++i) {
      if (taken.items[i] == 10) at10 = i;
      if (taken.items[i] == 11) at11 = i;
      if (taken.items[i] == 20) at20 = i;
    }
    RL_ASSERT(at10 >= 0 && at11 > at10 && at20 >= 0);  // [INBOX-I3] post order
    delete inbox;  // [INBOX-I2]
    inbox = nullptr;
  }
};

// poke: the loop (T0) sleeps without a deadline with nothing queued; a timer
// armed on the loop from a carrier (T1) pokes it. Checks [INBOX-I1] for the
// poke: the sleeping loop is woken and its take returns `poked` (a lost poke
// is a deadlock: the carrier waits for the loop to have seen it). Then the
// carrier posts and finishes, and the loop, now with a deadline, ends.
struct Poke : rl::test_suite<Poke, 2> {
  static constexpr const char* kChecks =
      "a poke from a carrier wakes a loop asleep without a deadline, whose take returns poked; "
      "then a post and the last finish end it";
  Inbox* inbox = nullptr;
  turnstile::model::Resume saw_poke;
  Taken3 taken;

  void before() {
    inbox = new Inbox;
    inbox->fiber_started();
  }
  void thread(unsigned idx) {
    if (idx == 1) {
      inbox->poke();
      saw_poke.wait();
      inbox->post(1);
      inbox->fiber_finished();
      return;
    }
    int item = 0;
    RL_ASSERT(inbox->take(item, std::nullopt) == Taken::poked);  // [INBOX-I1]
    saw_poke.post();
    run_loop(*inbox, taken, true);
    RL_ASSERT(taken.n == 1 && taken.items[0] == 1);
    delete inbox;
    inbox = nullptr;
  }
};

}  // namespace

TURNSTILE_MODEL_MAIN("loop_inbox", {
    // Bound 2 ran 1.3 M executions (13 s) before the poke was added: the window's
    // held notifies multiply them.
    suite<LastFinish, "last-finish">({bounded(1), random_search(100000)}),
    suite<TwoPosters, "two-posters">({bounded(2), random_search(100000)}),
    suite<Poke, "poke">({bounded(2), random_search(100000)}),
})
