// property_tests/turns/turns_scenario.hpp: callers make generated mixes of
// serial and interleaved calls on one Activation (on a ManualScheduler), with
// generated awaits inside the turn bodies, under a generated schedule; the
// turns record what they observe against a sequential model.
//
//   caller c (1..3 detached fibers), for each of its ops:
//     serial / interleaved call   call("write" | "peek", body); the Task is
//                                 awaited now, later (at the caller's end,
//                                 newest first) or never
//     yield                       co_await yield()
//   body (a coroutine lambda):    k yields (0..3), then maybe one gate wait;
//                                 every segment between two awaits bumps
//                                 state.version; a serial body also stamps
//                                 state.owner; it may throw TurnError at the end
//
// Gates make lane independence observable as liveness: a serial body may wait
// on a "g" gate that only an interleaved turn opens, an interleaved body on an
// "h" gate that only a serial turn opens. A releaser fiber (present when there
// are gates) first calls, without awaiting, one interleaved "open g" turn per g
// gate and one serial "open h" turn per h gate, then awaits them all. With a
// correct activation this always terminates: the serial chain waits only for g
// gates, whose openers wait for nothing ([TURN-3.2]: an interleaved call starts
// at once); interleaved turns wait for h gates, whose serial openers are never
// held up by an interleaved turn ([TURN-3.2]: no serial turn waits for it). A
// hang (drive idle, a caller unfinished) is therefore a lane violation.
//
// Nothing asserts here: turns and callers record, the properties judge. A run
// that does not reach quiescence leaks its world (an activation destroyed with
// turns queued stops the process by design, [TURN-1.1]).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "generated_schedules.hpp"
#include "turns_workload.hpp"
#include "turnstile/activation.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/strand.hpp"
#include "turnstile/task.hpp"
#include "turnstile_test/outcome.hpp"
#include "turnstile_test/records.hpp"

namespace turnstile::prop::turns {

// The workload (TurnOp, TurnsConfig and their generators): turns_workload.hpp.

// ------------------------------------------------------------------- records

inline constexpr std::size_t kNever = static_cast<std::size_t>(-1);

struct State {
  long version = 0;  // bumped by every segment of every turn
  int owner = -1;    // the serial turn that last stamped it
};

struct TurnError : std::runtime_error {
  explicit TurnError(int turn) : std::runtime_error("turn #" + std::to_string(turn)), id(turn) {}
  int id;
};

struct TurnRec {
  int caller = -1;  // -1: the releaser
  bool serial = true;
  std::size_t yields = 0;
  int wait_g = -1, wait_h = -1;  // the gate its body waits on
  int open_g = -1, open_h = -1;  // the gate its body opens
  bool throws = false;
  bool awaited = false;
  int starts = 0;
  std::size_t start_tick = kNever, end_tick = kNever;  // logical clock
  bool ended = false;
  bool saw_serial_running = false;  // interleaved: a serial turn was in progress meanwhile
  bool saw_change = false;          // interleaved: the state changed across one of its awaits
  // The caller's await.
  bool resumed = false;
  bool ended_at_resume = false;
  std::optional<int> value;
  std::optional<int> error_id;
  bool other_error = false;
};

// Errors by category and the trace: turnstile_test::ErrorBook.
struct TurnsRecords : turnstile_test::ErrorBook {
  std::deque<TurnRec> turns;          // by id
  std::vector<int> serial_calls;      // serial turn ids in call() order
  std::vector<int> serial_starts;     // serial turn ids in the order their bodies started
  std::size_t callers = 0;            // fibers, the releaser included
  std::size_t finished = 0;
  std::size_t queued_at_end = kNever, running_at_end = kNever, completed_at_end = kNever;
};

struct TurnsOutcome {
  DriveResult drive;
  TurnsRecords rec;
};

// --------------------------------------------------------------------- world

class World {
 public:
  World(ManualScheduler& sched, ActivationOptions options)
      : sched_(sched), act("prop-actor", State{}, std::move(options), sched) {}

