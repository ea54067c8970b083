// property_tests/generated_schedules.hpp: schedules as generated data, for every property
// suite over ManualScheduler (runtime, lane, fiber-local, turns). (The unit tests'
// seeded and bit-mask runs of a ManualScheduler are turnstile_test/manual_runs.hpp.)
//
// A schedule is a std::vector<std::size_t> of choices. drive() consumes it one
// choice per step: while something is ready it runs run_next(choice % ready()),
// and once the choices are used up it runs the oldest ready item until the
// scheduler is idle. So
//   - the empty schedule is plain FIFO order, and every shrink of a schedule
//     (dropping choices, making them smaller) moves towards FIFO;
//   - a failing interleaving is an ordinary generated value: RapidCheck shrinks
//     it and replays it from the `reproduce` token it prints ([RT-2.4]);
//   - no threads, no sleeps: the only source of nondeterminism is the schedule.
//
// Usage in a property:
//
//   RC_GTEST_PROP(Suite, Name, ()) {
//     const auto choices = *turnstile::prop::gen_schedule();
//     turnstile::ManualScheduler sched;
//     turnstile::detach(sched, some_fiber(...));
//     const auto r = turnstile::prop::drive(sched, choices);
//     RC_ASSERT(r.idle);  // ran to quiescence within the step budget
//     ...check what the fibers recorded...
//   }
//
// TracedScheduler wraps a ManualScheduler and numbers every post, so a property
// can see *which* posted item runs now (current_item()) and in which order items
// were posted (for example, the order in which Event::set released its waiters,
// independently of the order the schedule then runs them in).
//
// Thread safety: everything here is driven from one plain thread (the test
// body); post() may be called from items, as with any Scheduler.
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "generators.hpp"
#include "turnstile/errors.hpp"
#include "turnstile/scheduler.hpp"

namespace turnstile::prop {

// A generous bound on the steps of one scenario: hitting it means a livelock
// (for example a fiber yielding forever), reported as a property failure
// instead of a hung test.
inline constexpr std::size_t kDefaultMaxSteps = 200'000;

struct DriveResult {
  std::size_t steps = 0;         // items run by this call
  std::size_t choices_used = 0;  // choices consumed before the FIFO tail
  bool idle = false;             // false: stopped at max_steps with work still ready
};

// Runs `s` under the schedule `choices` (see the header comment). `Sched` is a
// ManualScheduler or anything with the same ready()/run_next(i) surface
// (TracedScheduler below).
template <class Sched>
DriveResult drive(Sched& s, const std::vector<std::size_t>& choices,
                  std::size_t max_steps = kDefaultMaxSteps) {
  DriveResult r;
  for (const std::size_t c : choices) {
    const std::size_t n = s.ready();
    if (n == 0) break;  // idle: the rest of the schedule is unused (and shrinks away)
    if (r.steps == max_steps) return r;
    s.run_next(c % n);
    ++r.steps;
    ++r.choices_used;
  }
  while (s.ready() > 0) {
    if (r.steps == max_steps) return r;
    s.run_next(0);
    ++r.steps;
  }
  r.idle = true;
  return r;
}

// Drives several schedulers as one system: each choice c picks, among the
// schedulers with work ready, the (c % k)-th, and runs its item
// ((c / k) % ready()). Once the choices are used up, it runs the oldest item of
// the first scheduler with work, until all are idle. For fibers that hop between
// schedulers (resume_on) or lanes over several schedulers.
template <class Sched>
DriveResult drive(const std::vector<Sched*>& scheds, const std::vector<std::size_t>& choices,
                  std::size_t max_steps = kDefaultMaxSteps) {
  DriveResult r;
  std::vector<Sched*> busy;
  const auto collect = [&] {
    busy.clear();
    for (Sched* s : scheds)
      if (s->ready() > 0) busy.push_back(s);
    return !busy.empty();
  };
  for (const std::size_t c : choices) {
    if (!collect()) break;
    if (r.steps == max_steps) return r;
    Sched* s = busy[c % busy.size()];
    s->run_next((c / busy.size()) % s->ready());
    ++r.steps;
    ++r.choices_used;
  }
  while (collect()) {
    if (r.steps == max_steps) return r;
    busy.front()->run_next(0);
    ++r.steps;
  }
  r.idle = true;
  return r;
}

// A Scheduler that numbers posts. Fibers detached on it post every step here;
// it forwards to a ManualScheduler that actually queues and runs them, and keeps
// a shadow queue of post numbers in the same order, so run_next(i) knows the
// post number of the item it runs.
class TracedScheduler final : public Scheduler {
 public:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  void post(Runnable& item) override {
    std::lock_guard lock(mu_);
    tags_.push_back(posted_++);
    inner_.post(item);  // same order as tags_
  }

  std::size_t ready() const { return inner_.ready(); }

  void run_next(std::size_t i) {
    if (in_framework_context())  // before touching the shadow queue (ManualScheduler refuses too)
      throw FrameworkContextError("TracedScheduler::run_next called from inside a posted item");
    std::size_t tag = kNone;
    {
      std::lock_guard lock(mu_);
      if (i >= tags_.size())
        throw std::out_of_range("TracedScheduler::run_next(" + std::to_string(i) + ")");
      tag = tags_[i];
      tags_.erase(tags_.begin() + static_cast<std::ptrdiff_t>(i));
      ran_.push_back(tag);
    }
    struct Current {
      std::size_t& slot;
      ~Current() { slot = kNone; }
    } current{current_};
    current_ = tag;
    inner_.run_next(i);  // may post (appends to both queues); never erases
  }

  // The post number of the item running now (kNone between items).
  std::size_t current_item() const noexcept { return current_; }
  // How many items were posted so far; the next post gets this number.
  std::size_t posted() const {
    std::lock_guard lock(mu_);
    return posted_;
  }
  // Post numbers of the items run so far, in run order.
  const std::vector<std::size_t>& ran() const noexcept { return ran_; }
  std::size_t steps() const noexcept { return inner_.steps(); }

  // Fibers whose home is this scheduler and that have not finished.
  std::size_t live_fibers() const noexcept { return live_; }
  void fiber_started() noexcept override { ++live_; }
  void fiber_finished() noexcept override { --live_; }

 private:
  mutable std::mutex mu_;
  ManualScheduler inner_;
  std::deque<std::size_t> tags_;  // guarded by mu_: post numbers, in inner_'s queue order
  std::size_t posted_ = 0;        // guarded by mu_
  std::vector<std::size_t> ran_;  // driver thread only
  std::size_t current_ = kNone;   // driver thread only
  std::size_t live_ = 0;          // items of this scheduler run one at a time
};

}  // namespace turnstile::prop
