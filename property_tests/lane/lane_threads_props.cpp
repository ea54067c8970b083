// property_tests/lane/lane_threads_props.cpp: the state lane on real threads.
//
// The ManualScheduler suite (lane_props.cpp) explores interleavings one step at
// a time; this one lets the OS interleave. A ThreadPool of 1..4 carriers runs
// the lane's drain; 1..4 producer threads submit a generated mix of run /
// later / dropped / try_post / close, each either directly from its plain
// thread (run() awaited with sync_wait) or from a fiber it starts on the pool
// (so submissions also come from the carriers, from inside drain steps' peers).
// Threads are released together by a latch; nothing sleeps.
//
// Checked for every generated workload:
//   - one turn at a time: an in-turn flag is raised with an exchange and every
//     turn appends to a plain, unsynchronised log (under the tsan preset a
//     second concurrent turn is a reported race) [LANE-5.1];
//   - per-producer FIFO: a producer's accepted items (program order is
//     happens-before) run in the order it submitted them [LANE-5.2];
//   - nothing accepted is lost: every accepted item runs exactly once, nothing
//     refused runs, an awaited run() yields its own turn's log position or its
//     own exception, a throwing try_post reaches the error handler once
//     [LANE-7.5], [LANE-8.1];
//   - refused after close: after a producer's own close() every submission of
//     it is refused (run() throws LaneClosedError naming the lane, try_post
//     returns false), and a refusal is only ever seen once some close() was
//     called [LANE-7.4], [LANE-8.3];
//   - close drains: every close() completes once every accepted item has run
//     [LANE-7.6].
//
// A run whose last close() completes with accepted items not yet run (a lane
// that breaks [LANE-7.6] or [LANE-7.4]) leaks the lane instead of destroying
// it, so the property fails with a shrunk counterexample rather than the lane's
// destructor stopping the process; two turns at once shows as a tsan race on
// the log (and as `overlaps` elsewhere, if the heap survives it).
//
// RC_PARAMS for the ctest: TURNSTILE_LANE_THREADS_RC_PARAMS (CMakeLists.txt,
// max_success=1000: about 0.6 s in the default build, 5 s under tsan on 2 cores).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <iterator>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/sync_wait.hpp"
#include "turnstile/task.hpp"
#include "turnstile_test/outcome.hpp"

