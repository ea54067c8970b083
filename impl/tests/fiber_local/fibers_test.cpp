// FiberLocal / FiberContext on fibers: Task bodies across suspensions and
// carriers, per-fiber slots, sync_wait, structured inheritance, detach and
// Channel handoffs, explicit capture/run, snapshots shared and held.
//
// Interleavings are chosen with a ManualScheduler (detach + run_next(i), every
// schedule of the first steps explored by bit masks) or come from real
// ThreadPools with resume_on. No test sleeps.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "fl_support.hpp"

namespace {

using namespace turnstile;
using namespace fl_test;

// Suites whose tests count Tracked values (none may be left alive).
using FiberLocalSpawnFrames = TrackedLeakCheck;
using FiberContextOnFibers = TrackedLeakCheck;

const std::string kUnbound = "<unbound>";

// ------------------------------------------------------------------ Task bodies

Task<> task_body_probe(std::vector<std::string>* log) {
  Task<int> t = number.where(5, [log]() -> Task<int> {
    log->push_back("start " + std::to_string(number.get()));
    co_await yield();
    log->push_back("after yield " + std::to_string(number.get()));
    co_await number.where(6, [log]() -> Task<> {
      co_await yield();
      log->push_back("shadowed " + std::to_string(number.get()));
    });
    log->push_back("unshadowed " + std::to_string(number.get()));
    co_return number.get() * 2;
  });
  // Lazy: making the Task pushed nothing.
  log->push_back(number.is_bound() ? "bound before await" : "unbound before await");
  const int r = co_await std::move(t);
  log->push_back("result " + std::to_string(r) + (number.is_bound() ? " bound" : " unbound"));
}

// spec: [FL-4.7] [FL-3.1]
TEST(FiberLocalTaskBody, WhereReturnsTaskBoundFromStartToFinishAcrossYields) {
  static_assert(
      std::is_same_v<decltype(number.where(1, []() -> Task<int> { co_return 1; })), Task<int>>);
  static_assert(std::is_same_v<decltype(number.where(1, []() -> Task<> { co_return; })), Task<>>);
  static_assert(std::is_same_v<decltype(FiberContext{}.run(
                                   []() -> Task<std::string> { co_return std::string(); })),
                               Task<std::string>>);

  ManualScheduler s;
  std::vector<std::string> log;
  // The driving thread has a binding of its own; the fiber's never shows here.
  number.where(100, [&] {
    detach(s, task_body_probe(&log));
    while (s.ready() > 0) {
      s.run_next(0);
      EXPECT_EQ(number.get(), 100) << "after step " << s.steps();
    }
  });
  const std::vector<std::string> expected = {
      "unbound before await", "start 5",      "after yield 5",
      "shadowed 6",           "unshadowed 5", "result 10 unbound",
  };
  EXPECT_EQ(log, expected);
}

struct Hop {
  bool on_a;
  bool on_b;
  std::string seen;
};

Task<> hopper(std::string name, ThreadPool* a, ThreadPool* b, std::vector<Hop>* hops) {
  co_await who.where(name, [&]() -> Task<> {
    for (int i = 0; i < 6; ++i) {
      co_await resume_on(i % 2 == 0 ? *b : *a);
      hops->push_back({a->on_carrier(), b->on_carrier(), who.get()});
      co_await yield();
      hops->push_back({a->on_carrier(), b->on_carrier(), who.get()});
    }
  });
  hops->push_back({a->on_carrier(), b->on_carrier(), who.or_else(kUnbound)});
}

Task<> two_hoppers(ThreadPool* a, ThreadPool* b, std::vector<Hop>* h1, std::vector<Hop>* h2) {
  Scope scope;
  scope.spawn(hopper("h1", a, b, h1));
  scope.spawn(hopper("h2", a, b, h2));
  co_await scope.join();
}

// spec: [FL-4.7] [FL-5.1]
TEST(FiberLocalTaskBody, BindingHeldAcrossResumeOnBetweenTwoThreadPools) {
  ThreadPool a(2);
  ThreadPool b(2);
  std::vector<Hop> h1, h2;
  sync_wait(a, two_hoppers(&a, &b, &h1, &h2));

  for (const auto* hops : {&h1, &h2}) {
    const std::string name = hops == &h1 ? "h1" : "h2";
    ASSERT_EQ(hops->size(), 13u);
    for (std::size_t i = 0; i + 1 < hops->size(); ++i) {
      const bool expect_b = (i / 2) % 2 == 0;  // resume_on(b), then a, then b, ...
      EXPECT_EQ((*hops)[i].on_b, expect_b) << name << " hop " << i;
      EXPECT_EQ((*hops)[i].on_a, !expect_b) << name << " hop " << i;
      EXPECT_EQ((*hops)[i].seen, name) << name << " hop " << i << ": wrong carrier's state?";
    }
    EXPECT_EQ(hops->back().seen, kUnbound) << name << ": where restored on the last carrier";
  }
}

Task<> throwing_body_probe(std::vector<std::string>* log) {
  try {
    co_await number.where(1, [log]() -> Task<> {
      try {
        co_await number.where(2, [log]() -> Task<> {
          co_await yield();
          log->push_back("inner " + std::to_string(number.get()));
          throw Boom("inner");
        });
      } catch (const Boom&) {
        log->push_back("caught inner, sees " + std::to_string(number.get()));
      }
      co_await yield();
      log->push_back("outer " + std::to_string(number.get()));
      throw Boom("outer");
    });
  } catch (const Boom& e) {
    log->push_back(std::string("caught ") + e.what() + ", sees " +
                   std::to_string(number.or_else(-1)));
  }
}

// spec: [FL-3.1] [FL-6.2] [FL-4.7]
TEST(FiberLocalTaskBody, RestoresOnThrowAfterASuspension) {
  ManualScheduler s;
  std::vector<std::string> log;
  turnstile_test::run_detached(s, throwing_body_probe(&log));
  const std::vector<std::string> expected = {"inner 2", "caught inner, sees 1", "outer 1",
                                             "caught outer, sees -1"};
  EXPECT_EQ(log, expected);
}

// ------------------------------------------------------------------ per-fiber slots

Task<> stepper(std::string name, std::vector<std::string>* seen) {
  seen->push_back(who.or_else(kUnbound));
  co_await who.where(name, [&]() -> Task<> {
    for (int i = 0; i < 3; ++i) {
      seen->push_back(who.get());
      co_await yield();
    }
    co_await who.where(name + "-inner", [&]() -> Task<> {
      co_await yield();
      seen->push_back(who.get());
    });
    seen->push_back(who.get());
  });
  seen->push_back(who.or_else(kUnbound));
}

std::vector<std::string> stepper_expected(const std::string& name) {
  return {kUnbound, name, name, name, name + "-inner", name, kUnbound};
}

// spec: [FL-5.1] [FL-1.1]
TEST(FiberLocalPerFiber, TwoFibersOnOneManualSchedulerSeeOnlyTheirOwn) {
  // Every choice of oldest/newest ready item for the first 10 steps.
  for (unsigned mask = 0; mask < (1u << 10); ++mask) {
    ManualScheduler s;
    std::vector<std::string> seen_a, seen_b;
    detach(s, stepper("A", &seen_a));
    detach(s, stepper("B", &seen_b));
    who.where("driver", [&] {
      for (unsigned step = 0; s.ready() > 0; ++step) {
        s.run_next(step < 10 && ((mask >> step) & 1u) != 0 ? s.ready() - 1 : 0);
        ASSERT_EQ(who.get(), "driver") << "mask " << mask << " step " << step;
      }
    });
    ASSERT_EQ(seen_a, stepper_expected("A")) << "mask " << mask;
    ASSERT_EQ(seen_b, stepper_expected("B")) << "mask " << mask;
  }
}

Task<> read_who(std::string* out) {
  *out = who.or_else(kUnbound);
  who.where("fiber", [&] {});
  co_return;
}

// spec: [FL-1.1] [FL-5.1]
TEST(FiberLocalPerFiber, FiberRunByAThreadDoesNotSeeThatThreadsBindings) {
  ManualScheduler s;
  std::string seen;
  who.where("thread", [&] {
    detach(s, read_who(&seen));
    s.run_next(0);  // the fiber's step runs on this very thread
    EXPECT_EQ(who.get(), "thread");
  });
  EXPECT_EQ(seen, kUnbound) << "bindings are keyed by the work, not by the carrier thread";
}

Task<> stepper_pair(std::vector<std::string>* a, std::vector<std::string>* b) {
  Scope scope;
  scope.spawn(stepper("A", a));
  scope.spawn(stepper("B", b));
  co_await scope.join();
}

// spec: [FL-5.1] [FL-1.1]
TEST(FiberLocalPerFiber, TwoFibersOnOneCarrierThreadSeeOnlyTheirOwn) {
  ThreadPool one(1);  // one carrier hosts both fibers, alternating at each yield
  for (int round = 0; round < 50; ++round) {
    std::vector<std::string> seen_a, seen_b;
    sync_wait(one, stepper_pair(&seen_a, &seen_b));
    ASSERT_EQ(seen_a, stepper_expected("A")) << "round " << round;
    ASSERT_EQ(seen_b, stepper_expected("B")) << "round " << round;
  }
}

// ------------------------------------------------------------------ sync_wait

Task<int> read_number() { co_return number.or_else(-1); }

Task<int> rebind_and_read() {
  co_await number.where(8, []() -> Task<> {
    co_await yield();
    co_return;
  });
  const int inner = number.where(9, [] { return number.get(); });
  co_return inner * 100 + number.or_else(-1);
}

// spec: [FL-5.2]
TEST(FiberLocalSyncWait, FiberStartsWithTheCallingThreadsBindings) {
  EXPECT_EQ(sync_wait(read_number()), -1);
  number.where(7, [] {
    EXPECT_EQ(sync_wait(read_number()), 7) << "private loop";
    ManualScheduler manual;
    EXPECT_EQ(sync_wait(manual, read_number()), 7) << "ManualScheduler";
    ThreadPool pool(1);
    EXPECT_EQ(sync_wait(pool, read_number()), 7) << "ThreadPool";
    // The fiber's own bindings stay in the fiber.
    EXPECT_EQ(sync_wait(rebind_and_read()), 907);
    EXPECT_EQ(sync_wait(pool, rebind_and_read()), 907);
    EXPECT_EQ(number.get(), 7);
  });
  EXPECT_FALSE(number.is_bound());
}

// ------------------------------------------------------------------ structured children

struct ChildSaw {
  std::optional<int> value;
  const int* address = nullptr;
  FiberContext context;
};

Task<> read_into(ChildSaw* out) {
  out->value = number.or_else(-1);
  out->address = number.try_get();
  out->context = FiberContext::capture();
  co_return;
}

struct SpawnProbe {
  const int* parent_address = nullptr;
  FiberContext parent_context;
  ChildSaw first, second;
};

Task<> spawning_parent(SpawnProbe* p) {
  Scope scope;
  co_await number.where(1, [&]() -> Task<> {
    p->parent_address = number.try_get();
    p->parent_context = FiberContext::capture();
    scope.spawn(read_into(&p->first));
    // The parent rebinds after the spawn, before the child has run.
    co_await number.where(2, [&]() -> Task<> {
      scope.spawn(read_into(&p->second));
      co_await yield();
    });
    co_await yield();
  });
  co_await scope.join();
}

// spec: [FL-3.2] [FL-5.4]
TEST(FiberLocalSpawn, ChildSeesTheBindingsAsTheyStoodAtTheSpawn) {
  for (unsigned mask = 0; mask < (1u << 6); ++mask) {
    ManualScheduler s;
    SpawnProbe p;
    detach(s, spawning_parent(&p));
    run_schedule(s, mask, 6);
    ASSERT_EQ(p.first.value, 1) << "mask " << mask << ": a later rebinding leaked into the child";
    ASSERT_EQ(p.second.value, 2) << "mask " << mask;
    // One pointer copy, nothing deep-copied: the child reads the parent's frame.
    EXPECT_EQ(p.first.address, p.parent_address) << "mask " << mask;
    EXPECT_EQ(p.first.context, p.parent_context) << "mask " << mask;
  }
}

Task<> count_in_child(int* values_seen, int* id_seen, const Tracked** address) {
  *values_seen = Tracked::values();
  *id_seen = tracked.get().id();  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  *address = &tracked.get();  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  co_return;
}

Task<> spawn_many(int* values_seen, int* ids_seen, const Tracked** addresses,
                  const Tracked** parent_address) {
  Scope scope;
  co_await tracked.where(Tracked(3), [&]() -> Task<> {
    *parent_address = &tracked.get();
    for (int i = 0; i < 8; ++i)
      scope.spawn(count_in_child(&values_seen[i], &ids_seen[i], &addresses[i]));
    co_await scope.join();
  });
}

// spec: [FL-5.4] [FL-5.3]
TEST_F(FiberLocalSpawnFrames, SpawnSharesTheParentsFramesWithoutCopying) {
  ThreadPool pool(2);
  int values_seen[8] = {};
  int ids_seen[8] = {};
  const Tracked* addresses[8] = {};
  const Tracked* parent_address = nullptr;
  sync_wait(pool, spawn_many(values_seen, ids_seen, addresses, &parent_address));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(values_seen[i], 1) << "child " << i << ": spawning copied the bound value";
    EXPECT_EQ(ids_seen[i], 3) << "child " << i;
    EXPECT_EQ(addresses[i], parent_address) << "child " << i;
  }
}

