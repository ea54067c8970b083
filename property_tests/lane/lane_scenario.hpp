// property_tests/lane/lane_scenario.hpp: N callers submit a generated mix of
// work to one StateLane, under a generated schedule on ManualScheduler(s), and
// record everything the public surface shows them.
//
//   caller c (1..4 detached fibers), for each of its ops:
//     run        run(work), awaited now
//     later      run(work), the Task kept and awaited at a later `await` op
//                (or at the caller's end, newest first)
//     dropped    run(work), the Task dropped unawaited (the item still runs)
//     post       try_post(work)
//     reenter    run(work) whose turn calls run() on the same lane: that must
//                throw LaneReentrancyError at once (caught inside the turn)
//     inpost     run(work) whose turn calls try_post() on the same lane: it
//                queues behind, or is refused once the lane is closed
//     await      awaits the oldest `later` Task, if any
//     yield      co_await yield()
//     close      co_await close() (one caller always closes, at a generated
//                position; more closes are harmless)
//   Work may throw (ItemError naming it). Every work item appends its id to a
//   shared plain log when its turn runs, raises and lowers an in-turn flag, and
//   carries a Probe that records where the item's callable is finally released.
//
// The sequential model: everything runs on one driver thread, so every
// submission happens-before the next one in program order; the lane must run
// exactly the accepted items, each once, in the order they were accepted
// ([LANE-5.2]). A submission is accepted iff no close() was called before it
// ([LANE-7.4]).
//
// Nothing here asserts: fibers record, the properties judge (an RC_ASSERT inside
// a fiber would end the fiber, not the test). A run that does not reach
// quiescence leaks its world instead of destroying a lane with work queued
// (which stops the process by design, [LANE-7.6]): the property then fails
// with a counterexample instead of crashing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/task.hpp"
#include "turnstile_test/outcome.hpp"
#include "turnstile_test/records.hpp"