namespace turnstile::prop::lane_threads {
namespace {

// ------------------------------------------------------------------ workload

enum class Op { kRun, kLater, kDropped, kPost, kPostBurst, kYield, kClose };

struct ProducerSpec {
  bool on_pool = false;  // submits from a fiber on the pool instead of its own thread
  std::vector<Op> ops;
  std::vector<bool> throws;  // per op (same length as ops)
};

struct Workload {
  std::size_t carriers = 1;
  std::vector<ProducerSpec> producers;
  bool producer_closes = true;  // else only the test thread closes, after the producers
  std::size_t closer = 0;       // the producer that closes (mod producers)
  std::size_t close_at = 0;     // before this op (clamped)
};

const char* name_of(Op op) {
  switch (op) {
    case Op::kRun: return "run";
    case Op::kLater: return "later";
    case Op::kDropped: return "dropped";
    case Op::kPost: return "post";
    case Op::kPostBurst: return "burst";
    case Op::kYield: return "yield";
    case Op::kClose: return "close";
  }
  return "?";
}

void showValue(const Workload& w, std::ostream& os) {
  os << "{carriers " << w.carriers << ", producers [";
  for (std::size_t p = 0; p < w.producers.size(); ++p) {
    const ProducerSpec& s = w.producers[p];
    os << (p ? ", " : "") << (s.on_pool ? "fiber[" : "thread[");
    for (std::size_t i = 0; i < s.ops.size(); ++i)
      os << (i ? " " : "") << name_of(s.ops[i]) << (s.throws[i] ? "!" : "");
    os << "]";
  }
  if (w.producer_closes) {
    os << "], closer " << w.closer % w.producers.size() << " at " << w.close_at << "}";
  } else {
    os << "], closed after the producers}";
  }
}

// Kinds by slots of a uniform number (shrinks towards run); close is rare, as
// one producer always closes anyway.
constexpr Op kSlots[] = {Op::kRun,       Op::kRun,       Op::kRun,       Op::kLater,
                         Op::kLater,     Op::kDropped,   Op::kDropped,   Op::kPost,
                         Op::kPost,      Op::kPost,      Op::kPost,      Op::kPostBurst,
                         Op::kPostBurst, Op::kPostBurst, Op::kPostBurst, Op::kYield,
                         Op::kYield,     Op::kClose};
constexpr std::size_t kBurst = 16;  // try_posts in one burst op

rc::Gen<ProducerSpec> gen_producer(std::size_t max_ops) {
  return rc::gen::mapcat(uniform_in(0, max_ops), [](std::size_t n) {
    return rc::gen::build<ProducerSpec>(
        rc::gen::set(&ProducerSpec::on_pool, rc::gen::arbitrary<bool>()),
        rc::gen::set(&ProducerSpec::ops,
                     rc::gen::container<std::vector<Op>>(
                         n, rc::gen::map(uniform_in(0, std::size(kSlots) - 1),
                                         [](std::size_t k) { return kSlots[k]; }))),
        rc::gen::set(&ProducerSpec::throws,
                     rc::gen::container<std::vector<bool>>(
                         n, rc::gen::map(uniform_in(0, 3), [](std::size_t x) { return x == 3; }))));
  });
}

rc::Gen<Workload> gen_workload() {
  constexpr std::size_t kMaxProducers = 4;
  constexpr std::size_t kMaxOps = 24;
  return rc::gen::build<Workload>(
      rc::gen::set(&Workload::carriers, uniform_in(1, 4)),
      rc::gen::set(&Workload::producers, vector_of<ProducerSpec>(1, kMaxProducers,
                                                                 gen_producer(kMaxOps))),
      rc::gen::set(&Workload::producer_closes,
                   rc::gen::map(uniform_in(0, 3), [](std::size_t x) { return x != 3; })),
      rc::gen::set(&Workload::closer, uniform_in(0, kMaxProducers - 1)),
      rc::gen::set(&Workload::close_at, uniform_in(0, kMaxOps)));
}

// ------------------------------------------------------------------- records

struct ItemError : std::runtime_error {
  explicit ItemError(int item) : std::runtime_error("item #" + std::to_string(item)), id(item) {}
  int id;
};

enum class Kind { kRun, kPost };

// One submission, written only by its producer (thread or fiber).
struct Sub {
  int id = -1;
  Kind kind = Kind::kRun;
  bool throws = false;
  bool awaited = false;
  bool after_own_close = false;  // the producer had called close() before it
  bool accepted = false;
  bool refused = false;
  bool refusal_named_lane = true;
  bool refused_before_any_close = false;
  bool resumed = false;
  std::optional<int> value;     // what co_await returned (its log position)
  std::optional<int> error_id;  // the ItemError it rethrew
  bool other_error = false;
};

struct CloseRec {
  bool done = false;
  std::size_t log_at_done = 0;
};

struct Producer {
  std::vector<Sub> subs;
  std::vector<CloseRec> closes;
  std::vector<std::string> errors;
};

// What the turns share. `log` is the lane's owned state: a plain vector that
// only turns touch (and readers that synchronised with the lane's close).
struct Shared {
  explicit Shared(const StateLane* l) : lane(l) {}
  const StateLane* lane;
  std::vector<int> log;            // owned by the lane
  std::atomic<bool> in_turn{false};
  std::atomic<int> overlaps{0};    // a turn started while another was in progress
  std::atomic<int> marker_wrong{0};
  std::atomic<std::size_t> ran{0};  // turns finished (read after close() completed)
  std::atomic<bool> close_called{false};  // set before the first close() call
  std::mutex handler_mu;
  std::map<int, int> handler_calls;  // guarded by handler_mu
};

// One turn's work: a plain callable returning its position in the log.
struct Work {
  Shared* s;
  int id;
  bool throws;
  int operator()() const {
    // acq_rel: pairs with the release store of the previous turn's end (and
    // with its exchange), so a second turn in progress shows as true here.
    if (s->in_turn.exchange(true, std::memory_order_acq_rel)) s->overlaps.fetch_add(1);
    if (StateLane::current() != s->lane) s->marker_wrong.fetch_add(1);
    const auto pos = static_cast<int>(s->log.size());
    s->log.push_back(id);  // plain: the lane's single execution makes it safe [LANE-5.4]
    s->ran.fetch_add(1, std::memory_order_release);  // pairs with the acquire after close()
    s->in_turn.store(false, std::memory_order_release);  // pairs with the next exchange
    if (throws) throw ItemError(id);
    return pos;
  }
};

// --------------------------------------------------------------- a producer

// Submission helpers shared by the two producer kinds; the caller awaits.
class Submitter {
 public:
  Submitter(StateLane& lane, Shared& s, Producer& rec, int base)
      : lane_(lane), s_(s), rec_(rec), base_(base) {}