Task<> rebinding_child(std::vector<int>* seen) {
  seen->push_back(number.get());  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  co_await number.where(10, [&]() -> Task<> {
    seen->push_back(number.get());
    co_await yield();
    seen->push_back(number.get());
  });
  seen->push_back(number.get());  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  number.where(11, [&] { seen->push_back(number.get()); });
  co_await yield();
  seen->push_back(number.get());  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
}

Task<> reading_child(std::vector<int>* seen) {
  for (int i = 0; i < 3; ++i) {
    seen->push_back(number.get());  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
    co_await yield();
  }
}

Task<> observing_parent(std::vector<int>* a, std::vector<int>* b, std::vector<int>* parent) {
  Scope scope;
  co_await number.where(1, [&]() -> Task<> {
    scope.spawn(rebinding_child(a));
    scope.spawn(reading_child(b));
    for (int i = 0; i < 3; ++i) {
      parent->push_back(number.get());
      co_await yield();
    }
    co_await scope.join();
    parent->push_back(number.get());
  });
}

// spec: [FL-3.3]
TEST(FiberLocalSpawn, ChildsOwnWhereIsInvisibleToParentAndSibling) {
  for (unsigned mask = 0; mask < (1u << 10); ++mask) {
    ManualScheduler s;
    std::vector<int> a, b, parent;
    detach(s, observing_parent(&a, &b, &parent));
    run_schedule(s, mask, 10);
    ASSERT_EQ(a, (std::vector<int>{1, 10, 10, 1, 11, 1})) << "mask " << mask;
    ASSERT_EQ(b, (std::vector<int>{1, 1, 1})) << "mask " << mask << ": sibling saw a rebinding";
    ASSERT_EQ(parent, (std::vector<int>{1, 1, 1, 1})) << "mask " << mask << ": parent saw it";
  }
}