  ManualScheduler& sched_;
  Activation<State> act;
  std::deque<Event> g_gates, h_gates;
  TurnsRecords rec;

  // The model.
  std::size_t tick = 0;
  std::size_t serial_made = 0;     // serial call()s returned
  std::size_t serial_started = 0;  // serial bodies started
  std::size_t running = 0;         // bodies started and not ended (both lanes)
  long writes = 0;                 // segments that bumped state.version
  int serial_active = 0;           // serial bodies in progress
  int serial_current = -1;
  bool in_segment = false;         // a step of some turn is running
  const Scheduler* strand = nullptr;

  void error(const std::string& category, const std::string& what) {
    rec.record_error(sched_.steps(), category, what);
  }
  void note(const std::string& what) { rec.record_note(sched_.steps(), what); }
  static std::string name(int id) { return "#" + std::to_string(id); }

  // queued() is serial calls made minus serial turns started; running() is
  // bodies started and not ended. Checked at every observation point. [TURN-2.3]
  void check_counters(const std::string& where) {
    if (act.queued() != serial_made - serial_started)
      error("queued", where + ": queued() " + std::to_string(act.queued()) + ", model " +
                          std::to_string(serial_made - serial_started));
    if (act.running() != running)
      error("running", where + ": running() " + std::to_string(act.running()) + ", model " +
                           std::to_string(running));
  }

  int new_turn(int caller, bool serial, std::size_t yields, bool throws) {
    TurnRec r;
    r.caller = caller;
    r.serial = serial;
    r.yields = yields;
    r.throws = throws;
    rec.turns.push_back(r);
    return static_cast<int>(rec.turns.size() - 1);
  }

  // A step of turn `id` begins: it runs alone, on the activation's strand. [TURN-1.2]
  void segment_begin(int id, TurnContext<State>& ctx, long version_before, bool first) {
    const TurnRec& r = rec.turns[static_cast<std::size_t>(id)];
    if (in_segment) error("step", name(id) + " runs inside another step of the activation");
    in_segment = true;
    const Scheduler* s = &current_scheduler();
    if (dynamic_cast<const Strand*>(s) == nullptr) error("step", name(id) + " runs off a Strand");
    if (strand == nullptr) strand = s;
    if (s != strand) error("step", name(id) + " runs on another strand");
    // The state is the live one: every write so far shows.
    if (ctx.state().version != writes)
      error("step", name(id) + " sees version " + std::to_string(ctx.state().version) +
                        ", model " + std::to_string(writes));
    if (!first && r.serial) {
      // Across its own awaits, a serial turn is still the one serial turn. [TURN-3.1]
      if (serial_active != 1 || serial_current != id || ctx.state().owner != id)
        error("overlap", name(id) + " resumed while serial turn #" +
                             std::to_string(serial_current) + " is in progress (" +
                             std::to_string(serial_active) + " serial)");
    }
    if (!first && !r.serial) {
      if (ctx.state().version != version_before) rec.turns[static_cast<std::size_t>(id)].saw_change = true;
    }
    if (!r.serial && serial_active > 0) rec.turns[static_cast<std::size_t>(id)].saw_serial_running = true;
    // This step's own change.
    ++ctx.state().version;
    ++writes;
    if (r.serial) ctx.state().owner = id;
  }

  // A step of turn `id` ends (at an await or at its end): nothing else changed
  // the state during it. Returns the version it leaves, for the next step.
  long segment_end(int id, TurnContext<State>& ctx) {
    if (!in_segment) error("step", name(id) + " ends a step that was not running");
    if (ctx.state().version != writes) error("step", name(id) + ": the state changed under a step");
    in_segment = false;
    return ctx.state().version;
  }

