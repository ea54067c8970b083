// property_tests/composed/composed_runner.hpp: runs a generated composed
// program (composed_program.hpp) on one ManualScheduler under a generated
// schedule, and checks every contract at once against the model kept beside
// it (composed_model.hpp; the world and its checks: composed_world.hpp; the
// interpreter: composed_contexts.hpp, composed_interpreter.hpp).
//
// Liveness: every await that the model does not refuse can complete (the
// model's graph is acyclic, lanes never wait, the channel never fills), so a
// run that goes idle with work unfinished is a hang, reported as such with
// what is left (unfinished contexts, awaits never resumed, calls never run).
// A hung world is leaked, never destroyed (an activation or lane destroyed with
// work queued stops the process by design).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "composed_contexts.hpp"
#include "composed_interpreter.hpp"
#include "composed_model.hpp"
#include "composed_program.hpp"
#include "composed_world.hpp"
#include "generated_schedules.hpp"
#include "turnstile/fiber.hpp"

namespace turnstile::prop::composed {

// ------------------------------------------------------------------ the run

struct Outcome {
  DriveResult drive;
  bool hang = false;
  std::string hang_report;
  std::map<std::string, std::vector<std::string>> errors;
  std::string dump;
  Stats stats;
  std::size_t calls = 0, items = 0;
  bool ok() const { return !hang && errors.empty(); }
};

inline std::string hang_report(const World& w) {
  std::ostringstream os;
  os << "no runnable work, but " << (w.scheduled - w.finished)
     << " execution units are unfinished (fibers, turns, lane items, work items)";
  for (const WaitRec& wr : w.waits)
    if (!wr.done)
      os << "\n    " << wr.who << " still awaits call #" << wr.to
         << (wr.predicted ? " (the model says this await closes a cycle: it should have been refused)" : "");
  for (std::size_t i = 0; i < w.calls.size(); ++i) {
    const CallRec& r = w.calls[i];
    if (r.st != CallState::Settled)
      os << "\n    call #" << i << " a" << r.act << "." << r.method << " is "
         << (r.st == CallState::Queued ? "queued" : "running");
  }
  for (std::size_t i = 0; i < w.items.size(); ++i)
    if (!w.items[i].ran) os << "\n    lane item " << i << " of L" << w.items[i].lane << " never ran";
  return os.str();
}

inline Outcome run_program(const Program& p, const std::vector<std::size_t>& schedule) {
  auto w = std::make_unique<World>(p);
  for (int i = 0; i < p.workers; ++i) {
    ++w->scheduled;
    detach(w->sched, worker(w.get(), i));
  }
  for (std::size_t i = 0; i < p.roots.size(); ++i) {
    Ctx c;
    c.name = "root " + std::to_string(i);
    ++w->scheduled;
    detach(w->sched, fiber_root(w.get(), c, &p.roots[i]));
  }
  Outcome out;
  out.drive = drive(w->sched, schedule);
  // Idle: everything but the workers (waiting for more work) must be done.
  bool quiescent = out.drive.idle && w->finished + p.workers == w->scheduled;
  if (quiescent) {
    w->ch.close();  // the workers finish
    ++w->scheduled;
    detach(w->sched, collector(w.get()));
    const DriveResult d2 = drive(w->sched, {});
    quiescent = d2.idle && w->finished == w->scheduled;
  }
  if (quiescent) {
    for (std::size_t a = 0; a < w->acts.size(); ++a) {
      const Act& act = w->acts[a];
      if (act.queued() != 0 || act.running() != 0 || act.tasks() != 0)
        w->error("turn", "a" + std::to_string(a) + " not idle at the end: queued " +
                             std::to_string(act.queued()) + ", running " + std::to_string(act.running()) +
                             ", tasks " + std::to_string(act.tasks()));
      const auto made = std::count_if(w->calls.begin(), w->calls.end(),
                                      [&](const CallRec& r) { return r.act == static_cast<int>(a); });
      if (act.turns_completed() != static_cast<std::uint64_t>(made))
        w->error("turn", "a" + std::to_string(a) + ": turns_completed() disagrees with the model");
    }
  }
  out.hang = !quiescent;
  if (out.hang) out.hang_report = hang_report(*w);
  out.errors = w->book.errors;
  out.dump = w->book.dump();
  out.stats = w->stats;
  out.calls = w->calls.size();
  out.items = w->items.size();
  if (out.hang) {
    // Not quiescent: leak rather than destroy activations and lanes with work pending.
    (void)w.release();
  }
  return out;
}

}  // namespace turnstile::prop::composed