namespace turnstile::prop::lane {

// ------------------------------------------------------------------ workload

enum class OpKind { kRun, kPost, kLater, kAwait, kDropped, kYield, kReenter, kInPost, kClose };

struct LaneOp {
  OpKind kind = OpKind::kRun;
  bool throws = false;  // for the ops that submit work
};

struct LaneConfig {
  std::vector<std::vector<LaneOp>> callers;
  std::size_t closer = 0;    // the caller that always closes (mod callers.size())
  std::size_t close_at = 0;  // at this op position (clamped to its op count)
  bool two_schedulers = false;  // the lane's drain on its own ManualScheduler
};

inline const char* name_of(OpKind k) {
  switch (k) {
    case OpKind::kRun: return "run";
    case OpKind::kPost: return "post";
    case OpKind::kLater: return "later";
    case OpKind::kAwait: return "await";
    case OpKind::kDropped: return "dropped";
    case OpKind::kYield: return "yield";
    case OpKind::kReenter: return "reenter";
    case OpKind::kInPost: return "inpost";
    case OpKind::kClose: return "close";
  }
  return "?";
}

inline bool submits(OpKind k) {
  return k == OpKind::kRun || k == OpKind::kPost || k == OpKind::kLater ||
         k == OpKind::kDropped || k == OpKind::kReenter || k == OpKind::kInPost;
}

inline void showValue(const LaneOp& op, std::ostream& os) {
  os << name_of(op.kind) << (submits(op.kind) && op.throws ? "!" : "");
}
inline void showValue(const LaneConfig& c, std::ostream& os) {
  os << "{callers [";
  show_callers(c.callers, os);
  os << "], closer " << c.closer << " at " << c.close_at
     << (c.two_schedulers ? ", lane on its own scheduler}" : ", one scheduler}");
}

// One op, failing one time in four. Kinds are weighted by slots of a uniform
// number, so an op shrinks towards `run` (slot 0); an extra close() is rare, as
// one caller always closes anyway.
inline constexpr OpKind kOpSlots[] = {
    OpKind::kRun,     OpKind::kRun,    OpKind::kRun,     OpKind::kPost,    OpKind::kPost,
    OpKind::kPost,    OpKind::kLater,  OpKind::kLater,   OpKind::kAwait,   OpKind::kDropped,
    OpKind::kDropped, OpKind::kYield,  OpKind::kYield,   OpKind::kReenter, OpKind::kReenter,
    OpKind::kInPost,  OpKind::kInPost, OpKind::kClose};

// True one time in four; shrinks to false (gen::weightedElement does not shrink).
inline rc::Gen<bool> one_in_four() {
  return rc::gen::map(uniform_in(0, 3), [](std::size_t x) { return x == 3; });
}

inline rc::Gen<LaneOp> gen_lane_op() {
  return rc::gen::build<LaneOp>(
      rc::gen::set(&LaneOp::kind, rc::gen::map(uniform_in(0, std::size(kOpSlots) - 1),
                                               [](std::size_t k) { return kOpSlots[k]; })),
      rc::gen::set(&LaneOp::throws, one_in_four()));
}

inline rc::Gen<LaneConfig> gen_lane_config(std::size_t max_callers = 4, std::size_t max_ops = 8) {
  return rc::gen::build<LaneConfig>(
      rc::gen::set(&LaneConfig::callers,
                   vector_of<std::vector<LaneOp>>(1, max_callers,
                                                  vector_of<LaneOp>(0, max_ops, gen_lane_op()))),
      rc::gen::set(&LaneConfig::closer, uniform_in(0, max_callers - 1)),
      rc::gen::set(&LaneConfig::close_at, uniform_in(0, max_ops)),
      rc::gen::set(&LaneConfig::two_schedulers, rc::gen::arbitrary<bool>()));
}

// ------------------------------------------------------------------- records

inline constexpr std::size_t kNever = static_cast<std::size_t>(-1);

// The exception failing work throws: it names its item.
struct ItemError : std::runtime_error {
  explicit ItemError(int item) : std::runtime_error("item #" + std::to_string(item)), id(item) {}
  int id;
};

enum class ItemKind { kRun, kPost, kInner };  // kInner: the run() a reentrant turn attempts

struct ItemRec {
  ItemKind kind = ItemKind::kRun;
  int caller = -1;          // -1: submitted from inside a turn
  bool throws = false;
  bool awaited = false;     // its run() Task is awaited (run, later, reenter, inpost)
  bool closed_at_submit = false;  // the model: close() was called before the submission
  bool accepted = false;    // run() returned a Task / try_post() returned true
  bool refused = false;     // LaneClosedError / false
  int runs = 0;             // turns that ran this item
  std::size_t ran_at = kNever;    // its index in the log
  std::size_t ran_step = kNever;  // the scheduler step its turn ran in
  // The awaiter of run(), when resumed.
  bool resumed = false;
  std::optional<int> value;     // what co_await returned
  std::optional<int> error_id;  // the ItemError it rethrew
  bool other_error = false;
  std::size_t resumed_step = kNever;
  bool resumed_on_lane = false;  // StateLane::current() was set at the resumption
  int runs_at_resume = -1;
  // The error handler (try_post work that threw).
  int handler_calls = 0;
  // The callable's final release (the Probe's destructor).
  int releases = 0;
  bool released_on_lane = false;
  bool released_before_run = false;
};

struct CloseRec {
  int caller = -1;
  bool first = false;             // the close() that closed the lane
  std::size_t accepted_at_call = 0;
  bool done = false;
  std::size_t log_at_done = 0;
  std::size_t accepted_at_done = 0;
  std::size_t done_step = kNever;
  bool done_on_lane = false;
};

// Errors by category and the trace: turnstile_test::ErrorBook.
struct LaneRecords : turnstile_test::ErrorBook {
  std::deque<ItemRec> items;   // by id (a deque: references stay valid as it grows)
  std::vector<int> accepted;   // item ids, in the order their submissions were accepted
  std::vector<int> log;        // item ids, in the order their turns ran
  std::vector<CloseRec> closes;
  std::size_t callers = 0;
  std::size_t finished = 0;    // callers that reached their end
  std::size_t ready_when_last_finished = kNever;  // items left on the schedulers then
  int reentrant_turns = 0;     // turns that attempted a reentrant run()
  int reentry_refused = 0;     // ... and got LaneReentrancyError at the call
};

struct LaneOutcome {
  DriveResult drive;
  LaneRecords rec;
};

// --------------------------------------------------------------------- world

class World;

// Carried by every work item: its destructor records, once the item's callable
// is finally released, whether that happened inside a turn. Moved-from probes
// record nothing.
class Probe {
 public:
  Probe(World* w, int id) noexcept : w_(w), id_(id) {}
  Probe(Probe&& o) noexcept : w_(o.w_), id_(o.id_) { o.w_ = nullptr; }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  Probe& operator=(Probe&&) = delete;
  ~Probe();

