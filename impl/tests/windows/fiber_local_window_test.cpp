// fiber_local_window_test.cpp: a value's destructor that reads FiberLocal keys
// while its frame is being freed ([FL-5.6], [FL-5.1]).
//
// The window: the last reference to a binding chain is let go by a fiber as it
// ends (a Scope child holding its parent's bindings after the parent's where()
// returned, or the fiber of a turn called unawaited inside where()), and the
// values' destructors run. While they run, the thread's
// cached chain head must not point at the chain being freed: each destructor
// reads another key (and its own), and must find them unbound, never walk a
// freed frame (the asan-ubsan preset runs this test to see the latter).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/latch.hpp"

namespace {

using namespace turnstile;

using Log = std::vector<std::string>;

// A value that, when destroyed holding its log, records what it can see.
struct Reader {
  std::shared_ptr<Log> log;
  std::string name;
  Reader(std::shared_ptr<Log> l, std::string n) : log(std::move(l)), name(std::move(n)) {}
  Reader(Reader&&) noexcept = default;
  Reader(const Reader&) = default;
  ~Reader();
};

FiberLocal<int> other("windows.other");
FiberLocal<Reader> outer("windows.outer");
FiberLocal<Reader> inner("windows.inner");

Reader::~Reader() {
  if (!log) return;  // moved from
  const int* o = other.try_get();
  log->push_back(name + (o ? " sees other=" + std::to_string(*o) : " sees other unbound") +
                 (outer.is_bound() ? ", outer bound" : ", outer unbound") +
                 (inner.is_bound() ? ", inner bound" : ", inner unbound"));
}

struct Seen {
  int other = -1;
  std::string outer, inner;
  bool done = false;
};

Task<> child_reads(Seen* seen, Event* go) {
  co_await go->wait();  // the parent's where() has returned: this fiber holds the chain
  seen->other = other.get();
  seen->outer = outer.get().name;
  seen->inner = inner.get().name;
  seen->done = true;
}  // the fiber ends: its chain's last reference goes, the Readers are destroyed

Task<> spawn_inside_where(std::shared_ptr<Log> log, Seen* seen, Event* go) {
  Scope scope("windows/frames");
  other.where(5, [&] {
    outer.where(Reader(log, "outer"), [&] {
      inner.where(Reader(log, "inner"), [&] { scope.spawn(child_reads(seen, go)); });
    });
  });
  EXPECT_FALSE(outer.is_bound());  // this fiber no longer holds the frames
  go->set();
  co_await scope.join();
}

// spec: [FL-5.6] [FL-5.1] [FL-3.2]
TEST(FiberLocalWindow, DestructorsReadingKeysAsAScopeChildsChainIsFreedSeeNoBinding) {
  auto log = std::make_shared<Log>();
  Seen seen;
  Event go;
  ManualScheduler ms;
  detach(ms, spawn_inside_where(log, &seen, &go));
  ms.run_next();  // the parent binds, spawns, unbinds and parks in join()
  EXPECT_TRUE(log->empty()) << "the child holds the frames: nothing freed yet";
  ms.run_until_idle();  // the child reads, then ends and lets the chain go
  ASSERT_TRUE(seen.done);
  EXPECT_EQ(seen.other, 5);
  EXPECT_EQ(seen.outer, "outer");
  EXPECT_EQ(seen.inner, "inner");
  // Newest first: inner's frame goes, then outer's. Neither destructor walks
  // the chain being freed: the fiber's slot was emptied first.
  EXPECT_EQ(*log, (Log{"inner sees other unbound, outer unbound, inner unbound",
                       "outer sees other unbound, outer unbound, inner unbound"}));
}

Task<> call_inside_where(Activation<int>* a, std::shared_ptr<Log> log, Seen* seen, Event* go) {
  other.where(7, [&] {
    outer.where(Reader(log, "outer"), [&] {
      inner.where(Reader(log, "inner"), [&] {
        // Unawaited: the turn's fiber starts with these bindings and, once
        // this where() has returned, holds the chain's last reference.
        (void)a->call("reads", [seen, go](TurnContext<int>&) -> Task<> {
          co_await go->wait();
          seen->other = other.get();
          seen->outer = outer.get().name;
          seen->inner = inner.get().name;
          seen->done = true;
        });
      });
    });
  });
  EXPECT_FALSE(outer.is_bound());
  go->set();
  co_return;
}

// spec: [FL-5.6] [FL-5.1] [FL-3.8]
TEST(FiberLocalWindow, DestructorsReadingKeysAsAnUnawaitedTurnsChainIsFreedSeeNoBinding) {
  auto log = std::make_shared<Log>();
  Seen seen;
  Event go;
  ManualScheduler ms;
  Activation<int> a("windows/fl-turn", 0, {}, ms);
  detach(ms, call_inside_where(&a, log, &seen, &go));
  ms.run_next();  // the caller binds, calls, unbinds and ends: the turn holds the frames
  EXPECT_TRUE(log->empty()) << "the turn's fiber holds the frames: nothing freed yet";
  ms.run_until_idle();  // the turn reads, settles, and its fiber ends with the last reference
  ASSERT_TRUE(seen.done);
  EXPECT_EQ(seen.other, 7);
  EXPECT_EQ(seen.outer, "outer");
  EXPECT_EQ(seen.inner, "inner");
  EXPECT_EQ(a.turns_completed(), 1u);
  EXPECT_EQ(*log, (Log{"inner sees other unbound, outer unbound, inner unbound",
                       "outer sees other unbound, outer unbound, inner unbound"}));
}

Task<> detached_reads(Seen* seen, std::shared_ptr<Log> log) {
  // Its own bindings, released as each where() returns: the new head is in
  // place first, so each destructor reads the chain below it.
  other.where(9, [&] {
    outer.where(Reader(log, "outer"), [&] { seen->outer = outer.get().name; });
  });
  seen->done = true;
  co_return;
}

// spec: [FL-5.6] [FL-5.1]
TEST(FiberLocalWindow, ADestructorRunByWhereReturningReadsTheRestoredChain) {
  auto log = std::make_shared<Log>();
  Seen seen;
  ManualScheduler ms;
  detach(ms, detached_reads(&seen, log));
  ms.run_until_idle();
  ASSERT_TRUE(seen.done);
  EXPECT_EQ(seen.outer, "outer");
  EXPECT_EQ(*log, (Log{"outer sees other=9, outer unbound, inner unbound"}));
}

}  // namespace
