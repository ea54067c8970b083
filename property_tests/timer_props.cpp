// property_tests/timer_props.cpp: ManualScheduler timers ([RT-8.2], [RT-8.3])
// under generated programs: timers armed at generated deadlines between
// generated advances, some cancelled, against the model "a timer fires in the
// first advance that reaches its deadline, never earlier; one advance posts in
// deadline order, ties in arming order".
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/turnstile.hpp"

namespace turnstile::prop {
namespace {

using std::chrono::milliseconds;

// One step of a timer program.
struct TimerOp {
  int kind = 0;          // 0: arm a timer at now + arg ms; 1: advance by arg ms; 2: cancel timer #arg
  std::size_t arg = 0;
};

struct Armed {
  Scheduler::Clock::time_point deadline;
  std::size_t armed_at_batch = 0;  // advances made before it was armed
  TimerHandle handle;
  bool cancelled = false;
  int fired = 0;
  std::size_t batch = 0;           // the advance that fired it
  Scheduler::Clock::time_point ran_at;
};

// spec: [RT-8.2] [RT-8.3]
RC_GTEST_PROP(TimerProperty, TimersFireInDeadlineOrderNeverEarly, ()) {
  const auto ops = *vector_of<TimerOp>(1, 40, rc::gen::build<TimerOp>(
      rc::gen::set(&TimerOp::kind, rc::gen::inRange(0, 3)),
      rc::gen::set(&TimerOp::arg, uniform_in(0, 12)))).as("program");
  ManualScheduler ms;
  std::vector<Armed> timers;
  timers.reserve(ops.size());
  std::vector<std::size_t> order;  // timer indices in the order their callbacks ran
  std::vector<Scheduler::Clock::time_point> batch_now{ms.now()};  // now after advance k
  for (const TimerOp& op : ops) {
    if (op.kind == 0) {
      const std::size_t i = timers.size();
      timers.push_back(Armed{ms.now() + milliseconds(op.arg), batch_now.size() - 1, {}, false, 0, 0, {}});
      timers[i].handle = ms.call_at(timers[i].deadline, [&, i] {
        ++timers[i].fired;
        timers[i].batch = batch_now.size() - 1;
        timers[i].ran_at = ms.now();
        order.push_back(i);
      });
    } else if (op.kind == 1) {
      ms.advance(milliseconds(op.arg));
      batch_now.push_back(ms.now());
      ms.run_until_idle();
    } else if (!timers.empty()) {
      Armed& t = timers[op.arg % timers.size()];
      const bool was_fired = t.fired > 0;
      const bool c = t.handle.cancel();
      RC_ASSERT(c != was_fired);  // [RT-8.4] exact on a single thread
      t.cancelled = t.cancelled || c;
    }
  }
  for (std::size_t i = 0; i < timers.size(); ++i) {
    const Armed& t = timers[i];
    RC_ASSERT(t.fired <= 1);
    const bool reached = batch_now.back() >= t.deadline && batch_now.size() - 1 > t.armed_at_batch;
    if (t.fired == 0) {
      RC_ASSERT(t.cancelled || !reached);
      continue;
    }
    RC_ASSERT(t.ran_at >= t.deadline);       // never early
    RC_ASSERT(t.batch > t.armed_at_batch);   // only an advance fires it
    // Not late either: the advance before the one that fired it had not reached it.
    if (t.batch - 1 > t.armed_at_batch) RC_ASSERT(batch_now[t.batch - 1] < t.deadline);
  }
  for (std::size_t k = 1; k < order.size(); ++k) {
    const Armed& a = timers[order[k - 1]];
    const Armed& b = timers[order[k]];
    RC_ASSERT(a.batch <= b.batch);
    if (a.batch == b.batch)  // one advance: deadline order, ties in arming order
      RC_ASSERT(a.deadline < b.deadline || (a.deadline == b.deadline && order[k - 1] < order[k]));
  }
  RC_CLASSIFY(order.size() > 3, "more than 3 fired");
  // The queue keeps timers armed in deadline order in a list and the others in
  // a heap (timer_queue.hpp): a program that arms one ahead of an earlier-armed
  // later deadline uses both.
  bool ahead = false;
  for (std::size_t i = 1; i < timers.size(); ++i)
    ahead = ahead || timers[i].deadline < timers[i - 1].deadline;
  RC_CLASSIFY(ahead, "a timer armed ahead of an earlier-armed one");
}

}  // namespace
}  // namespace turnstile::prop
