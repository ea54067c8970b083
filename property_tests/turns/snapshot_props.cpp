// property_tests/turns/snapshot_props.cpp: snapshot() ([TURN-5.3]) under
// generated programs on a ManualScheduler: serial turns change the state,
// snapshots are taken, held and dropped in any order. The activation reuses the
// copy it publishes when no snapshot handle is alive and makes a new one
// otherwise; the model checks that a held snapshot never changes and that a
// fresh one is the state as the last settled serial turn left it.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/turnstile.hpp"

namespace turnstile::prop::turns {
namespace {

struct SnapOp {
  int kind = 0;  // 0: serial call adding arg + 1; 1: take and hold a snapshot; 2: drop held #arg
  std::size_t arg = 0;
};

struct Held {
  std::shared_ptr<const long> snapshot;
  long value;  // what it showed when taken
};

// spec: [TURN-5.3]
RC_GTEST_PROP(TurnsSnapshotProperty, AHeldSnapshotNeverChangesAndAFreshOneIsTheLastSettledState, ()) {
  const auto ops = *vector_of<SnapOp>(1, 40, rc::gen::build<SnapOp>(
      rc::gen::set(&SnapOp::kind, rc::gen::cast<int>(uniform_in(0, 2))),
      rc::gen::set(&SnapOp::arg, uniform_in(0, 7)))).as("program");
  ManualScheduler ms;
  Activation<long> a("snap", 0, {}, ms);
  long model = 0;  // the state as the last settled serial turn left it
  std::vector<Held> held;
  std::vector<Task<>> pending;
  for (const SnapOp& op : ops) {
    if (op.kind == 0) {
      const long add = static_cast<long>(op.arg) + 1;
      pending.push_back(a.call("add", [add](long& s) { s += add; }));
      model += add;
    } else if (op.kind == 1) {
      auto s = a.snapshot();
      const long v = *s;
      held.push_back({std::move(s), v});
    } else if (!held.empty()) {
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(op.arg % held.size()));
    }
    ms.run_until_idle();  // every call made so far has settled
    for (const Held& h : held) RC_ASSERT(*h.snapshot == h.value);
    RC_ASSERT(*a.snapshot() == model);
  }
  RC_CLASSIFY(!held.empty(), "snapshots held at the end");
}

}  // namespace
}  // namespace turnstile::prop::turns
