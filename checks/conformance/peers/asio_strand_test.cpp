// A peer classified (issue 14): asio::strand, a library nobody here wrote,
// traced through spec/trace-format.md section 1.1 as a lane and checked by
// the built turnstile-oracle (`check --json`), asserting its exact verdict.
//
// The strand is lane "L0". Work is lane-shaped: a handler is a turn
// (lane.turn_start / lane.turn_end on the io thread that runs it, fiber
// "io:N"); submissions come from plain threads ("t0".."t2"):
//   - asio::post            -> op "post";
//   - asio::dispatch from a thread outside the strand: asio queues it like a
//     post (the caller does not run the io_context) -> op "post";
//   - post and wait for the handler (a promise)    -> op "run", and
//     lane.resumed on the waiting thread after the handler returned;
//   - asio::dispatch from inside the strand (a handler dispatching to its own
//     strand): asio runs it inline, before dispatch returns -> op "run" (the
//     caller continues only once it ran, as after an awaited run), its turn
//     nested in the dispatching handler's, lane.resumed on the dispatcher.
// Emission is ordered with the change it reports ([TRACE-1.1]): the submit
// and accepted events and the asio::post are made under one lock, so the
// trace's order of acceptance is the strand's queue order.
//
// Verdict (what the oracle says, README.md "A peer classified"): posts and
// outside dispatches from three threads keep one turn at a time and FIFO (no
// violation); an inside dispatch is a reentrant run that was accepted and run
// inline: one [LANE-5.3] root, with its consequences on the trace (marked so
// by the oracle): its turn opens inside the dispatcher's ([LANE-5.1]), ahead
// of an item queued before it ([LANE-5.2]), and the dispatcher continues
// inside its own turn ([LANE-5.6]).
#include "peer_trace.hpp"

#include <gtest/gtest.h>

#include <asio.hpp>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

thread_local std::string t_fiber = "main";  // the emitting thread's fiber id

// The shared trace (peer_trace.hpp), each event on the emitting thread's fiber.
class Trace : public turnstile_peers::PeerTrace {
 public:
  explicit Trace(const std::string& scenario)
      : PeerTrace(std::string("asio::strand (asio ") + std::to_string(ASIO_VERSION) + ")", scenario) {}
  // Caller holds mu().
  void emit_locked(const std::string& ev, json fields) { PeerTrace::emit_locked(t_fiber, ev, std::move(fields)); }
  void emit(const std::string& ev, json fields) { PeerTrace::emit(t_fiber, ev, std::move(fields)); }
};

json item(const std::string& id) { return json{{"lane", "L0"}, {"item", id}}; }

// A lane-shaped handler: one turn, with an independent check that no two
// threads run handlers of the strand at once (an inline dispatch nests on
// the same thread, which is not an overlap).
class Exclusive {
 public:
  void enter() {
    std::lock_guard lock(mu_);
    if (depth_ > 0 && owner_ != std::this_thread::get_id()) ++overlaps_;
    owner_ = std::this_thread::get_id();
    ++depth_;
  }
  void leave() {
    std::lock_guard lock(mu_);
    --depth_;
  }
  int overlaps() {
    std::lock_guard lock(mu_);
    return overlaps_;
  }

 private:
  std::mutex mu_;
  std::thread::id owner_;
  int depth_ = 0;
  int overlaps_ = 0;
};

template <class Body>
auto turn(Trace& t, Exclusive& x, std::string id, Body body) {
  return [&t, &x, id = std::move(id), body = std::move(body)]() mutable {
    x.enter();
    t.emit("lane.turn_start", item(id));
    body();
    t.emit("lane.turn_end", json{{"lane", "L0"}, {"item", id}, {"outcome", "ok"}});
    x.leave();
  };
}

void start_io(asio::io_context& io, std::vector<std::thread>& threads, int n) {
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&io, i] {
      t_fiber = "io:" + std::to_string(i);
      io.run();
    });
}

using turnstile_peers::oracle_check;
using turnstile_peers::Verdict;
std::filesystem::path temp(const std::string& name) { return turnstile_peers::temp_trace(name); }