Task<> child_reads_tracked(int* id_seen) {
  *id_seen = tracked.get().id();  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  co_return;
}

Task<> parent_unbinds_before_child_runs(int* values_after_where, int* id_seen) {
  Scope scope;
  co_await tracked.where(Tracked(21), [&]() -> Task<> {
    scope.spawn(child_reads_tracked(id_seen));
    co_return;
  });
  *values_after_where = Tracked::values();  // the child has not run yet
  co_await scope.join();
}

// spec: [FL-5.6] [FL-3.2]
TEST_F(FiberLocalSpawnFrames, ChildHoldsTheFramesItInheritedAfterTheParentUnbinds) {
  ManualScheduler s;
  int values_after_where = -1;
  int id_seen = -1;
  detach(s, parent_unbinds_before_child_runs(&values_after_where, &id_seen));
  s.run_next(0);  // the parent: spawn, leave the where, park in join
  EXPECT_EQ(values_after_where, 1) << "the unstarted child holds the parent's frame";
  EXPECT_EQ(Tracked::values(), 1);
  s.run_until_idle();
  EXPECT_EQ(id_seen, 21);
  EXPECT_EQ(Tracked::values(), 0) << "freed once the child finished";
}

// ------------------------------------------------------------------ unstructured handoffs

struct Diagnosis {
  std::optional<int> seen;
  std::string message;
};

