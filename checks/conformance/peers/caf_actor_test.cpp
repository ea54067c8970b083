// A peer of the turns contract classified: CAF 0.17 (the C++ Actor Framework),
// its actors traced through spec/trace-format.md section 1.3 and checked by the
// built turnstile-oracle (`check --json`), asserting its exact verdict.
//
// An actor is an activation ("A", "B"); a message handler's run is a serial
// turn on the actor's fiber (fiber = the actor's name: CAF runs one handler of
// an actor at a time); the scoped_actor of the test is fiber "main". Each
// message carries its call id. What the instrumentation reports, and nothing
// else:
//   - `request(dest, timeout, ...)` or `send(...)` -> turn.call (mode serial),
//     emitted before the message is handed to CAF;
//   - `.await(...)` / `.receive(...)` of that request -> turn.await, emitted
//     before the wait begins (the awaiting actor runs no other message then);
//   - a handler starts -> turn.start; its result settles (returned, delivered
//     through its response promise, or thrown) -> turn.end, ok or error;
//   - an awaited request's timeout fires (the await's error handler gets
//     `sec::request_timeout`) -> turn.await_abandoned (reason "timeout"), the
//     optional event of spec/trace-format.md section 1.3, before the handler
//     goes on: the handler stopped waiting; the request itself is not cancelled.
// Verdict (what the oracle says): a self-request awaited by its own handler
// and a request chain A -> B -> A hang until CAF's request timeout ([TURN-7.1],
// the cycle named hop by hop: one root, the timeout is how CAF leaves it); a
// finite timeout alone abandons the await and breaks no rule (the turn ends
// after its await was given up, the request runs on and its answer is
// dropped); a throwing handler kills the actor, so a later call never starts
// ([TURN-2.1]); a high-priority message jumps the queue ([TURN-2.2]). Each is
// asserted exactly: the set of rules, the count, the hops or calls named.
// (Without the abandon on the trace, as format 1 had it before, the oracle
// read each timeout as a turn ending mid-wait, [TURN-1.1], a second root beside
// the hang: corpus/bad/TURN-1.1.turn-ends-at-its-first-await.jsonl keeps that
// reading.)
// Order between threads comes from CAF's own waiting (a scoped_actor's receive)
// and from promises the handlers fulfil; no sleeps. The one timing assumption
// is CAF's: a 50 ms request timeout fires long before a 10 s one.
#include "peer_trace.hpp"

#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using ping_atom = caf::atom_constant<caf::atom("ping")>;

