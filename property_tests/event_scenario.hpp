// property_tests/event_scenario.hpp: waiters and a setter around one Event,
// under a generated schedule, on a TracedScheduler (see generated_schedules.hpp).
//
//   waiter i:  yield k times; mark "waiting"; co_await event.wait(); record
//              which posted item resumed it and whether a set() was running
//   setter:    yield k times; set() (flagged while inside the call); maybe set
//              again (must release nobody)
//
// The TracedScheduler numbers posts, so the properties can tell the order in
// which set() *released* the waiters (the post order) apart from the order the
// schedule then happens to run them in.
#pragma once

#include <cstddef>
#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop {

struct EventConfig {
  std::vector<int> waiter_yields;  // one waiter per entry: yields before it waits
  int setter_yields = 0;
  bool set_twice = false;
};

inline void showValue(const EventConfig& c, std::ostream& os) {
  os << "{waiters yielding [";
  for (std::size_t i = 0; i < c.waiter_yields.size(); ++i)
    os << (i ? " " : "") << c.waiter_yields[i];
  os << "], setter yields " << c.setter_yields << (c.set_twice ? ", sets twice}" : "}");
}

// 0..max_waiters waiters yielding 0..3 times; the setter yields 0..5 times.
inline rc::Gen<EventConfig> gen_event_config(std::size_t max_waiters = 8) {
  return rc::gen::build<EventConfig>(
      rc::gen::set(&EventConfig::waiter_yields,
                   vector_of<int>(0, max_waiters, rc::gen::inRange(0, 4))),
      rc::gen::set(&EventConfig::setter_yields, rc::gen::inRange(0, 6)),
      rc::gen::set(&EventConfig::set_twice, rc::gen::arbitrary<bool>()));
}

struct WaiterObservation {
  bool began = false;  // reached the co_await
  bool was_set_at_begin = false;
  std::size_t begin_order = 0;                       // rank among waiters that reached the co_await
  std::size_t item_before = TracedScheduler::kNone;  // post number of the step that began the wait
  std::size_t item_after = TracedScheduler::kNone;   // post number of the step that resumed it
  int resumed = 0;                                   // times the code after the co_await ran
  bool resumed_inside_set = false;
};

struct EventRun {
  DriveResult drive;
  std::vector<WaiterObservation> waiters;
  std::vector<std::size_t>
      waiting_at_set;  // waiter ids suspended when set() was called, by begin order
  std::size_t posts_before_set = 0;
  std::size_t posts_after_set = 0;
  std::size_t posts_by_second_set = 0;
  bool setter_done = false;
  std::size_t live_fibers_after = 0;
  std::vector<std::string> trace;
  std::vector<std::string> errors;
};

namespace event_detail {

struct World {
  TracedScheduler& sched;
  Event ev;
  EventRun& run;
  std::size_t begun = 0;
  bool inside_set = false;
  std::vector<std::size_t> waiting;  // ids currently suspended on the event, by begin order

  void note(const std::string& what) {
    run.trace.push_back("s" + std::to_string(sched.steps()) + " item " +
                        std::to_string(sched.current_item()) + " " + what);
  }
};

inline Task<> waiter(World& w, std::size_t id, int yields) {
  try {
    for (int i = 0; i < yields; ++i) co_await yield();
    WaiterObservation& o = w.run.waiters[id];
    o.began = true;
    o.was_set_at_begin = w.ev.is_set();
    o.begin_order = w.begun++;
    o.item_before = w.sched.current_item();
    if (!o.was_set_at_begin) w.waiting.push_back(id);
    w.note("w" + std::to_string(id) + " waits");
    co_await w.ev.wait();
    o.item_after = w.sched.current_item();
    ++o.resumed;
    o.resumed_inside_set = w.inside_set;
    std::erase(w.waiting, id);
    w.note("w" + std::to_string(id) + " released");
  } catch (const std::exception& e) {
    w.run.errors.push_back("waiter " + std::to_string(id) + ": " + e.what());
  }
}

inline Task<> setter(World& w, int yields, bool twice) {
  for (int i = 0; i < yields; ++i) co_await yield();
  w.run.waiting_at_set = w.waiting;
  w.run.posts_before_set = w.sched.posted();
  w.note("set");
  w.inside_set = true;
  w.ev.set();  // noexcept
  w.inside_set = false;
  w.run.posts_after_set = w.sched.posted();
  if (twice) {
    co_await yield();
    const std::size_t before = w.sched.posted();
    w.inside_set = true;
    w.ev.set();  // already set: releases nobody
    w.inside_set = false;
    w.run.posts_by_second_set = w.sched.posted() - before;
  }
  w.run.setter_done = true;
}

}  // namespace event_detail

inline EventRun run_event_scenario(const EventConfig& cfg,
                                   const std::vector<std::size_t>& choices) {
  EventRun run;
  run.waiters.resize(cfg.waiter_yields.size());
  TracedScheduler sched;
  event_detail::World w{sched, Event{}, run, 0, false, {}};
  for (std::size_t i = 0; i < cfg.waiter_yields.size(); ++i)
    detach(sched, event_detail::waiter(w, i, cfg.waiter_yields[i]));
  detach(sched, event_detail::setter(w, cfg.setter_yields, cfg.set_twice));
  run.drive = drive(sched, choices);
  run.live_fibers_after = sched.live_fibers();
  return run;
}

}  // namespace turnstile::prop