  void turn_begin(int id, TurnContext<State>& ctx) {
    TurnRec& r = rec.turns[static_cast<std::size_t>(id)];
    ++r.starts;
    r.start_tick = tick++;
    ++running;
    if (r.serial) {
      if (serial_active != 0)
        error("overlap", "serial " + name(id) + " started while serial turn #" +
                             std::to_string(serial_current) + " is in progress");
      ++serial_active;
      serial_current = id;
      ++serial_started;
      rec.serial_starts.push_back(id);
    }
    note((r.serial ? "serial " : "interleaved ") + name(id) + " starts");
    segment_begin(id, ctx, 0, true);
    check_counters("start of " + name(id));
  }

  void turn_end(int id, TurnContext<State>& ctx) {
    TurnRec& r = rec.turns[static_cast<std::size_t>(id)];
    if (r.open_g >= 0) g_gates[static_cast<std::size_t>(r.open_g)].set();
    if (r.open_h >= 0) h_gates[static_cast<std::size_t>(r.open_h)].set();
    check_counters("end of " + name(id));
    segment_end(id, ctx);
    r.ended = true;
    r.end_tick = tick++;
    --running;  // the activation settles it in this same step, right after the body
    if (r.serial) {
      --serial_active;
      serial_current = -1;
    }
    note(name(id) + " ends");
  }

  // The body of turn `id`: steps separated by yields and an optional gate wait.
  auto body(int id) {
    return [this, id](TurnContext<State>& ctx) -> Task<int> {
      turn_begin(id, ctx);
      const TurnRec spec = rec.turns[static_cast<std::size_t>(id)];
      for (std::size_t k = 0; k < spec.yields; ++k) {
        const long v = segment_end(id, ctx);
        co_await yield();
        segment_begin(id, ctx, v, false);
        check_counters("in " + name(id));
      }
      if (spec.wait_g >= 0 || spec.wait_h >= 0) {
        Event& gate = spec.wait_g >= 0 ? g_gates[static_cast<std::size_t>(spec.wait_g)]
                                       : h_gates[static_cast<std::size_t>(spec.wait_h)];
        const long v = segment_end(id, ctx);
        co_await gate.wait();
        segment_begin(id, ctx, v, false);
        check_counters("in " + name(id) + " after its gate");
      }
      turn_end(id, ctx);
      if (spec.throws) throw TurnError(id);
      co_return id;
    };
  }

  // Makes the call of turn `id`.
  std::optional<Task<int>> make_call(int id) {
    const bool serial = rec.turns[static_cast<std::size_t>(id)].serial;
    try {
      auto b = body(id);
      Task<int> t = act.call(serial ? "write" : "peek", std::move(b));
      if (serial) {
        ++serial_made;
        rec.serial_calls.push_back(id);
      }
      note(std::string("call ") + (serial ? "serial " : "interleaved ") + name(id));
      check_counters("after call " + name(id));
      return std::optional<Task<int>>(std::move(t));
    } catch (const std::exception& e) {
      error("general", "call " + name(id) + " threw " + e.what());
      return std::nullopt;
    }
  }

  void on_resumed(int id, const turnstile_test::Settled<int>& settled) {
    const auto& [value, error_id, other] = settled;
    TurnRec& r = rec.turns[static_cast<std::size_t>(id)];
    r.resumed = true;
    r.ended_at_resume = r.ended;
    r.value = value;
    r.error_id = error_id;
    r.other_error = other;
    note("caller of " + name(id) + " resumed");
    check_counters("caller of " + name(id));
  }