// spec: [LANE-5.1] [LANE-5.2] [LANE-5.6] [TRACE-1.1]
TEST(AsioStrandPeer, PostsAndOutsideDispatchesKeepOneTurnAtATimeAndFifo) {
  Trace t("asio-strand-posts");
  Exclusive x;
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  auto strand = asio::make_strand(io);
  std::vector<std::thread> workers;
  start_io(io, workers, 3);
  std::vector<std::thread> submitters;
  for (int s = 0; s < 3; ++s) {
    submitters.emplace_back([&, s] {
      t_fiber = "t" + std::to_string(s);
      for (int k = 0; k < 40; ++k) {
        const std::string id = "t" + std::to_string(s) + "-" + std::to_string(k);
        const int kind = (k * 7 + s) % 5;  // 0,1,2: post; 3: dispatch from outside; 4: run
        if (kind == 4) {
          std::promise<void> done;
          {
            std::lock_guard lock(t.mu());
            t.emit_locked("lane.submit", json{{"lane", "L0"}, {"item", id}, {"op", "run"}});
            t.emit_locked("lane.accepted", item(id));
            asio::post(strand, turn(t, x, id, [] {}));
            asio::post(strand, [&done] { done.set_value(); });  // after the turn_end
          }
          done.get_future().wait();
          t.emit("lane.resumed", json{{"lane", "L0"}, {"item", id}, {"outcome", "ok"}});
          continue;
        }
        std::lock_guard lock(t.mu());
        t.emit_locked("lane.submit", json{{"lane", "L0"}, {"item", id}, {"op", "post"}});
        t.emit_locked("lane.accepted", item(id));
        if (kind == 3) asio::dispatch(strand, turn(t, x, id, [] {}));  // not in the strand: queued
        else asio::post(strand, turn(t, x, id, [] {}));
      }
    });
  }
  for (auto& th : submitters) th.join();
  guard.reset();
  for (auto& th : workers) th.join();
  const Verdict v = oracle_check(t.finish(temp("asio_strand_posts.jsonl")));
  EXPECT_EQ(x.overlaps(), 0);
  EXPECT_EQ(v.exit, 0);
  EXPECT_TRUE(v.violations.empty()) << json(v.violations).dump(2);
}

// spec: [LANE-5.3] [LANE-5.1] [LANE-5.2] [LANE-5.6] [TRACE-5.1]
TEST(AsioStrandPeer, DispatchFromInsideTheStrandRunsInlineAndBreaksLane53) {
  Trace t("asio-strand-inside-dispatch");
  Exclusive x;
  asio::io_context io;
  auto strand = asio::make_strand(io);
  t_fiber = "t0";
  // A's handler dispatches B to its own strand; C is queued behind A before
  // any io thread runs (io.run() starts after the posts), so it is deterministic.
  auto b = turn(t, x, "B", [] {});
  auto a = turn(t, x, "A", [&t, &strand, b]() mutable {
    t.emit("lane.submit", json{{"lane", "L0"}, {"item", "B"}, {"op", "run"}});
    t.emit("lane.accepted", item("B"));
    asio::dispatch(strand, b);  // running in this strand: invoked here, now
    t.emit("lane.resumed", json{{"lane", "L0"}, {"item", "B"}, {"outcome", "ok"}});
  });
  for (const auto& [id, work] : {std::pair<std::string, std::function<void()>>{"A", a},
                                 std::pair<std::string, std::function<void()>>{"C", turn(t, x, "C", [] {})}}) {
    std::lock_guard lock(t.mu());
    t.emit_locked("lane.submit", json{{"lane", "L0"}, {"item", id}, {"op", "post"}});
    t.emit_locked("lane.accepted", item(id));
    asio::post(strand, work);
  }
  std::vector<std::thread> workers;
  start_io(io, workers, 2);
  for (auto& th : workers) th.join();
  const std::string file = t.finish(temp("asio_strand_inside.jsonl"));
  const Verdict v = oracle_check(file);
  EXPECT_EQ(x.overlaps(), 0);  // no two threads at once: the strand's own promise holds
  EXPECT_EQ(v.exit, 1);
  std::set<std::string> rules;
  for (const auto& viol : v.violations) rules.insert(viol.value("rule", "?"));
  EXPECT_EQ(rules, (std::set<std::string>{"LANE-5.3", "LANE-5.1", "LANE-5.2", "LANE-5.6"}))
      << json(v.violations).dump(2);
  // Every violation is about B, the inline dispatch, and each rule once; one
  // root, the [LANE-5.3], and what the inline run does on the trace (it opens
  // inside A's turn, ahead of C, and A goes on inside its own turn) names it
  // (spec/trace-format.md section 4.1 A6).
  EXPECT_EQ(v.violations.size(), rules.size()) << json(v.violations).dump(2);
  for (const auto& viol : v.violations) {
    EXPECT_NE(viol.value("message", "").find("'B'"), std::string::npos) << viol.dump();
    const bool root = Verdict::is_root(viol);
    if (viol.value("rule", "") == "LANE-5.3") {
      EXPECT_TRUE(root) << viol.dump();
    } else {
      ASSERT_FALSE(root) << viol.dump();
      EXPECT_EQ(viol["consequence_of"].value("rule", ""), "LANE-5.3") << viol.dump();
    }
  }
}

}  // namespace
