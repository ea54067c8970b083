// Channel<T>: exactly once, per-sender FIFO, close, rendezvous.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "turnstile_test/on_schedulers.hpp"

namespace {

using namespace turnstile;

struct SendLog {
  int sent = 0;           // sends that completed
  bool failed_closed = false;
  bool finished = false;
};

Task<> send_values(Channel<int>& ch, std::vector<int> values, SendLog& log) {
  try {
    for (int v : values) {
      co_await ch.send(v);
      ++log.sent;
    }
  } catch (const ChannelClosedError&) {
    log.failed_closed = true;
  }
  log.finished = true;
}

struct ReceiveLog {
  std::vector<int> values;
  int nullopts = 0;
  bool finished = false;
};

// Receives until the channel reports closed-and-drained.
Task<> receive_all(Channel<int>& ch, ReceiveLog& log) {
  while (std::optional<int> v = co_await ch.receive()) log.values.push_back(*v);
  ++log.nullopts;
  log.finished = true;
}

Task<> receive_n(Channel<int>& ch, int n, ReceiveLog& log) {
  for (int i = 0; i < n; ++i) {
    std::optional<int> v = co_await ch.receive();
    if (v)
      log.values.push_back(*v);
    else
      ++log.nullopts;
  }
  log.finished = true;
}

std::vector<int> iota(int from, int count) {
  std::vector<int> v;
  for (int i = 0; i < count; ++i) v.push_back(from + i);
  return v;
}

Task<> send_then_close(Channel<int>& ch, std::vector<int> values, SendLog& log) {
  co_await send_values(ch, std::move(values), log);
  ch.close();
}

// ---------------------------------------------------------------- [RT-7.1] [RT-7.2]

// A sender and a receiver as children of one scope, joined.
Task<> send_and_receive(Channel<int>& ch, std::vector<int> values, SendLog& s, ReceiveLog& r) {
  Scope scope;
  scope.spawn(send_then_close(ch, std::move(values), s));
  scope.spawn(receive_all(ch, r));
  co_await scope.join();
}

// On every scheduler: the sender and the receiver wake each other up across
// carriers (a full buffer, a rendezvous).
class ChannelOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(ChannelOnSchedulers);

// spec: [RT-7.1] [RT-7.2]
TEST_P(ChannelOnSchedulers, OneSenderOneReceiverGetsEveryValueOnceInOrder) {
  for (std::size_t capacity : {0u, 1u, 3u, 64u}) {
    Channel<int> ch(capacity);
    EXPECT_EQ(ch.capacity(), capacity);
    SendLog s;
    ReceiveLog r;
    run(send_and_receive(ch, iota(0, 200), s, r));
    EXPECT_TRUE(s.finished);
    EXPECT_FALSE(s.failed_closed);
    EXPECT_TRUE(r.finished);
    EXPECT_EQ(r.values, iota(0, 200)) << "capacity " << capacity;
  }
}

Task<> senders_then_close(Channel<int>& ch, int senders, int per_sender,
                          std::vector<SendLog>& logs) {
  Scope scope;
  for (int s = 0; s < senders; ++s)
    scope.spawn(send_values(ch, iota(s * 1000, per_sender), logs[static_cast<std::size_t>(s)]));
  co_await scope.join();
  ch.close();
}

// spec: [RT-7.1] [RT-7.2]
TEST(Channel, InterleavedSendersAndReceiversExactlyOncePerSenderFifo) {
  constexpr int kSenders = 3;
  constexpr int kPerSender = 40;
  constexpr int kReceivers = 2;
  for (std::size_t capacity : {0u, 2u}) {
    for (std::uint64_t seed = 1; seed <= 15; ++seed) {
      SCOPED_TRACE("capacity " + std::to_string(capacity) + " seed " + std::to_string(seed));
      ManualScheduler ms;
      Channel<int> ch(capacity);
      std::vector<SendLog> sends(kSenders);
      std::vector<ReceiveLog> receives(kReceivers);
      detach(ms, senders_then_close(ch, kSenders, kPerSender, sends));
      for (auto& r : receives) detach(ms, receive_all(ch, r));
      tt::Lcg rng(seed);
      tt::run_random(ms, rng);

      std::map<int, int> times_received;
      for (const ReceiveLog& r : receives) {
        ASSERT_TRUE(r.finished);
        std::map<int, int> last_of_sender;  // per receiver: each sender's values ascend
        for (int v : r.values) {
          ++times_received[v];
          const int sender = v / 1000;
          auto it = last_of_sender.find(sender);
          if (it != last_of_sender.end()) {
            EXPECT_LT(it->second, v) << "sender " << sender << " out of order";
          }
          last_of_sender[sender] = v;
        }
      }
      ASSERT_EQ(times_received.size(), static_cast<std::size_t>(kSenders * kPerSender));
      for (const auto& [v, n] : times_received) EXPECT_EQ(n, 1) << "value " << v;
      for (const SendLog& s : sends) EXPECT_EQ(s.sent, kPerSender);
    }
  }
}

// spec: [RT-7.1] [RT-4.2]
TEST(Channel, SendWaitsWhenFullAndIsReleasedByAReceive) {
  ManualScheduler ms;
  Channel<int> ch(1);
  SendLog s;
  ReceiveLog r;
  detach(ms, send_values(ch, {10, 11}, s));
  ms.run_next();
  EXPECT_EQ(s.sent, 1) << "the first send fits in the buffer";
  EXPECT_EQ(ch.size(), 1u);
  EXPECT_EQ(ms.ready(), 0u) << "the second send must wait for room";

  detach(ms, receive_n(ch, 1, r));
  ms.run_next();
  EXPECT_EQ(r.values, (std::vector<int>{10}));
  EXPECT_EQ(ch.size(), 1u) << "the waiting sender's value moves into the freed slot";
  EXPECT_EQ(s.sent, 1) << "the sender was resumed inside the receive";
  EXPECT_EQ(ms.ready(), 1u);
  ms.run_until_idle();
  EXPECT_EQ(s.sent, 2);
  EXPECT_TRUE(s.finished);

  int v = 12;
  EXPECT_FALSE(ch.try_send(v)) << "try_send on a full channel must refuse";
  EXPECT_EQ(ch.size(), 1u);
  ReceiveLog rest;
  turnstile_test::run_detached(ms, receive_n(ch, 1, rest));
  EXPECT_EQ(rest.values, (std::vector<int>{11}));
}

// spec: [RT-7.1] [RT-4.2]
TEST(Channel, WaitingReceiverIsHandedTheValueAndPosted) {
  ManualScheduler ms;
  Channel<int> ch(4);
  ReceiveLog r;
  SendLog s;
  detach(ms, receive_n(ch, 1, r));
  ms.run_next();
  EXPECT_EQ(ms.ready(), 0u) << "a receive on an empty channel waits";
  detach(ms, send_values(ch, {5}, s));
  ms.run_next();
  EXPECT_TRUE(s.finished) << "a send to a waiting receiver does not wait";
  EXPECT_EQ(ch.size(), 0u) << "the value went to the receiver, not the buffer";
  EXPECT_TRUE(r.values.empty()) << "the receiver ran inside the send";
  EXPECT_EQ(ms.ready(), 1u);
  ms.run_until_idle();
  EXPECT_EQ(r.values, (std::vector<int>{5}));
}

// ---------------------------------------------------------------- [RT-7.3]

// spec: [RT-7.3]
TEST(Channel, SendAfterCloseThrowsChannelClosedError) {
  ManualScheduler ms;
  Channel<int> ch(4);
  ch.close();
  EXPECT_TRUE(ch.is_closed());
  int v = 1;
  EXPECT_THROW((void)ch.try_send(v), ChannelClosedError);
  SendLog s;
  turnstile_test::run_detached(ms, send_values(ch, {1, 2}, s));
  EXPECT_TRUE(s.failed_closed);
  EXPECT_EQ(s.sent, 0);
  EXPECT_EQ(ch.size(), 0u);
}

// spec: [RT-7.3] [RT-7.1]
TEST(Channel, CloseFailsWaitingSendersAndKeepsTheBuffer) {
  ManualScheduler ms;
  Channel<int> ch(1);
  SendLog a;
  SendLog b;
  detach(ms, send_values(ch, {1, 2}, a));  // 1 buffered, 2 waits
  detach(ms, send_values(ch, {3}, b));     // waits
  ms.run_until_idle();
  EXPECT_EQ(ms.ready(), 0u);
  EXPECT_EQ(a.sent, 1);
  EXPECT_EQ(b.sent, 0);

  ch.close();
  EXPECT_FALSE(a.finished) << "a waiting sender was resumed inside close()";
  EXPECT_EQ(ms.ready(), 2u) << "every waiting sender is posted";
  ms.run_until_idle();
  EXPECT_TRUE(a.failed_closed);
  EXPECT_TRUE(b.failed_closed);
  EXPECT_EQ(a.sent, 1);
  EXPECT_EQ(b.sent, 0);

  ReceiveLog r;
  turnstile_test::run_detached(ms, receive_n(ch, 3, r));
  EXPECT_EQ(r.values, (std::vector<int>{1})) << "buffered values survive close";
  EXPECT_EQ(r.nullopts, 2) << "after the drain, receive keeps returning nullopt";
}

// spec: [RT-7.3]
TEST(Channel, ReceiversDrainTheBufferThenGetNullopt) {
  ManualScheduler ms;
  Channel<int> ch(3);
  int v;
  for (int i = 1; i <= 3; ++i) {
    v = i;
    ASSERT_TRUE(ch.try_send(v));
  }
  ch.close();
  ReceiveLog r;
  detach(ms, receive_n(ch, 5, r));
  EXPECT_EQ(ms.run_until_idle(), 1u) << "draining a closed channel never waits";
  EXPECT_EQ(r.values, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(r.nullopts, 2);
}

// spec: [RT-7.3] [RT-4.2]
TEST(Channel, CloseWakesWaitingReceiversWithNulloptAndIsIdempotent) {
  ManualScheduler ms;
  Channel<int> ch(2);
  ReceiveLog r1;
  ReceiveLog r2;
  detach(ms, receive_all(ch, r1));
  turnstile_test::run_detached(ms, receive_all(ch, r2));
  EXPECT_EQ(ms.ready(), 0u);
  ch.close();
  EXPECT_FALSE(r1.finished) << "a receiver ran inside close()";
  EXPECT_EQ(ms.ready(), 2u);
  ch.close();  // idempotent: nobody is woken twice, nothing throws
  EXPECT_TRUE(ch.is_closed());
  EXPECT_EQ(ms.ready(), 2u);
  ms.run_until_idle();
  EXPECT_TRUE(r1.finished);
  EXPECT_TRUE(r2.finished);
  EXPECT_EQ(r1.nullopts, 1);
  EXPECT_EQ(r2.nullopts, 1);
  EXPECT_TRUE(r1.values.empty());
}

// spec: [RT-7.3] [RT-4.2]
TEST(Channel, CapacityZeroIsARendezvous) {
  ManualScheduler ms;
  Channel<int> ch(0);
  int v = 1;
  EXPECT_FALSE(ch.try_send(v)) << "no receiver waits: nothing can take the value";

  // Sender first: it waits until a receiver takes the value.
  SendLog s;
  ReceiveLog r;
  detach(ms, send_values(ch, {42}, s));
  ms.run_next();
  EXPECT_EQ(s.sent, 0) << "a send on a rendezvous channel completed without a receiver";
  EXPECT_EQ(ch.size(), 0u) << "a rendezvous channel buffers nothing";
  detach(ms, receive_n(ch, 1, r));
  ms.run_next();
  EXPECT_EQ(r.values, (std::vector<int>{42}));
  EXPECT_EQ(s.sent, 0) << "the sender was resumed inside the receive";
  EXPECT_EQ(ms.ready(), 1u);
  ms.run_until_idle();
  EXPECT_EQ(s.sent, 1);

  // Receiver first: the send hands over directly and does not wait.
  ReceiveLog r2;
  detach(ms, receive_n(ch, 1, r2));
  ms.run_next();
  v = 43;
  EXPECT_TRUE(ch.try_send(v)) << "a waiting receiver can take the value";
  EXPECT_EQ(ch.size(), 0u);
  ms.run_until_idle();
  EXPECT_EQ(r2.values, (std::vector<int>{43}));
}

// ------------------------------------------------------- the non-waiting forms

// try_receive is receive() without the wait: the oldest value or nullopt, on
// any thread, never a throw (closed and drained is nullopt, as for receive()).
// spec: [RT-7.1] [RT-7.2] [RT-7.3] [RT-4.2]
TEST(Channel, TryReceiveTakesTheOldestValueOrNulloptAndNeverWaits) {
  ManualScheduler ms;
  Channel<int> ch(2);
  EXPECT_EQ(ch.try_receive(), std::nullopt) << "empty: nothing now";
  int one = 1, two = 2;
  ASSERT_TRUE(ch.try_send(one));
  ASSERT_TRUE(ch.try_send(two));
  SendLog waiting;
  detach(ms, send_values(ch, {3}, waiting));  // the buffer is full: it waits
  ms.run_until_idle();
  EXPECT_EQ(waiting.sent, 0);
  EXPECT_EQ(ch.try_receive(), 1) << "oldest first";
  EXPECT_FALSE(waiting.finished) << "the released sender is posted, not run inside try_receive";
  EXPECT_EQ(ms.ready(), 1u);
  ms.run_until_idle();
  EXPECT_TRUE(waiting.finished);
  ch.close();
  EXPECT_EQ(ch.try_receive(), 2) << "close keeps the buffer";
  EXPECT_EQ(ch.try_receive(), 3);
  EXPECT_EQ(ch.try_receive(), std::nullopt) << "closed and drained: nullopt, no throw";
  EXPECT_TRUE(ch.is_closed());
}

// spec: [RT-7.3] [RT-7.1]
TEST(Channel, TryReceiveTakesStraightFromAWaitingSenderAtCapacityZero) {
  ManualScheduler ms;
  Channel<int> ch(0);
  EXPECT_EQ(ch.try_receive(), std::nullopt);
  SendLog s;
  turnstile_test::run_detached(ms, send_values(ch, {9}, s));
  EXPECT_FALSE(s.finished) << "a rendezvous send waits for a receiver";
  EXPECT_EQ(ch.try_receive(), 9);
  ms.run_until_idle();
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.sent, 1);
}

}  // namespace