  void caller_finished(int caller) {
    ++rec.finished;
    note("caller " + std::to_string(caller) + " finished");
  }
};

inline Task<> await_turn(World& w, int id, Task<int> t) {
  Task<turnstile_test::Settled<int>> settling = turnstile_test::settle<TurnError>(std::move(t));
  w.on_resumed(id, co_await std::move(settling));
}

inline Task<> caller(World& w, int c, std::vector<TurnOp> ops) {
  std::vector<std::pair<int, Task<int>>> later;
  for (const TurnOp& op : ops) {
    if (op.kind == CallKind::kYield) {
      co_await yield();
      w.check_counters("caller " + std::to_string(c));
      continue;
    }
    const bool serial = op.kind == CallKind::kSerial;
    const int id = w.new_turn(c, serial, op.yields, op.throws);
    TurnRec& r = w.rec.turns[static_cast<std::size_t>(id)];
    const std::size_t gates = serial ? w.g_gates.size() : w.h_gates.size();
    if (op.gate > 0 && gates > 0) (serial ? r.wait_g : r.wait_h) = static_cast<int>((op.gate - 1) % gates);
    r.awaited = op.await != AwaitMode::kNever;
    std::optional<Task<int>> t = w.make_call(id);
    if (!t) continue;
    if (op.await == AwaitMode::kNow) {
      Task<> a = await_turn(w, id, std::move(*t));
      co_await std::move(a);
    } else if (op.await == AwaitMode::kLater) {
      later.emplace_back(id, std::move(*t));
    }  // kNever: dropped; the turn runs all the same, in its arrival place [TURN-2.2]
  }
  while (!later.empty()) {  // newest first: the awaiting order is not the call order
    auto [id, t] = std::move(later.back());
    later.pop_back();
    Task<> a = await_turn(w, id, std::move(t));
    co_await std::move(a);
  }
  w.caller_finished(c);
}

// Calls every gate opener first, awaits them after (see the header comment).
inline Task<> releaser(World& w, std::size_t yields) {
  for (std::size_t k = 0; k < yields; ++k) co_await yield();
  std::vector<std::pair<int, Task<int>>> calls;
  for (std::size_t g = 0; g < w.g_gates.size(); ++g) {
    const int id = w.new_turn(-1, false, 1, false);
    w.rec.turns[static_cast<std::size_t>(id)].open_g = static_cast<int>(g);
    w.rec.turns[static_cast<std::size_t>(id)].awaited = true;
    if (auto t = w.make_call(id)) calls.emplace_back(id, std::move(*t));
  }
  for (std::size_t h = 0; h < w.h_gates.size(); ++h) {
    const int id = w.new_turn(-1, true, 0, false);
    w.rec.turns[static_cast<std::size_t>(id)].open_h = static_cast<int>(h);
    w.rec.turns[static_cast<std::size_t>(id)].awaited = true;
    if (auto t = w.make_call(id)) calls.emplace_back(id, std::move(*t));
  }
  for (auto& [id, t] : calls) {
    Task<> a = await_turn(w, id, std::move(t));
    co_await std::move(a);
  }
  w.caller_finished(-1);
}

inline TurnsOutcome run_turns_scenario(const TurnsConfig& cfg, const std::vector<std::size_t>& choices) {
  auto sched = std::make_unique<ManualScheduler>();
  ActivationOptions options;
  options.interleaved_methods = {"peek"};
  options.slow_turn = std::chrono::hours(24);  // no slow-turn reports: not under test here
  auto world = std::make_unique<World>(*sched, std::move(options));
  for (std::size_t g = 0; g < cfg.g_gates; ++g) world->g_gates.emplace_back();
  for (std::size_t h = 0; h < cfg.h_gates; ++h) world->h_gates.emplace_back();
  world->rec.callers = cfg.callers.size();
  for (std::size_t c = 0; c < cfg.callers.size(); ++c)
    detach(*sched, caller(*world, static_cast<int>(c), cfg.callers[c]));
  if (cfg.g_gates + cfg.h_gates > 0) {
    ++world->rec.callers;
    detach(*sched, releaser(*world, cfg.releaser_yields));
  }

  TurnsOutcome out;
  out.drive = drive(*sched, choices);
  out.rec = world->rec;
  out.rec.queued_at_end = world->act.queued();
  out.rec.running_at_end = world->act.running();
  out.rec.completed_at_end = world->act.turns_completed();
  if (!out.drive.idle || out.rec.finished != out.rec.callers || out.rec.queued_at_end != 0 ||
      out.rec.running_at_end != 0) {
    // Not quiescent: leak rather than destroy an activation with turns pending.
    (void)world.release();
    (void)sched.release();
  }
  return out;
}

}  // namespace turnstile::prop::turns