  // run(): the Task when accepted, recorded either way.
  std::optional<Task<int>> run(bool throws, bool awaited) {
    Sub& sub = new_sub(Kind::kRun, throws);
    sub.awaited = awaited;
    try {
      Task<int> t = lane_.run(Work{&s_, sub.id, throws});
      sub.accepted = true;
      return std::optional<Task<int>>(std::move(t));
    } catch (const LaneClosedError& e) {
      refused(sub, std::string(e.what()).find(lane_.name()) != std::string::npos);
    } catch (const std::exception& e) {
      rec_.errors.push_back("run #" + std::to_string(sub.id) + " threw " + e.what());
    }
    return std::nullopt;
  }

  void post(bool throws) {
    Sub& sub = new_sub(Kind::kPost, throws);
    if (lane_.try_post(Work{&s_, sub.id, throws})) {
      sub.accepted = true;
    } else {
      refused(sub, true);
    }
  }

  // Records what the awaiter of item `index` got.
  Task<> await_item(std::size_t index, Task<int> t) {
    Task<turnstile_test::Settled<int>> settling = turnstile_test::settle<ItemError>(std::move(t));
    const turnstile_test::Settled<int> settled = co_await std::move(settling);
    Sub& sub = rec_.subs[index];
    sub.resumed = true;
    sub.value = settled.value;
    sub.error_id = settled.error_id;
    sub.other_error = settled.other;
  }

  // Op i of `spec` when it never waits, made alike by both producers (a kLater
  // run is kept for take_later()); false for the others (run, yield, close),
  // which each producer waits for in its own way.
  bool submit_without_waiting(const ProducerSpec& spec, std::size_t i) {
    const bool throws = spec.throws[i];
    switch (spec.ops[i]) {
      case Op::kLater:
        if (auto t = run(throws, true)) later_.emplace_back(last_index(), std::move(*t));
        return true;
      case Op::kDropped: {
        auto t = run(throws, false);
        t.reset();  // never awaited: the item runs all the same [LANE-5.8]
        return true;
      }
      case Op::kPost:
        post(throws);
        return true;
      case Op::kPostBurst:
        for (std::size_t k = 0; k < kBurst; ++k) post(throws && k == 0);
        return true;
      default:
        return false;
    }
  }

  // lane.close(), recorded: close_called() before it, close_done() once it completed.
  Task<> close() {
    const std::size_t k = close_called();
    Task<> c = lane_.close();
    co_await std::move(c);
    close_done(k);
  }

  std::size_t close_called() {
    s_.close_called.store(true, std::memory_order_release);  // before close(): see refused()
    own_close_ = true;
    rec_.closes.emplace_back();
    return rec_.closes.size() - 1;
  }
  void close_done(std::size_t k) {
    // close() has completed: every turn happens-before this, so the owned log
    // may be read here.
    rec_.closes[k].done = true;
    rec_.closes[k].log_at_done = s_.log.size();
  }

  std::size_t last_index() const { return rec_.subs.size() - 1; }

  // The kLater runs not awaited yet, newest first (the awaiting order is not
  // the queue order): {item index, its Task}, or nullopt when none is left.
  std::optional<std::pair<std::size_t, Task<int>>> take_later() {
    if (later_.empty()) return std::nullopt;
    std::optional<std::pair<std::size_t, Task<int>>> next(std::move(later_.back()));
    later_.pop_back();
    return next;
  }

 private:
  Sub& new_sub(Kind kind, bool throws) {
    Sub sub;
    sub.id = base_ + static_cast<int>(rec_.subs.size());
    sub.kind = kind;
    sub.throws = throws;
    sub.after_own_close = own_close_;
    rec_.subs.push_back(sub);
    return rec_.subs.back();
  }
  void refused(Sub& sub, bool named) {
    sub.refused = true;
    sub.refusal_named_lane = named;
    // The refusal saw closed_ under the lane's mutex, set by a close() that
    // stored close_called first: acquire pairs with that release.
    sub.refused_before_any_close = !s_.close_called.load(std::memory_order_acquire);
  }