 private:
  World* w_;
  int id_;
};

enum class Extra { kNone, kReenter, kInPost };

// One turn's work: a plain callable, returning its index in the log.
struct Work {
  World* w;
  int id;
  bool throws;
  Extra extra;
  Probe probe;
  int operator()();
};

class World {
 public:
  World(ManualScheduler& fibers, ManualScheduler& lane_sched)
      : fibers_(fibers), lane_sched_(lane_sched), lane("prop-lane", lane_sched) {
    lane.set_error_handler([this](const StateLane& l, std::exception_ptr e) { on_handler(l, e); });
  }

  ManualScheduler& fibers_;
  ManualScheduler& lane_sched_;
  StateLane lane;
  LaneRecords rec;
  bool in_turn = false;
  bool closed = false;  // the model

  std::size_t step() const {
    return fibers_.steps() + (&lane_sched_ != &fibers_ ? lane_sched_.steps() : 0);
  }
  std::size_t ready() const {
    return fibers_.ready() + (&lane_sched_ != &fibers_ ? lane_sched_.ready() : 0);
  }
  void error(const std::string& category, const std::string& what) { rec.record_error(step(), category, what); }
  void note(const std::string& what) { rec.record_note(step(), what); }

  int new_item(ItemKind kind, int caller, bool throws) {
    ItemRec r;
    r.kind = kind;
    r.caller = caller;
    r.throws = throws;
    rec.items.push_back(r);
    return static_cast<int>(rec.items.size() - 1);
  }

  // Outside any turn (a caller's step): no marker, no turn running. [LANE-5.1]
  void check_outside(const char* where) {
    if (StateLane::current() != nullptr || lane.is_on_lane())
      error("one-turn", std::string(where) + ": StateLane::current() is set outside any turn");
    if (in_turn) error("one-turn", std::string(where) + ": runs while a turn is in progress");
  }

  // run(work): the Task if accepted; records acceptance against the model.
  std::optional<Task<int>> submit_run(int id, Extra extra) {
    ItemRec& r = rec.items[static_cast<std::size_t>(id)];
    r.closed_at_submit = closed;
    try {
      Task<int> t = lane.run(Work{this, id, r.throws, extra, Probe(this, id)});
      r.accepted = true;
      rec.accepted.push_back(id);
      note("run #" + std::to_string(id) + " accepted");
      if (r.closed_at_submit) error("closed", "run #" + std::to_string(id) + " accepted after close()");
      return std::optional<Task<int>>(std::move(t));
    } catch (const LaneClosedError& e) {
      r.refused = true;
      note("run #" + std::to_string(id) + " refused: closed");
      if (!r.closed_at_submit) error("closed", "run #" + std::to_string(id) + " refused before close()");
      if (std::string(e.what()).find(lane.name()) == std::string::npos)
        error("closed", std::string("LaneClosedError does not name the lane: ") + e.what());
    } catch (const std::exception& e) {
      error("general", "run #" + std::to_string(id) + " threw " + e.what());
    }
    return std::nullopt;
  }

  // try_post(work); records acceptance against the model.
  void submit_post(int id) {
    ItemRec& r = rec.items[static_cast<std::size_t>(id)];
    r.closed_at_submit = closed;
    bool ok = false;
    try {
      ok = lane.try_post(Work{this, id, r.throws, Extra::kNone, Probe(this, id)});
    } catch (const std::exception& e) {
      error("general", "try_post #" + std::to_string(id) + " threw " + e.what());
      return;
    }
    if (ok) {
      r.accepted = true;
      rec.accepted.push_back(id);
      note("post #" + std::to_string(id) + " accepted");
      if (r.closed_at_submit) error("closed", "try_post #" + std::to_string(id) + " accepted after close()");
    } else {
      r.refused = true;
      note("post #" + std::to_string(id) + " refused");
      if (!r.closed_at_submit) error("closed", "try_post #" + std::to_string(id) + " refused before close()");
    }
  }

