// property_tests/scope_scenario.hpp: a parent fiber runs rounds of
// spawn-children-then-join on one Scope, under a generated schedule.
//
//   parent:  for each round: for each child: yield k times, spawn it;
//                            yield k times; co_await scope.join()  (observed)
//                            then, defensively, wait until the round's children
//                            really finished and join once more (see below)
//   child:   yield n times; record its completion; maybe throw ChildFailure
//
// The parent records, at the moment join() returns, how many of the round's
// children had completed and which failure (if any) join rethrew. The children
// record the global completion order, which defines "the first child failure".
//
// The defensive second join keeps a broken Scope (the join-early mutant) from
// tearing the process down: a join that returned early leaves children running,
// and destroying the Scope then aborts by design ([RT-5.4]). Waiting for the
// children and joining again restores the Scope's count, so the property can
// report the broken join as a falsified property with a shrunk counterexample
// instead of a crash. On a correct Scope both are no-ops (observed, too).
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop {

struct ChildSpec {
  int parent_yields_before_spawn = 0;
  int yields = 0;
  bool throws = false;
};

struct RoundSpec {
  std::vector<ChildSpec> children;
  int parent_yields_before_join = 0;
};

inline std::ostream& operator<<(std::ostream& os, const ChildSpec& c) {
  return os << "{spawn after " << c.parent_yields_before_spawn << " yields, " << c.yields
            << " yields" << (c.throws ? ", throws}" : "}");
}
inline void showValue(const ChildSpec& c, std::ostream& os) { os << c; }
inline void showValue(const RoundSpec& r, std::ostream& os) {
  os << "{children: [";
  for (std::size_t i = 0; i < r.children.size(); ++i) os << (i ? ", " : "") << r.children[i];
  os << "], join after " << r.parent_yields_before_join << " yields}";
}

// Generators: a child yields 0..4 times (its parent 0..2 times before spawning
// it) and fails one time in four; a round has 0..max_children children.
inline rc::Gen<ChildSpec> gen_child() {
  return rc::gen::build<ChildSpec>(
      rc::gen::set(&ChildSpec::parent_yields_before_spawn, rc::gen::inRange(0, 3)),
      rc::gen::set(&ChildSpec::yields, rc::gen::inRange(0, 5)),
      rc::gen::set(&ChildSpec::throws, rc::gen::weightedElement<bool>({{3, false}, {1, true}})));
}
inline rc::Gen<RoundSpec> gen_round(std::size_t max_children = 6) {
  return rc::gen::build<RoundSpec>(
      rc::gen::set(&RoundSpec::children, vector_of<ChildSpec>(0, max_children, gen_child())),
      rc::gen::set(&RoundSpec::parent_yields_before_join, rc::gen::inRange(0, 3)));
}
inline rc::Gen<std::vector<RoundSpec>> gen_rounds(std::size_t max_rounds = 3,
                                                  std::size_t max_children = 6) {
  return vector_of<RoundSpec>(1, max_rounds, gen_round(max_children));
}

// The exception a failing child throws: it names the child.
struct ChildFailure : std::runtime_error {
  explicit ChildFailure(int child)
      : std::runtime_error("child " + std::to_string(child) + " failed"), id(child) {}
  int id;
};

struct RoundObservation {
  std::size_t completed_at_join = 0;   // children of the round completed when join returned
  std::optional<int> rethrown;         // id of the ChildFailure join rethrew
  bool rethrew_other = false;          // join threw something else
  std::vector<int> completion_order;   // the round's children, in completion order
  std::vector<int> throwers_in_order;  // the failing ones, in completion order
  bool second_join_threw = false;      // the defensive join after the round
};

struct ScopeRun {
  DriveResult drive;
  std::vector<RoundObservation> rounds;
  std::vector<std::string> trace;
  std::vector<std::string> errors;
  bool parent_done = false;
};

namespace scope_detail {

struct World {
  ManualScheduler& sched;
  ScopeRun& run;
  std::vector<int> completed;  // child ids (global numbering), in completion order
  std::vector<int> threw;      // the ones that threw, in completion order

  void note(const std::string& what) {
    run.trace.push_back("s" + std::to_string(sched.steps()) + " " + what);
  }
};

inline Task<> child(World& w, int id, ChildSpec spec) {
  for (int i = 0; i < spec.yields; ++i) co_await yield();
  w.completed.push_back(id);
  w.note("child " + std::to_string(id) + (spec.throws ? " throws" : " ends"));
  if (spec.throws) {
    w.threw.push_back(id);
    throw ChildFailure(id);
  }
}

inline Task<> parent(World& w, const std::vector<RoundSpec>& rounds) {
  try {
    Scope scope;
    int next_id = 0;
    for (const RoundSpec& round : rounds) {
      RoundObservation obs;
      const std::size_t completed_before = w.completed.size();
      const std::size_t threw_before = w.threw.size();
      for (const ChildSpec& c : round.children) {
        for (int i = 0; i < c.parent_yields_before_spawn; ++i) co_await yield();
        scope.spawn(child(w, next_id++, c));
      }
      for (int i = 0; i < round.parent_yields_before_join; ++i) co_await yield();
      w.note("join");
      try {
        co_await scope.join();
      } catch (const ChildFailure& e) {
        obs.rethrown = e.id;
      } catch (...) {
        obs.rethrew_other = true;
      }
      obs.completed_at_join = w.completed.size() - completed_before;
      w.note("joined");
      // Defensive: only a broken join gets here with children still running.
      while (w.completed.size() - completed_before < round.children.size()) co_await yield();
      try {
        co_await scope.join();
      } catch (...) {
        obs.second_join_threw = true;
      }
      obs.completion_order.assign(
          w.completed.begin() + static_cast<std::ptrdiff_t>(completed_before), w.completed.end());
      obs.throwers_in_order.assign(w.threw.begin() + static_cast<std::ptrdiff_t>(threw_before),
                                   w.threw.end());
      w.run.rounds.push_back(std::move(obs));
    }
    w.run.parent_done = true;
    w.note("parent done");
  } catch (const std::exception& e) {
    w.run.errors.push_back(std::string("parent: ") + e.what());
  }
}

}  // namespace scope_detail

inline ScopeRun run_scope_scenario(const std::vector<RoundSpec>& rounds,
                                   const std::vector<std::size_t>& choices) {
  ScopeRun run;
  ManualScheduler sched;
  scope_detail::World w{sched, run, {}, {}};
  detach(sched, scope_detail::parent(w, rounds));
  run.drive = drive(sched, choices);
  return run;
}

}  // namespace turnstile::prop