  StateLane& lane_;
  Shared& s_;
  Producer& rec_;
  int base_;
  bool own_close_ = false;
  std::vector<std::pair<std::size_t, Task<int>>> later_;  // see take_later()
};

// The producer's ops as a fiber on the pool: run() awaited with co_await.
Task<> fiber_producer(StateLane& lane, Shared& s, Producer& rec, int base, ProducerSpec spec) {
  Submitter sub(lane, s, rec, base);
  for (std::size_t i = 0; i < spec.ops.size(); ++i) {
    if (sub.submit_without_waiting(spec, i)) continue;
    switch (spec.ops[i]) {
      case Op::kRun:
        if (auto t = sub.run(spec.throws[i], true)) {
          Task<> a = sub.await_item(sub.last_index(), std::move(*t));
          co_await std::move(a);
        }
        break;
      case Op::kYield:
        co_await yield();
        break;
      case Op::kClose: {
        Task<> c = sub.close();
        co_await std::move(c);
        break;
      }
      default:
        break;
    }
  }
  while (auto next = sub.take_later()) {
    Task<> a = sub.await_item(next->first, std::move(next->second));
    co_await std::move(a);
  }
}

// The same ops from a plain thread: run() awaited with sync_wait.
void thread_producer(StateLane& lane, Shared& s, Producer& rec, int base, const ProducerSpec& spec) {
  Submitter sub(lane, s, rec, base);
  for (std::size_t i = 0; i < spec.ops.size(); ++i) {
    if (sub.submit_without_waiting(spec, i)) continue;
    switch (spec.ops[i]) {
      case Op::kRun:
        if (auto t = sub.run(spec.throws[i], true)) sync_wait(sub.await_item(sub.last_index(), std::move(*t)));
        break;
      case Op::kYield:
        std::this_thread::yield();
        break;
      case Op::kClose:
        sync_wait(sub.close());
        break;
      default:
        break;
    }
  }
  while (auto next = sub.take_later()) sync_wait(sub.await_item(next->first, std::move(next->second)));
}

// ------------------------------------------------------------------- the run

struct Outcome {
  std::vector<Producer> producers;
  std::vector<int> log;
  int overlaps = 0;
  int marker_wrong = 0;
  std::map<int, int> handler_calls;
  bool settled = true;  // every accepted item had run when the last close() completed
  std::size_t accepted = 0;
  std::size_t ran_at_final_close = 0;
};

constexpr int kIdsPerProducer = 10'000;

Outcome run_workload(const Workload& w) {
  std::vector<ProducerSpec> specs = w.producers;
  if (w.producer_closes) {
    ProducerSpec& closer = specs[w.closer % specs.size()];
    const std::size_t at = std::min(w.close_at, closer.ops.size());
    closer.ops.insert(closer.ops.begin() + static_cast<std::ptrdiff_t>(at), Op::kClose);
    closer.throws.insert(closer.throws.begin() + static_cast<std::ptrdiff_t>(at), false);
  }

  Outcome out;
  out.producers.resize(specs.size());
  ThreadPool pool(static_cast<unsigned>(w.carriers));
  {
    // On the heap: a run whose lane still has work after close() completed
    // leaks them (see below).
    auto lane_ptr = std::make_unique<StateLane>("threads-lane", pool);
    auto s_ptr = std::make_unique<Shared>(lane_ptr.get());
    StateLane& lane = *lane_ptr;
    Shared& s = *s_ptr;
    lane.set_error_handler([&s](const StateLane&, std::exception_ptr e) {
      try {
        std::rethrow_exception(std::move(e));
      } catch (const ItemError& ie) {
        std::lock_guard lock(s.handler_mu);
        ++s.handler_calls[ie.id];
      } catch (...) {
        std::lock_guard lock(s.handler_mu);
        ++s.handler_calls[-1];
      }
    });

    std::latch start(static_cast<std::ptrdiff_t>(specs.size()));
    std::vector<std::thread> threads;
    for (std::size_t p = 0; p < specs.size(); ++p) {
      threads.emplace_back([&, p] {
        Producer& rec = out.producers[p];
        const int base = static_cast<int>(p) * kIdsPerProducer;
        start.arrive_and_wait();  // every producer starts at once
        if (specs[p].on_pool) {
          sync_wait(pool, fiber_producer(lane, s, rec, base, specs[p]));
        } else {
          thread_producer(lane, s, rec, base, specs[p]);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    // Everything accepted has run once this close() (idempotent) completes;
    // then the lane may be destroyed [LANE-7.6].
    sync_wait(lane.close());
    out.overlaps = s.overlaps.load();
    out.marker_wrong = s.marker_wrong.load();
    for (const Producer& pr : out.producers)
      for (const Sub& sub : pr.subs) out.accepted += sub.accepted ? 1 : 0;
    out.ran_at_final_close = s.ran.load(std::memory_order_acquire);
    out.settled = out.ran_at_final_close == out.accepted;
    for (const Producer& pr : out.producers)
      for (const Sub& sub : pr.subs) out.settled = out.settled && !(sub.accepted && sub.after_own_close);
    if (!out.settled) {
      // A broken lane: turns may still be queued or running, so neither the
      // log nor the lane may be touched. Leak both (the pool's destructor
      // runs what is left against them) so the property fails with a
      // counterexample instead of the lane's destructor stopping the process.
      (void)lane_ptr.release();
      (void)s_ptr.release();
      return out;
    }
    out.log = s.log;
    std::lock_guard lock(s.handler_mu);
    out.handler_calls = s.handler_calls;
  }
  return out;
}

// spec: [LANE-5.1] [LANE-5.2] [LANE-7.4] [LANE-7.5] [LANE-7.6] [LANE-8.1] [LANE-8.2] [LANE-8.3]
RC_GTEST_PROP(LaneThreadsProperty, RealThreadsKeepExclusionFifoAndEveryAcceptedItem, ()) {
  const Workload w = *gen_workload().as("workload");
  const Outcome out = run_workload(w);

  for (std::size_t p = 0; p < out.producers.size(); ++p)
    for (const std::string& e : out.producers[p].errors) RC_LOG() << "producer " << p << ": " << e << "\n";
  RC_LOG() << out.ran_at_final_close << " of " << out.accepted
           << " accepted items had run when the last close() completed\n";
  // [LANE-7.6] close() completes after every accepted item ran, and [LANE-7.4]
  // nothing is accepted after it (checked first: otherwise nothing else can be
  // read safely).
  RC_ASSERT(out.settled);

  // [LANE-5.1] one turn at a time, always on the lane.
  RC_ASSERT(out.overlaps == 0);
  RC_ASSERT(out.marker_wrong == 0);

  // Where each item ran: exactly once, if accepted.
  std::map<int, std::size_t> ran_at;
  for (std::size_t pos = 0; pos < out.log.size(); ++pos) {
    const bool first = ran_at.emplace(out.log[pos], pos).second;
    RC_ASSERT(first);  // no item runs twice
  }

  std::size_t accepted = 0;
  bool refused_any = false;
  bool several_producers_accepted = false;
  std::size_t producers_with_accepted = 0;
  for (const Producer& pr : out.producers) {
    RC_ASSERT(pr.errors.empty());
    std::optional<std::size_t> last_pos;
    bool any = false;
    for (const Sub& sub : pr.subs) {
      RC_ASSERT(sub.accepted != sub.refused);
      if (sub.refused) {
        // [LANE-7.4] refused only once closed, and named.
        refused_any = true;
        RC_ASSERT(!sub.refused_before_any_close);
        RC_ASSERT(sub.refusal_named_lane);
        RC_ASSERT(ran_at.count(sub.id) == 0u);  // nothing refused runs
        continue;
      }
      // [LANE-7.4] after its own close(), a producer is always refused.
      RC_ASSERT(!sub.after_own_close);
      // [LANE-8.1] nothing accepted is lost.
      const auto it = ran_at.find(sub.id);
      RC_ASSERT(it != ran_at.end());
      ++accepted;
      any = true;
      // [LANE-5.2] a producer's own submissions run in its program order.
      if (last_pos) RC_ASSERT(it->second > *last_pos);
      last_pos = it->second;
      // [LANE-7.5] the awaiter gets its own turn's result or its own exception;
      // a throwing try_post reaches the handler once.
      if (sub.kind == Kind::kRun && sub.awaited) {
        RC_ASSERT(sub.resumed);
        RC_ASSERT(!sub.other_error);
        if (sub.throws) {
          RC_ASSERT(sub.error_id == std::optional<int>(sub.id));
        } else {
          RC_ASSERT(sub.value == std::optional<int>(static_cast<int>(it->second)));
        }
      }
      const auto h = out.handler_calls.find(sub.id);
      const int calls = h == out.handler_calls.end() ? 0 : h->second;
      RC_ASSERT(calls == (sub.kind == Kind::kPost && sub.throws ? 1 : 0));
    }
    producers_with_accepted += any ? 1 : 0;
    // [LANE-7.6] each close() completed after every accepted item had run.
    for (const CloseRec& c : pr.closes) {
      RC_ASSERT(c.done);
      RC_ASSERT(c.log_at_done == out.log.size());
    }
  }
  several_producers_accepted = producers_with_accepted > 1;
  RC_ASSERT(out.log.size() == accepted);  // nothing ran that was not accepted
  RC_ASSERT(out.handler_calls.count(-1) == 0u);

  RC_CLASSIFY(several_producers_accepted, "several producers accepted");
  RC_CLASSIFY(refused_any, "some submission refused");
  RC_CLASSIFY(w.carriers > 1, "several carriers");
  RC_TAG(accepted > 100 ? "over 100 accepted" : accepted > 20 ? "21-100 accepted" : "0-20 accepted");
}

}  // namespace
}  // namespace turnstile::prop::lane_threads