Task<> unbound_reader(Diagnosis* d) {
  d->seen = number.or_else(-1);
  try {
    (void)number.get();
  } catch (const UnboundFiberLocal& e) {
    d->message = e.what();
  }
  co_return;
}

Task<> detaching_parent(ManualScheduler* s, Diagnosis* d) {
  co_await number.where(5, [&]() -> Task<> {
    detach(*s, unbound_reader(d));
    co_await yield();  // still bound while the detached fiber may run
  });
}

// spec: [FL-3.4] [FL-6.1]
TEST(FiberLocalHandoff, DetachedFiberStartsUnbound) {
  for (unsigned mask = 0; mask < 4; ++mask) {
    ManualScheduler s;
    Diagnosis d;
    detach(s, detaching_parent(&s, &d));
    run_schedule(s, mask, 2);
    EXPECT_EQ(d.seen, -1) << "mask " << mask << ": detach carried the parent's binding";
  }
  // From a plain thread with bindings, too.
  ManualScheduler s;
  Diagnosis d;
  number.where(6, [&] { detach(s, unbound_reader(&d)); });
  s.run_until_idle();
  EXPECT_EQ(d.seen, -1);
}

// spec: [FL-8.3] [FL-4.2]
TEST(FiberLocalHandoff, ReadAcrossDetachReportsTheHandoffAndCapture) {
  ManualScheduler s;
  Diagnosis d;
  turnstile_test::run_detached(s, detaching_parent(&s, &d));
  EXPECT_NE(d.message.find("'number'"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("detach"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("Channel"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("FiberContext::capture"), std::string::npos) << d.message;
}

Task<> bound_sender(Channel<int>* ch) {
  co_await number.where(5, [&]() -> Task<> {
    co_await ch->send(1);
    co_await ch->send(2);
  });
}

Task<> receiver(Channel<int>* ch, std::optional<int> own, std::vector<int>* seen,
                std::string* message) {
  auto body = [&]() -> Task<> {
    for (int i = 0; i < 2; ++i) {
      auto v = co_await ch->receive();
      seen->push_back(v ? number.or_else(-1) : -100);
    }
    try {
      (void)number.get();
    } catch (const UnboundFiberLocal& e) {
      *message = e.what();
    }
  };
  if (own) {
    co_await number.where(*own, body);
  } else {
    co_await body();
  }
}

// spec: [FL-3.4] [FL-8.3]
TEST(FiberLocalHandoff, ChannelCarriesNoBindings) {
  for (std::size_t capacity : {0u, 1u, 4u}) {
    for (unsigned mask = 0; mask < (1u << 5); ++mask) {
      for (const std::optional<int> own : {std::optional<int>(), std::optional<int>(9)}) {
        ManualScheduler s;
        Channel<int> ch(capacity);
        std::vector<int> seen;
        std::string message;
        detach(s, receiver(&ch, own, &seen, &message));
        detach(s, bound_sender(&ch));
        run_schedule(s, mask, 5);
        const int expect = own ? *own : -1;
        ASSERT_EQ(seen, (std::vector<int>{expect, expect}))
            << "capacity " << capacity << " mask " << mask;
        if (!own) {
          EXPECT_NE(message.find("FiberContext::capture"), std::string::npos) << message;
          EXPECT_NE(message.find("Channel"), std::string::npos) << message;
        }
      }
    }
  }
}

struct Message {
  int payload;
  FiberContext ctx;
};

Task<> capturing_sender(Channel<Message>* ch) {
  co_await number.where(5, [&]() -> Task<> {
    co_await who.where("sender", [&]() -> Task<> {
      // A named message, not `send(Message{...})`: see the GCC 12 note in fl_support.hpp.
      Message m{1, FiberContext::capture()};
      co_await ch->send(std::move(m));
    });
  });
}

struct RunObs {
  std::vector<std::string> log;
};

Task<> context_receiver(Channel<Message>* ch, RunObs* obs) {
  co_await who.where("worker", [&]() -> Task<> {
    auto m = co_await ch->receive();
    obs->log.push_back("before " + std::to_string(number.or_else(-1)) + " " + who.get());
    co_await m->ctx.run([&]() -> Task<> {
      obs->log.push_back("in run " + std::to_string(number.get()) + " " + who.get());
      co_await yield();
      obs->log.push_back("after yield " + std::to_string(number.get()) + " " + who.get());
    });
    obs->log.push_back("after " + std::to_string(number.or_else(-1)) + " " + who.get());
  });
}

// spec: [FL-3.5] [FL-3.6]
TEST(FiberLocalHandoff, FiberContextInTheMessageCarriesTheBindingsExplicitly) {
  for (unsigned mask = 0; mask < (1u << 5); ++mask) {
    ManualScheduler s;
    Channel<Message> ch(1);
    RunObs obs;
    detach(s, context_receiver(&ch, &obs));
    detach(s, capturing_sender(&ch));
    run_schedule(s, mask, 5);
    const std::vector<std::string> expected = {"before -1 worker", "in run 5 sender",
                                               "after yield 5 sender", "after -1 worker"};
    ASSERT_EQ(obs.log, expected) << "mask " << mask;
  }
}

Task<> worker_runs_throwing(FiberContext ctx, std::vector<std::string>* log) {
  co_await who.where("worker", [&]() -> Task<> {
    try {
      co_await ctx.run([&]() -> Task<> {
        co_await yield();
        log->push_back("in run " + std::to_string(number.get()) + " " + who.or_else(kUnbound));
        throw Boom("request failed");
      });
    } catch (const Boom&) {
      log->push_back("caught " + std::to_string(number.or_else(-1)) + " " + who.get());
    }
  });
}

// spec: [FL-3.6] [FL-6.2]
TEST(FiberContextRun, TaskRunRestoresTheWorkerOnThrow) {
  const FiberContext ctx = number.where(4, [] { return FiberContext::capture(); });
  ManualScheduler s;
  std::vector<std::string> log;
  turnstile_test::run_detached(s, worker_runs_throwing(ctx, &log));
  const std::vector<std::string> expected = {"in run 4 " + kUnbound, "caught -1 worker"};
  EXPECT_EQ(log, expected);
}

Task<> run_shared(FiberContext ctx, Event* mine, Event* other, std::string* saw) {
  co_await ctx.run([&]() -> Task<> {
    mine->set();
    co_await other->wait();  // both fibers are inside run of the same snapshot now
    *saw = who.get() + "/" + std::to_string(number.get());
  });
  if (who.is_bound() || number.is_bound()) *saw += " (leaked)";
}

Task<> run_twice_concurrently(FiberContext ctx, std::string* sa, std::string* sb) {
  Event a_in, b_in;
  Scope scope;
  scope.spawn(run_shared(ctx, &a_in, &b_in, sa));
  scope.spawn(run_shared(ctx, &b_in, &a_in, sb));
  co_await scope.join();
}

// spec: [FL-6.4]
TEST(FiberContextShare, OneSnapshotRunOnTwoFibersAtOnce) {
  static_assert(std::is_copy_constructible_v<FiberContext>);
  static_assert(std::is_copy_assignable_v<FiberContext>);
  static_assert(std::is_nothrow_copy_constructible_v<FiberContext>);

  ThreadPool pool(2);
  for (int round = 0; round < 50; ++round) {
    const FiberContext ctx = number.where(
        round, [] { return who.where("shared", [] { return FiberContext::capture(); }); });
    std::string sa, sb;
    sync_wait(pool, run_twice_concurrently(ctx, &sa, &sb));
    const std::string expected = "shared/" + std::to_string(round);
    ASSERT_EQ(sa, expected) << "round " << round;
    ASSERT_EQ(sb, expected) << "round " << round;
  }
}

Task<> capture_on_pool(FiberContext* out) {
  co_await tracked.where(Tracked(5), [&]() -> Task<> {
    co_await yield();
    *out = FiberContext::capture();
  });
}

// spec: [FL-5.6]
TEST_F(FiberContextOnFibers, SnapshotTakenOnAFiberOutlivesItAndIsFreedOnRelease) {
  ThreadPool pool(2);
  FiberContext held;
  sync_wait(pool, capture_on_pool(&held));
  EXPECT_EQ(Tracked::values(), 1) << "the fiber has ended; the snapshot still holds its frame";
  held.run([] { EXPECT_EQ(tracked.get().id(), 5); });  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  held = FiberContext{};
  EXPECT_EQ(Tracked::values(), 0);
}

// ------------------------------------------------------------------ run()'s Task owns its snapshot

Task<> record_number(std::optional<int>* out) {
  *out = number.or_else(-1);
  co_return;
}

// spec: [FL-3.5] [FL-6.4]
TEST(FiberContextRun, TaskFromRunCarriesTheSnapshotNotTheVariable) {
  // The snapshot is immutable: the Task made by run() installs the snapshot it
  // was made from, even if the FiberContext variable is reassigned before the
  // Task starts (run() is lazy for a Task body).
  ManualScheduler s;
  std::optional<int> seen;
  FiberContext ctx = number.where(5, [] { return FiberContext::capture(); });
  Task<> t = ctx.run([&seen]() -> Task<> { co_await record_number(&seen); });
  ctx = number.where(6, [] { return FiberContext::capture(); });  // the variable is reused
  turnstile_test::run_detached(s, std::move(t));
  EXPECT_EQ(seen, 5) << "run()'s Task read the FiberContext object when it started, not the "
                        "snapshot it was made from";
}

// spec: [FL-3.5] [FL-3.4]
TEST(FiberContextRun, DetachTheRunOfAFreshCaptureCarriesTheBindings) {
  // The natural idiom for handing the current bindings to a detached fiber. The
  // FiberContext is a temporary that ends with the detach statement.
  ManualScheduler s;
  std::optional<int> seen;
  number.where(7, [&] {
    detach(s, FiberContext::capture().run([&seen]() -> Task<> { co_await record_number(&seen); }));
  });
  s.run_until_idle();
  EXPECT_EQ(seen, 7);
}

}  // namespace
