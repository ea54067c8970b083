// property_tests/fiber_props.cpp: fibers hopping between two schedulers with
// yield() and resume_on(), under generated schedules over both (generated_schedules.hpp,
// drive over several schedulers).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop {
namespace {

enum class Hop { kYield, kToA, kToB };

struct FiberSpec {
  bool starts_on_b = false;
  std::vector<Hop> hops;
};

void showValue(const FiberSpec& f, std::ostream& os) {
  os << "{start " << (f.starts_on_b ? "B" : "A") << ":";
  for (Hop h : f.hops) os << (h == Hop::kYield ? " yield" : h == Hop::kToA ? " ->A" : " ->B");
  os << "}";
}

struct StepRecord {
  std::size_t fiber = 0;
  std::size_t hop = 0;           // index of the hop just completed
  char expected = '?';           // the scheduler the fiber should now run on
  char running_on = '?';         // the scheduler actually running this step
  bool current_matches = false;  // current_scheduler() is the expected one
};

struct World {
  TracedScheduler a;
  TracedScheduler b;
  std::vector<StepRecord> records;
  std::vector<std::size_t> finished;

  char running() const {
    const bool on_a = a.current_item() != TracedScheduler::kNone;
    const bool on_b = b.current_item() != TracedScheduler::kNone;
    return on_a && !on_b ? 'A' : on_b && !on_a ? 'B' : '?';
  }
};

Task<> hopper(World& w, std::size_t id, FiberSpec spec) {
  char where = spec.starts_on_b ? 'B' : 'A';
  for (std::size_t i = 0; i < spec.hops.size(); ++i) {
    switch (spec.hops[i]) {
      case Hop::kYield:
        co_await yield();
        break;
      case Hop::kToA:
        co_await resume_on(w.a);
        where = 'A';
        break;
      case Hop::kToB:
        co_await resume_on(w.b);
        where = 'B';
        break;
    }
    Scheduler* expected = where == 'A' ? static_cast<Scheduler*>(&w.a) : &w.b;
    w.records.push_back(StepRecord{id, i, where, w.running(), &current_scheduler() == expected});
  }
  w.finished.push_back(id);
}

// spec: [RT-3.6] [RT-3.3]
RC_GTEST_PROP(FiberProperty, YieldAndResumeOnContinueOnTheRightScheduler, ()) {
  const auto hop = rc::gen::element(Hop::kYield, Hop::kToA, Hop::kToB);
  const auto fibers =
      *vector_of<FiberSpec>(1, 4,
                            rc::gen::build<FiberSpec>(
                                rc::gen::set(&FiberSpec::starts_on_b, rc::gen::arbitrary<bool>()),
                                rc::gen::set(&FiberSpec::hops, vector_of<Hop>(0, 8, hop))))
           .as("fibers");
  const auto choices = *gen_schedule().as("schedule");

  World w;
  for (std::size_t f = 0; f < fibers.size(); ++f)
    detach(fibers[f].starts_on_b ? w.b : w.a, hopper(w, f, fibers[f]));
  RC_ASSERT(w.records.empty());  // [RT-3.3] nothing ran inside detach
  const DriveResult r = drive(std::vector<TracedScheduler*>{&w.a, &w.b}, choices);

  RC_ASSERT(r.idle);
  RC_ASSERT(w.finished.size() == fibers.size());
  RC_ASSERT(w.a.live_fibers() + w.b.live_fibers() == 0u);
  std::size_t hops = 0;
  for (const auto& f : fibers) hops += f.hops.size();
  RC_ASSERT(w.records.size() == hops);
  std::vector<std::size_t> next_hop(fibers.size(), 0);
  for (const StepRecord& s : w.records) {
    RC_ASSERT(s.hop == next_hop[s.fiber]++);  // a fiber's steps run in program order
    RC_ASSERT(s.running_on == s.expected);    // after resume_on(X) / yield the step runs on X
    RC_ASSERT(s.current_matches);             // and the fiber's scheduler says so
  }
  bool hopped = false;
  for (const auto& f : fibers)
    for (Hop h : f.hops) hopped = hopped || (h == (f.starts_on_b ? Hop::kToA : Hop::kToB));
  RC_CLASSIFY(hopped, "a fiber changes scheduler");
}

}  // namespace
}  // namespace turnstile::prop