  // Inside a turn: run() on the same lane must throw at the call, queue nothing.
  // [LANE-5.3]
  void reenter(int outer) {
    ++rec.reentrant_turns;
    const int inner = new_item(ItemKind::kInner, -1, false);
    const std::size_t before = rec.accepted.size();
    try {
      Task<int> t = lane.run(Work{this, inner, false, Extra::kNone, Probe(this, inner)});
      error("reentry", "run() from inside turn #" + std::to_string(outer) + " returned a Task");
    } catch (const LaneReentrancyError& e) {
      ++rec.reentry_refused;
      note("turn #" + std::to_string(outer) + ": reentrant run() refused");
      if (std::string(e.what()).find(lane.name()) == std::string::npos)
        error("reentry", std::string("LaneReentrancyError does not name the lane: ") + e.what());
    } catch (const std::exception& e) {
      error("reentry", "run() from inside turn #" + std::to_string(outer) + " threw " + e.what());
    }
    try {
      lane.throw_if_reentrant();
      error("reentry", "throw_if_reentrant() inside turn #" + std::to_string(outer) + " did not throw");
    } catch (const LaneReentrancyError&) {
    }
    if (rec.accepted.size() != before) error("reentry", "a reentrant run() changed the queue");
  }

  // Inside a turn: try_post() on the same lane queues behind (or is refused
  // once closed). [LANE-7.7]
  void post_inside(int outer) {
    const int id = new_item(ItemKind::kPost, -1, false);
    note("turn #" + std::to_string(outer) + " posts #" + std::to_string(id));
    submit_post(id);
  }

  int run_turn(Work& w) {
    if (in_turn) error("one-turn", "turn #" + std::to_string(w.id) + " started inside another turn");
    in_turn = true;
    if (StateLane::current() != &lane || !lane.is_on_lane())
      error("one-turn", "StateLane::current() is not the lane inside turn #" + std::to_string(w.id));
    ItemRec& r = rec.items[static_cast<std::size_t>(w.id)];
    const std::size_t pos = rec.log.size();
    rec.log.push_back(w.id);
    if (++r.runs == 1) {
      r.ran_at = pos;
      r.ran_step = step();
    }
    note("turn #" + std::to_string(w.id) + " runs at log " + std::to_string(pos));
    if (w.extra == Extra::kReenter) reenter(w.id);
    if (w.extra == Extra::kInPost) post_inside(w.id);
    in_turn = false;
    if (w.throws) throw ItemError(w.id);
    return static_cast<int>(pos);
  }

  void on_handler(const StateLane& l, const std::exception_ptr& e) {
    if (&l != &lane) error("failure", "the error handler got another lane");
    try {
      std::rethrow_exception(e);
    } catch (const ItemError& ie) {
      ++rec.items[static_cast<std::size_t>(ie.id)].handler_calls;
      note("handler got #" + std::to_string(ie.id));
    } catch (...) {
      error("failure", "the error handler got an unexpected exception");
    }
  }

  void on_resumed(int id, const turnstile_test::Settled<int>& settled) {
    const auto& [value, error_id, other] = settled;
    ItemRec& r = rec.items[static_cast<std::size_t>(id)];
    r.resumed = true;
    r.value = value;
    r.error_id = error_id;
    r.other_error = other;
    r.resumed_step = step();
    r.resumed_on_lane = StateLane::current() != nullptr;
    r.runs_at_resume = r.runs;
    note("awaiter of #" + std::to_string(id) + " resumed" +
         (value ? " with " + std::to_string(*value) : error_id ? " with ItemError" : " with ?"));
    check_outside("run() awaiter");
  }

  void on_released(int id) {
    ItemRec& r = rec.items[static_cast<std::size_t>(id)];
    ++r.releases;
    r.released_on_lane = StateLane::current() != nullptr;
    r.released_before_run = r.runs == 0;
    if (r.released_on_lane) note("callable of #" + std::to_string(id) + " released inside a turn");
  }

  std::size_t close_called(int caller) {
    CloseRec c;
    c.caller = caller;
    c.first = !closed;
    closed = true;
    c.accepted_at_call = rec.accepted.size();
    rec.closes.push_back(c);
    note("caller " + std::to_string(caller) + " closes");
    return rec.closes.size() - 1;
  }
  void close_done(std::size_t k) {
    CloseRec& c = rec.closes[k];
    c.done = true;
    c.log_at_done = rec.log.size();
    c.accepted_at_done = rec.accepted.size();
    c.done_step = step();
    c.done_on_lane = StateLane::current() != nullptr;
    note("close of caller " + std::to_string(c.caller) + " completed");
    check_outside("close() awaiter");
  }