namespace {

using nlohmann::json;
using turnstile_peers::oracle_check;
using turnstile_peers::PeerTrace;
using turnstile_peers::temp_trace;
using turnstile_peers::Verdict;

constexpr auto k_short = std::chrono::milliseconds(50);  // the timeout that fires
constexpr auto k_long = std::chrono::seconds(10);        // one that must not

std::string caf_impl() { return "CAF " + std::to_string(CAF_VERSION / 10000) + "." +
                                std::to_string(CAF_VERSION / 100 % 100) + "." + std::to_string(CAF_VERSION % 100); }

void call(PeerTrace& t, const std::string& fiber, const std::string& act, const std::string& id) {
  t.emit(fiber, "turn.call", json{{"act", act}, {"call", id}, {"method", "ping"}, {"mode", "serial"}});
}
void await(PeerTrace& t, const std::string& fiber, const std::string& act, const std::string& id) {
  t.emit(fiber, "turn.await", json{{"act", act}, {"call", id}});
}
void start(PeerTrace& t, const std::string& act, const std::string& id) {
  t.emit(act, "turn.start", json{{"act", act}, {"call", id}});
}
void abandon(PeerTrace& t, const std::string& fiber, const std::string& act, const std::string& id) {
  t.emit(fiber, "turn.await_abandoned", json{{"act", act}, {"call", id}, {"reason", "timeout"}});
}
void end(PeerTrace& t, const std::string& act, const std::string& id, bool ok) {
  t.emit(act, "turn.end", json{{"act", act}, {"call", id}, {"outcome", ok ? "ok" : "error"}});
}

// A system with enough workers that one blocked handler stalls nothing else.
struct System {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  System() {
    cfg.set("scheduler.max-threads", 4);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

// Shared by an actor's handlers and the test: what CAF answered, and a signal
// when the last expected turn has ended (the trace is then quiescent).
struct Observed {
  std::promise<void> last_turn_ended;
  std::promise<caf::error> timeout_seen;  // the error an awaiting handler got
};

// An actor `name`: on call `first`, requests `next_call` of `next` (the actor
// `next_name`, or itself when `next` is null) with `timeout` and awaits it;
// any other call just runs. The call `last` signals the end.
struct Awaits {
  std::string first;
  std::string next_call;
  std::string next_name;
  caf::actor* next;
  caf::duration timeout;
  std::string last;
};

caf::behavior awaiting_actor(caf::event_based_actor* self, PeerTrace* t, std::string name, Awaits how,
                             Observed* seen) {
  const std::string first = how.first;
  const std::string next_call = how.next_call;
  const std::string last = how.last;
  caf::actor* next = how.next;
  const caf::duration timeout = how.timeout;
  const std::string act = next != nullptr ? how.next_name : name;
  return {
      [=](ping_atom, const std::string& id) -> caf::result<std::string> {
        start(*t, name, id);
        if (id != first) {
          end(*t, name, id, true);
          if (id == last) seen->last_turn_ended.set_value();
          return id;
        }
        auto rp = self->make_response_promise<std::string>();
        const caf::actor dest = next != nullptr ? *next : caf::actor_cast<caf::actor>(self);
        call(*t, name, act, next_call);
        await(*t, name, act, next_call);
        self->request(dest, timeout, ping_atom::value, next_call)
            .await([=](const std::string& r) mutable {
                     end(*t, name, id, true);
                     rp.deliver(r);
                   },
                   [=](caf::error& e) mutable {
                     if (e == caf::sec::request_timeout) {  // the await gave up; the request goes on
                       abandon(*t, name, act, next_call);
                       seen->timeout_seen.set_value(e);
                     }
                     end(*t, name, id, false);
                     rp.deliver(e);
                   });
        return rp;
      },
  };
}

// A detached actor (a thread of its own, so blocking stalls no worker) whose
// turn of `call` blocks until `release` is set; `started` is set once that
// turn began, `all_ended` once `turns` turns have ended.
struct Gate {
  Gate(std::string blocking_call, int turn_count) : call(std::move(blocking_call)), turns(turn_count) {}
  std::string call;
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> turns;
  std::promise<void> all_ended;
};

caf::behavior gated_actor(caf::event_based_actor* /*self*/, PeerTrace* t, std::string name, Gate* g) {
  return {
      [=](ping_atom, const std::string& id) -> std::string {
        start(*t, name, id);
        if (id == g->call) {
          g->started.set_value();
          g->released.wait();
        }
        end(*t, name, id, true);
        if (g->turns.fetch_sub(1, std::memory_order_acq_rel) == 1) g->all_ended.set_value();  // pairs with itself
        return id;
      },
  };
}

// An actor whose handler throws (after its turn's result, the exception, settled).
caf::behavior throwing_actor(caf::event_based_actor* /*self*/, PeerTrace* t) {
  return {
      [=](ping_atom, const std::string& id) -> std::string {
        start(*t, "A", id);
        end(*t, "A", id, false);
        throw std::runtime_error("the handler of " + id + " throws");
      },
  };
}

// main requests `id` of `act` and waits for the answer; returns the error, if any.
caf::error main_request(PeerTrace& t, caf::scoped_actor& self, const caf::actor& dest,
                        const std::string& act, const std::string& id) {
  call(t, "main", act, id);
  await(t, "main", act, id);
  caf::error got;
  self->request(dest, k_long, ping_atom::value, id)
      .receive([&](const std::string&) {}, [&](caf::error& e) { got = std::move(e); });
  return got;
}

// spec: [TURN-7.1] [TURN-1.1]
TEST(CafActorPeer, SelfRequestAwaitedByItsOwnHandlerHangsUntilTheTimeout) {
  PeerTrace t(caf_impl(), "caf-self-request-await");
  System s;
  Observed seen;
  auto a = s.sys->spawn(awaiting_actor, &t, std::string("A"),
                        Awaits{"c1", "c2", "A", nullptr, caf::duration{k_short}, "c2"}, &seen);
  caf::scoped_actor self{*s.sys};
  const caf::error got = main_request(t, self, a, "A", "c1");
  seen.last_turn_ended.get_future().wait();  // the self-request ran once the await gave up
  const Verdict v = oracle_check(t.finish(temp_trace("caf_self_await.jsonl")));
  EXPECT_EQ(got, caf::sec::request_timeout);  // CAF's answer: the timeout, passed on by A
  EXPECT_EQ(v.exit, 1);
  // One root: the cycle. The timeout abandoned the await (on the trace), so
  // c1's end after it is no turn ending mid-wait.
  EXPECT_EQ(v.rules(), (std::set<std::string>{"TURN-7.1"})) << v.dump();
  ASSERT_EQ(v.violations.size(), 1U) << v.dump();
  const std::string msg = v.of("TURN-7.1")[0].value("message", "");
  EXPECT_NE(msg.find("turn 'c1' of 'A' awaits call 'c2' into 'A', which is queued behind turn 'c1' of 'A'"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("was not refused: a possible hang"), std::string::npos) << msg;
}

// spec: [TURN-7.1] [TURN-1.1]
TEST(CafActorPeer, RequestCycleAToBToAHangsUntilTheTimeoutEveryHopNamed) {
  PeerTrace t(caf_impl(), "caf-cycle-a-b-a");
  System s;
  Observed seen_a;
  Observed seen_b;
  caf::actor a_handle;  // B's target, set once A exists (before any message)
  auto b = s.sys->spawn(awaiting_actor, &t, std::string("B"),
                        Awaits{"c2", "c3", "A", &a_handle, caf::duration{k_short}, "none"}, &seen_b);
  auto a = s.sys->spawn(awaiting_actor, &t, std::string("A"),
                        Awaits{"c1", "c2", "B", &b, caf::infinite, "c3"}, &seen_a);  // B's timeout ends it
  a_handle = a;
  caf::scoped_actor self{*s.sys};
  const caf::error got = main_request(t, self, a, "A", "c1");
  seen_a.last_turn_ended.get_future().wait();  // A ran c3 after its own turn ended
  const Verdict v = oracle_check(t.finish(temp_trace("caf_cycle.jsonl")));
  EXPECT_EQ(seen_b.timeout_seen.get_future().get(), caf::sec::request_timeout);  // B's 50 ms wait ended it
  EXPECT_EQ(got, caf::sec::request_timeout);  // passed on by B, then by A
  EXPECT_EQ(v.exit, 1);
  // One root: the cycle, every hop named; B's timeout abandoned its await of
  // c3 (on the trace) and ended c2, whose error then ended A's c1.
  EXPECT_EQ(v.rules(), (std::set<std::string>{"TURN-7.1"})) << v.dump();
  ASSERT_EQ(v.violations.size(), 1U) << v.dump();
  const std::string msg = v.of("TURN-7.1")[0].value("message", "");
  for (const char* hop : {"turn 'c2' of 'B' awaits call 'c3' into 'A'", "which is queued behind turn 'c1' of 'A'",
                          "which awaits call 'c2' into 'B'", "was not refused: a possible hang"})
    EXPECT_NE(msg.find(hop), std::string::npos) << hop << ": " << msg;
}

// A finite timeout abandons the await: the turn ends after it gave up
// waiting, which breaks no rule; the request is not cancelled (B's c2 runs to
// its end after A's c1 ended, and its answer is dropped).
// spec: [TURN-1.1]
TEST(CafActorPeer, AFiniteRequestTimeoutAbandonsTheAwaitAndBreaksNoRule) {
  PeerTrace t(caf_impl(), "caf-timeout-mid-wait");
  System s;
  Gate gate("c2", 1);
  Observed seen;
  caf::actor b = s.sys->spawn<caf::detached>(gated_actor, &t, std::string("B"), &gate);
  auto a = s.sys->spawn(awaiting_actor, &t, std::string("A"),
                        Awaits{"c1", "c2", "B", &b, caf::duration{k_short}, "none"}, &seen);
  caf::scoped_actor self{*s.sys};
  const caf::error got = main_request(t, self, a, "A", "c1");  // B's turn holds c2 meanwhile
  gate.release.set_value();
  gate.all_ended.get_future().wait();  // B's c2 has ended: nothing is left open
  const std::string path = t.finish(temp_trace("caf_timeout.jsonl"));
  const Verdict v = oracle_check(path);
  EXPECT_EQ(got, caf::sec::request_timeout);
  EXPECT_EQ(v.exit, 0) << v.dump();
  EXPECT_TRUE(v.violations.empty()) << v.dump();
  // What the trace says happened, in this order: A abandoned its await of c2,
  // A's c1 ended with the timeout's error, then B's c2 ended.
  std::ifstream in(path);
  std::vector<std::string> seen_events;
  for (std::string line; std::getline(in, line);) {
    const json e = json::parse(line);
    const std::string what = e.value("ev", "") + " " + e.value("call", "");
    if (what == "turn.await_abandoned c2" || what == "turn.end c1" || what == "turn.end c2") seen_events.push_back(what);
  }
  EXPECT_EQ(seen_events, (std::vector<std::string>{"turn.await_abandoned c2", "turn.end c1", "turn.end c2"}));
}

// spec: [TURN-2.1] [TURN-2.5]
TEST(CafActorPeer, AThrowingHandlerKillsTheActorSoTheNextCallNeverStarts) {
  PeerTrace t(caf_impl(), "caf-throwing-handler");
  System s;
  auto a = s.sys->spawn(throwing_actor, &t);
  caf::scoped_actor self{*s.sys};
  const caf::error first = main_request(t, self, a, "A", "c1");
  const caf::error second = main_request(t, self, a, "A", "c2");  // A is gone: CAF answers at once
  const Verdict v = oracle_check(t.finish(temp_trace("caf_throwing.jsonl")));
  EXPECT_TRUE(first) << "the throwing call's caller gets an error";
  EXPECT_EQ(second, caf::sec::request_receiver_down);
  EXPECT_EQ(v.exit, 1);
  EXPECT_EQ(v.rules(), (std::set<std::string>{"TURN-2.1"})) << v.dump();
  ASSERT_EQ(v.violations.size(), 1U) << v.dump();
  EXPECT_NE(v.violations[0].value("message", "").find("call 'c2' on activation 'A' never started its turn"),
            std::string::npos) << v.dump();
}

// spec: [TURN-2.2] [TURN-2.4]
TEST(CafActorPeer, AHighPriorityMessageJumpsTheQueue) {
  PeerTrace t(caf_impl(), "caf-high-priority");
  System s;
  Gate gate("c1", 4);
  caf::actor a = s.sys->spawn<caf::detached>(gated_actor, &t, std::string("A"), &gate);
  caf::scoped_actor self{*s.sys};
  call(t, "main", "A", "c1");
  self->send(a, ping_atom::value, std::string("c1"));
  gate.started.get_future().wait();  // c1's turn holds A while c2, c3, c4 queue
  call(t, "main", "A", "c2");
  self->send(a, ping_atom::value, std::string("c2"));
  call(t, "main", "A", "c3");
  self->send(a, ping_atom::value, std::string("c3"));
  call(t, "main", "A", "c4");
  self->send<caf::message_priority::high>(a, ping_atom::value, std::string("c4"));
  gate.release.set_value();
  gate.all_ended.get_future().wait();
  const Verdict v = oracle_check(t.finish(temp_trace("caf_priority.jsonl")));
  EXPECT_EQ(v.exit, 1);
  EXPECT_EQ(v.rules(), (std::set<std::string>{"TURN-2.2"})) << v.dump();
  ASSERT_FALSE(v.violations.empty());
  EXPECT_NE(v.violations[0].value("message", "").find("'c4'"), std::string::npos) << v.dump();
}

}  // namespace
