// turn_snapshot_test.cpp: snapshot() ([TURN-5.3]) read from plain threads while
// serial turns publish on a real pool. The activation overwrites its published
// copy in place when no snapshot() handle holds it, so the readers' handles and
// the publisher meet on a counter (release on each handle's drop, acquire at
// publish): run under the tsan preset, a missing pairing is a reported race.
// No sleeps: the readers spin on snapshot() until the turns are done.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "turnstile/turnstile.hpp"

namespace {

using namespace turnstile;

// spec: [TURN-5.3]
TEST(TurnSnapshot, ReadersOnPlainThreadsSeeSettledStatesThatNeverChangeWhileHeld) {
  constexpr long kTurns = 2000;
  ThreadPool pool(2);
  Activation<long> a("snap/threads", 0, {}, pool);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      long last = 0;
      while (!done.load(std::memory_order_acquire)) {
        const auto s = a.snapshot();
        const long v = *s;
        if (v < last || v > kTurns) bad.fetch_add(1);  // settled states only grow
        last = v;
        std::this_thread::yield();  // let a publish happen while `s` is held
        if (*s != v) bad.fetch_add(1);  // a held snapshot never changes
      }
    });
  }
  std::vector<Task<>> calls;
  for (long i = 0; i < kTurns; ++i) calls.push_back(a.call("inc", [](long& s) { ++s; }));
  for (auto& t : calls) sync_wait(std::move(t));
  done.store(true, std::memory_order_release);
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(*a.snapshot(), kTurns);
}

}  // namespace