  void caller_finished(int caller) {
    ++rec.finished;
    note("caller " + std::to_string(caller) + " finished");
    if (rec.finished == rec.callers) {
      rec.ready_when_last_finished = ready();
      note("last caller finished; " + std::to_string(rec.ready_when_last_finished) +
           " item(s) left on the schedulers");
    }
  }
};

inline Probe::~Probe() {
  if (w_ != nullptr) w_->on_released(id_);
}

inline int Work::operator()() { return w->run_turn(*this); }

// Awaits one run() Task and records what it yields.
inline Task<> await_item(World& w, int id, Task<int> t) {
  Task<turnstile_test::Settled<int>> settling = turnstile_test::settle<ItemError>(std::move(t));
  w.on_resumed(id, co_await std::move(settling));
}

inline Task<> caller(World& w, int c, std::vector<LaneOp> ops) {
  std::deque<std::pair<int, Task<int>>> later;
  for (const LaneOp op : ops) {
    w.check_outside("caller");
    switch (op.kind) {
      case OpKind::kRun:
      case OpKind::kReenter:
      case OpKind::kInPost: {
        const int id = w.new_item(ItemKind::kRun, c, op.throws);
        w.rec.items[static_cast<std::size_t>(id)].awaited = true;
        const Extra extra = op.kind == OpKind::kReenter  ? Extra::kReenter
                            : op.kind == OpKind::kInPost ? Extra::kInPost
                                                         : Extra::kNone;
        std::optional<Task<int>> t = w.submit_run(id, extra);
        if (t) {
          Task<> a = await_item(w, id, std::move(*t));
          co_await std::move(a);
        }
        break;
      }
      case OpKind::kLater: {
        const int id = w.new_item(ItemKind::kRun, c, op.throws);
        w.rec.items[static_cast<std::size_t>(id)].awaited = true;
        std::optional<Task<int>> t = w.submit_run(id, Extra::kNone);
        if (t) later.emplace_back(id, std::move(*t));
        break;
      }
      case OpKind::kDropped: {
        const int id = w.new_item(ItemKind::kRun, c, op.throws);
        std::optional<Task<int>> t = w.submit_run(id, Extra::kNone);
        t.reset();  // never awaited: the item is queued all the same [LANE-5.8]
        break;
      }
      case OpKind::kPost:
        w.submit_post(w.new_item(ItemKind::kPost, c, op.throws));
        break;
      case OpKind::kAwait:
        if (!later.empty()) {
          auto [id, t] = std::move(later.front());
          later.pop_front();
          Task<> a = await_item(w, id, std::move(t));
          co_await std::move(a);
        }
        break;
      case OpKind::kYield:
        co_await yield();
        break;
      case OpKind::kClose: {
        const std::size_t k = w.close_called(c);
        Task<> t = w.lane.close();
        co_await std::move(t);
        w.close_done(k);
        break;
      }
    }
  }
  while (!later.empty()) {  // newest first: the awaiting order is not the queue order
    auto [id, t] = std::move(later.back());
    later.pop_back();
    Task<> a = await_item(w, id, std::move(t));
    co_await std::move(a);
  }
  w.check_outside("caller end");
  w.caller_finished(c);
}

// Runs the scenario under `choices`; returns what the callers recorded.
inline LaneOutcome run_lane_scenario(const LaneConfig& cfg, const std::vector<std::size_t>& choices) {
  std::vector<std::vector<LaneOp>> callers = cfg.callers;
  auto& closer = callers[cfg.closer % callers.size()];
  const auto at = static_cast<std::ptrdiff_t>(std::min(cfg.close_at, closer.size()));
  closer.insert(closer.begin() + at, LaneOp{OpKind::kClose, false});

  auto fibers = std::make_unique<ManualScheduler>();
  auto lane_sched = std::make_unique<ManualScheduler>();
  ManualScheduler& ls = cfg.two_schedulers ? *lane_sched : *fibers;
  auto world = std::make_unique<World>(*fibers, ls);
  world->rec.callers = callers.size();
  for (std::size_t c = 0; c < callers.size(); ++c)
    detach(*fibers, caller(*world, static_cast<int>(c), callers[c]));

  LaneOutcome out;
  if (cfg.two_schedulers) {
    out.drive = drive(std::vector<ManualScheduler*>{fibers.get(), lane_sched.get()}, choices);
  } else {
    out.drive = drive(*fibers, choices);
  }
  out.rec = world->rec;
  if (!out.drive.idle || world->rec.finished != world->rec.callers) {
    // Not quiescent: suspended fibers still refer to the world and the lane may
    // hold work; leak all of it rather than crash (the property fails anyway).
    (void)world.release();
    (void)fibers.release();
    (void)lane_sched.release();
  }
  return out;
}

}  // namespace turnstile::prop::lane
