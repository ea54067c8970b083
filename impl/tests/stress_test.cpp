// Stress tests on real carrier threads. They run in every build; under the tsan
// preset they are what shows the product's synchronisation is race-free.
// Threads are ordered only by latches, joins and the primitives under test.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "turnstile_test/threads.hpp"

namespace {

using namespace turnstile;
using tt::Boom;

// ---------------------------------------------------------------- ThreadPool

// spec: [RT-2.2] [RT-2.3]
TEST(ThreadPoolStress, ManyPostsFromSeveralProducersRunExactlyOnce) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 20'000;
  constexpr int kItems = kProducers * kPerProducer;
  auto runs = std::make_unique<std::atomic<int>[]>(kItems);
  std::atomic<int> ran{0};
  {
    ThreadPool pool(4);
    turnstile_test::run_threads(kProducers, [&](int p) {
      for (int i = 0; i < kPerProducer; ++i) {
        const int id = p * kPerProducer + i;
        pool.post_fn([&runs, &ran, id] {
          runs[id].fetch_add(1, std::memory_order_relaxed);
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
    });
  }  // the destructor drains whatever is still queued
  EXPECT_EQ(ran.load(), kItems);
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(runs[i].load(), 1) << "item " << i;
}

// spec: [RT-2.2]
TEST(ThreadPoolStress, EachProducersItemsStartInItsPostOrder) {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 5'000;
  std::vector<std::pair<int, int>> started;  // written by the pool's one carrier
  started.reserve(kProducers * kPerProducer);
  {
    ThreadPool pool(1);
    turnstile_test::run_threads(kProducers, [&](int p) {
      for (int i = 0; i < kPerProducer; ++i)
        pool.post_fn([&started, p, i] { started.emplace_back(p, i); });
    });
  }
  ASSERT_EQ(started.size(), static_cast<std::size_t>(kProducers * kPerProducer));
  std::vector<int> next(kProducers, 0);
  for (const auto& [p, i] : started) {
    ASSERT_EQ(i, next[p]) << "producer " << p << " out of order";
    ++next[p];
  }
}

// ---------------------------------------------------------------- Event

Task<> event_waiter(Event& ev, const int& payload, int expected, std::atomic<int>& saw_payload) {
  co_await ev.wait();
  // A plain read: TSan reports it unless set() happens-before this point.
  if (payload == expected) saw_payload.fetch_add(1, std::memory_order_relaxed);
}

Task<> event_setter(Event& ev, int& payload, int value) {
  payload = value;
  ev.set();
  co_return;
}

Task<> event_rounds(int rounds, int waiters, std::atomic<int>& saw_payload) {
  for (int round = 1; round <= rounds; ++round) {
    Event ev;
    int payload = 0;
    Scope scope;
    for (int w = 0; w < waiters / 2; ++w) scope.spawn(event_waiter(ev, payload, round, saw_payload));
    scope.spawn(event_setter(ev, payload, round));
    for (int w = waiters / 2; w < waiters; ++w)
      scope.spawn(event_waiter(ev, payload, round, saw_payload));
    co_await scope.join();
  }
}

// spec: [RT-4.1] [RT-4.2]
TEST(EventStress, SetReleasesEveryWaiterAcrossCarriersWithTheSettersWritesVisible) {
  constexpr int kRounds = 300;
  constexpr int kWaiters = 8;
  std::atomic<int> saw_payload{0};
  ThreadPool pool(4);
  sync_wait(pool, event_rounds(kRounds, kWaiters, saw_payload));
  EXPECT_EQ(saw_payload.load(), kRounds * kWaiters);
}

// ---------------------------------------------------------------- Promise

Task<> promise_waiter(Promise<int>& p, std::atomic<int>& sum) {
  try {
    sum.fetch_add(co_await p.wait(), std::memory_order_relaxed);
  } catch (const Boom&) {
    sum.fetch_add(100, std::memory_order_relaxed);
  }
}

// spec: [RT-4.3] [RT-4.2]
TEST(PromiseStress, ConcurrentCompletersExactlyOneWins) {
  constexpr int kRounds = 100;
  constexpr int kCompleters = 4;
  for (int round = 0; round < kRounds; ++round) {
    Promise<int> p;
    std::atomic<int> wins{0};
    std::atomic<int> refusals{0};
    std::atomic<int> sum{0};
    {
      ThreadPool pool(2);
      detach(pool, promise_waiter(p, sum));
      detach(pool, promise_waiter(p, sum));
      turnstile_test::run_threads(kCompleters, [&](int c) {
        try {
          if (c % 2 == 0)
            p.set_value(7);
          else
            p.set_exception(std::make_exception_ptr(Boom("x")));
          wins.fetch_add(1);
        } catch (const std::logic_error&) {
          refusals.fetch_add(1);
        }
      });
    }  // drains the waiters
    ASSERT_EQ(wins.load(), 1) << "round " << round;
    ASSERT_EQ(refusals.load(), kCompleters - 1);
    // Both waiters see the one winner: the value (7 each) or the exception (100 each).
    const int s = sum.load();
    ASSERT_TRUE(s == 14 || s == 200) << s;
  }
}

// ---------------------------------------------------------------- Scope

Task<> counted_child(std::atomic<int>& count, int id, int failing_id) {
  co_await yield();
  count.fetch_add(1, std::memory_order_relaxed);
  if (id == failing_id) throw Boom("child failed");
}

Task<> many_children(int n, std::atomic<int>& count, std::atomic<int>& running_at_join,
                     bool& rethrown) {
  Scope scope;
  for (int i = 0; i < n; ++i) scope.spawn(counted_child(count, i, n / 2));
  try {
    co_await scope.join();
  } catch (const Boom&) {
    rethrown = true;
  }
  running_at_join.store(static_cast<int>(scope.running()));
}

// spec: [RT-5.3] [RT-5.1]
TEST(ScopeStress, JoinWaitsForManyChildrenOnSeveralCarriers) {
  constexpr int kChildren = 2000;
  std::atomic<int> count{0};
  std::atomic<int> running_at_join{-1};
  bool rethrown = false;
  ThreadPool pool(4);
  sync_wait(pool, many_children(kChildren, count, running_at_join, rethrown));
  EXPECT_EQ(count.load(), kChildren) << "join completed before every child finished";
  EXPECT_EQ(running_at_join.load(), 0);
  EXPECT_TRUE(rethrown);
}

// ---------------------------------------------------------------- Channel

using Value = std::uint32_t;
constexpr Value kSenderShift = 20;

Task<> producer(Channel<Value>& ch, Value sender, Value count) {
  for (Value i = 0; i < count; ++i) co_await ch.send((sender << kSenderShift) | i);
}

Task<> consumer(Channel<Value>& ch, std::vector<Value>& got) {
  while (std::optional<Value> v = co_await ch.receive()) got.push_back(*v);
}

Task<> exchange(Channel<Value>& ch, int producers, Value per_producer,
                std::vector<std::vector<Value>>& got) {
  Scope consumers;
  for (auto& g : got) consumers.spawn(consumer(ch, g));
  Scope senders;
  for (int p = 0; p < producers; ++p)
    senders.spawn(producer(ch, static_cast<Value>(p), per_producer));
  co_await senders.join();
  ch.close();
  co_await consumers.join();
}

void check_exchange(const std::vector<std::vector<Value>>& got, int producers, Value per_producer) {
  std::vector<std::vector<int>> times(static_cast<std::size_t>(producers),
                                      std::vector<int>(per_producer, 0));
  for (std::size_t c = 0; c < got.size(); ++c) {
    std::vector<long> last(static_cast<std::size_t>(producers), -1);
    for (Value v : got[c]) {
      const Value sender = v >> kSenderShift;
      const Value seq = v & ((Value{1} << kSenderShift) - 1);
      ASSERT_LT(sender, static_cast<Value>(producers));
      ASSERT_LT(seq, per_producer);
      // Per-sender FIFO, as seen by each consumer.
      ASSERT_GT(static_cast<long>(seq), last[sender])
          << "consumer " << c << " saw sender " << sender << " out of order";
      last[sender] = static_cast<long>(seq);
      ++times[sender][seq];
    }
  }
  for (int p = 0; p < producers; ++p)
    for (Value i = 0; i < per_producer; ++i)
      ASSERT_EQ(times[static_cast<std::size_t>(p)][i], 1) << "sender " << p << " value " << i;
}

// spec: [RT-7.1] [RT-7.2] [RT-7.3]
TEST(ChannelStress, FourProducersFourConsumersOnAThreadPool) {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 4;
  constexpr Value kPerProducer = 5'000;  // 20,000 values in all
  Channel<Value> ch(16);
  std::vector<std::vector<Value>> got(kConsumers);
  ThreadPool pool(4);
  sync_wait(pool, exchange(ch, kProducers, kPerProducer, got));
  check_exchange(got, kProducers, kPerProducer);
}

// spec: [RT-7.1] [RT-7.2] [RT-7.3]
TEST(ChannelStress, RendezvousWithFourProducersFourConsumersOnAThreadPool) {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 4;
  constexpr Value kPerProducer = 1'000;
  Channel<Value> ch(0);
  std::vector<std::vector<Value>> got(kConsumers);
  ThreadPool pool(4);
  sync_wait(pool, exchange(ch, kProducers, kPerProducer, got));
  check_exchange(got, kProducers, kPerProducer);
}

}  // namespace
