// property_tests/fiber_local/fl_runner.hpp: runs a generated program
// (fl_program.hpp) on two ManualSchedulers under a generated schedule and
// records what every read point saw.
//
//   test thread:  k0.where(777) { detach main; detach the workers; drive }
//                 (no fiber may see the thread's own binding, and the fibers
//                 must leave it alone)
//   main fiber:   the program; then close the Channel
//   worker w:     [k0.where(-(w+1))] loop: receive an item; read; serve it
//                 (under the item's FiberContext when it carries one); read
//   children, detached fibers: their op's body
//
// Every block owns a Scope for the children it spawns and joins it at its end,
// on the throw edge too (a Scope must not be destroyed with children running).
// A throw is a ProgramThrow aimed at a try level; each try rethrows one aimed
// further out; the fiber's root (or, for a work item, the worker) catches the
// rest.
//
// Fibers only record; the property compares afterwards (an RC_ASSERT inside a
// fiber would end the fiber, not the test).
//
// GCC 12: values with a non-trivial destructor (work items, lambdas) are built
// as named locals before any co_await (see fiber_local.hpp's compiler note);
// the Channel awaiters are named too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fl_model.hpp"
#include "fl_program.hpp"
#include "generated_schedules.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop::fl {

// The keys k0..k2 (keys are compared by address: they live for the process).
inline const FiberLocal<int>& key(int k) {
  static const FiberLocal<int> keys[kKeys] = {FiberLocal<int>("k0"), FiberLocal<int>("k1"),
                                              FiberLocal<int>("k2")};
  return keys[k];
}
inline constexpr int kThreadValue = 777;  // the test thread's own k0 binding

struct Observation {
  Values values;
  std::string fiber;  // which fiber (or work item) read
};

struct FlRun {
  DriveResult drive;
  std::map<int, Observation> reads;  // read point -> what it saw
  std::map<int, int> item_worker;    // send op number -> the worker that served it
  std::vector<std::string> errors;   // anything unexpected seen inside a fiber
  int fibers_started = 0;
  int fibers_finished = 0;
  bool main_done = false;
  std::size_t workers_done = 0;
  bool thread_binding_kept = false;   // the test thread still saw only k0=777 after the drive
  bool thread_unbound_after = false;  // and nothing once its where had ended
  // Coverage (what the schedule made happen), for RC_CLASSIFY.
  int children_started_after_parent_rebound = 0;
  int reads_while_another_fiber_bound = 0;
  int hops = 0;
};

namespace runner {

struct ProgramThrow {
  int target;   // the try level that catches it (0: the fiber's root)
  int thrower;  // the op that threw
};

struct WorkItem {
  const Op* op = nullptr;
  bool captured = false;
  FiberContext ctx;                 // the sender's context when captured
  std::vector<FiberContext> snaps;  // the sender's snapshot list (data, not ambient)
};

struct World {
  ManualScheduler& a;
  ManualScheduler& b;
  Channel<WorkItem>& ch;
  FlRun& run;
  const Scenario& sc;
  int bindings_in_effect = 0;  // over all fibers: program wheres whose body runs
};

// One execution context: a fiber, or a work item served by a worker.
struct Fib {
  Fib(World& world, std::string n, std::vector<FiberContext> s)
      : w(world), name(std::move(n)), snaps(std::move(s)) {}
  World& w;
  std::string name;
  std::vector<FiberContext> snaps;  // captured so far (capture op), in order
  int try_depth = 0;                // enclosing trys
  int bound = 0;                    // this context's wheres in effect
  int version = 0;                  // bumped whenever where/run changes what it sees
};

// Marks the extent of a where body (binds) or a run body (does not).
class Extent {
 public:
  Extent(Fib& f, bool binds) : f_(f), binds_(binds) {
    ++f_.version;
    if (binds_) {
      ++f_.bound;
      ++f_.w.bindings_in_effect;
    }
  }
  ~Extent() {
    ++f_.version;
    if (binds_) {
      --f_.bound;
      --f_.w.bindings_in_effect;
    }
  }
  Extent(const Extent&) = delete;
  Extent& operator=(const Extent&) = delete;

 private:
  Fib& f_;
  bool binds_;
};

class TryLevel {
 public:
  explicit TryLevel(Fib& f) : f_(f), mine_(++f.try_depth) {}
  ~TryLevel() { --f_.try_depth; }
  TryLevel(const TryLevel&) = delete;
  TryLevel& operator=(const TryLevel&) = delete;
  int mine() const noexcept { return mine_; }

 private:
  Fib& f_;
  int mine_;
};

inline void error(Fib& f, const std::string& what) {
  f.w.run.errors.push_back(f.name + ": " + what);
}

// A read point: try_get() of every key; get(), or_else() and is_bound() must agree.
inline void read(Fib& f, int p) {
  Observation o;
  o.fiber = f.name;
  for (int k = 0; k < kKeys; ++k) {
    const FiberLocal<int>& key_k = key(k);
    const int* v = key_k.try_get();
    if (v != nullptr) o.values[static_cast<std::size_t>(k)] = *v;
    if (key_k.is_bound() != (v != nullptr)) error(f, "is_bound() disagrees with try_get()");
    if (key_k.or_else(-1000) != (v ? *v : -1000)) error(f, "or_else() disagrees with try_get()");
    try {
      const int g = key_k.get();
      if (v == nullptr || g != *v) error(f, "get() disagrees with try_get()");
    } catch (const UnboundFiberLocal&) {
      if (v != nullptr) error(f, "get() threw but try_get() found a binding");
    }
  }
  if (f.w.bindings_in_effect > f.bound) ++f.w.run.reads_while_another_fiber_bound;
  if (!f.w.run.reads.emplace(p, std::move(o)).second)
    error(f, "read point " + show_point(p) + " ran twice");
}

inline FiberContext pick_snapshot(const Fib& f, const Op& op) {
  return f.snaps.empty() ? FiberContext{} : f.snaps[op.snap % f.snaps.size()];
}

// ------------------------------------------------------------ plain bodies

inline void run_block_plain(Fib& f, const std::vector<Op>& ops);

inline void run_op_plain(Fib& f, const Op& op) {
  switch (op.kind) {
    case Kind::Read:
      read(f, point(op.number, Slot::At));
      return;
    case Kind::Throw:
      throw ProgramThrow{std::max(0, f.try_depth - op.levels), op.number};
    case Kind::Capture:
      f.snaps.push_back(FiberContext::capture());
      return;
    case Kind::Where: {
      const auto body = [&] {
        Extent extent(f, true);
        read(f, point(op.number, Slot::Inside));
        run_block_plain(f, op.body);
      };
      key(op.key).where(op.value, body);
      read(f, point(op.number, Slot::At));
      return;
    }
    case Kind::Run: {
      const FiberContext ctx = pick_snapshot(f, op);
      const auto body = [&] {
        Extent extent(f, false);
        read(f, point(op.number, Slot::Inside));
        run_block_plain(f, op.body);
      };
      ctx.run(body);
      read(f, point(op.number, Slot::At));
      return;
    }
    case Kind::Try: {
      {
        TryLevel level(f);
        try {
          run_block_plain(f, op.body);
        } catch (const ProgramThrow& e) {
          if (e.target < level.mine()) throw;  // aimed further out
        }
      }
      read(f, point(op.number, Slot::At));
      return;
    }
    default:
      error(f, "a suspending op in a plain body (generator bug)");
      return;
  }
}

inline void run_block_plain(Fib& f, const std::vector<Op>& ops) {
  for (const Op& op : ops) run_op_plain(f, op);
}

// ------------------------------------------------------------- Task bodies

Task<> run_block(Fib& f, const std::vector<Op>& ops);

inline Task<> child_root(World& w, const Op& op, std::vector<FiberContext> snaps, const Fib* parent,
                         int parent_version) {
  Fib f(w, (parent ? "child#" : "detached#") + std::to_string(op.number), std::move(snaps));
  ++w.run.fibers_started;
  if (parent != nullptr && parent->version != parent_version)
    ++w.run.children_started_after_parent_rebound;
  read(f, point(op.number, Slot::Start));
  try {
    co_await run_block(f, op.body);
  } catch (const ProgramThrow&) {  // the root catches what no try caught
  } catch (const std::exception& e) {
    error(f, std::string("unexpected exception: ") + e.what());
  }
  read(f, point(op.number, Slot::End));
  ++w.run.fibers_finished;
}

inline Task<> run_op(Fib& f, const Op& op, std::optional<Scope>& scope) {
  World& w = f.w;
  switch (op.kind) {
    case Kind::Yield:
      co_await yield();
      break;
    case Kind::Hop: {
      ++w.run.hops;
      Scheduler& other = &current_scheduler() == &w.a ? static_cast<Scheduler&>(w.b) : w.a;
      co_await resume_on(other);
      break;
    }
    case Kind::Where:
      if (op.plain) {
        run_op_plain(f, op);
      } else {
        const auto body = [&]() -> Task<> {
          Extent extent(f, true);
          read(f, point(op.number, Slot::Inside));
          co_await run_block(f, op.body);
        };
        co_await key(op.key).where(op.value, body);
        read(f, point(op.number, Slot::At));
      }
      break;
    case Kind::Run:
      if (op.plain) {
        run_op_plain(f, op);
      } else {
        const FiberContext ctx = pick_snapshot(f, op);
        const auto body = [&]() -> Task<> {
          Extent extent(f, false);
          read(f, point(op.number, Slot::Inside));
          co_await run_block(f, op.body);
        };
        co_await ctx.run(body);
        read(f, point(op.number, Slot::At));
      }
      break;
    case Kind::Try: {
      {
        TryLevel level(f);
        try {
          co_await run_block(f, op.body);
        } catch (const ProgramThrow& e) {
          if (e.target < level.mine()) throw;  // aimed further out
        }
      }
      read(f, point(op.number, Slot::At));
      break;
    }
    case Kind::Spawn:
      if (!scope) scope.emplace();
      scope->spawn(child_root(w, op, f.snaps, &f, f.version));  // [FL-3.2] the chain as of now
      break;
    case Kind::Detach:
      detach(current_scheduler(), child_root(w, op, f.snaps, nullptr, 0));
      break;
    case Kind::Send: {
      WorkItem item{&op, op.capture, op.capture ? FiberContext::capture() : FiberContext{},
                    f.snaps};
      auto send = w.ch.send(std::move(item));
      co_await send;
      break;
    }
    default:
      run_op_plain(f, op);
      break;  // read, throw, capture
  }
}

inline Task<> run_block(Fib& f, const std::vector<Op>& ops) {
  std::optional<Scope> scope;
  std::exception_ptr thrown;
  try {
    for (const Op& op : ops) co_await run_op(f, op, scope);
  } catch (...) {
    thrown = std::current_exception();
  }
  if (scope) co_await scope->join();  // children never fail: their roots catch everything
  if (thrown) std::rethrow_exception(thrown);
}

inline Task<> main_root(World& w) {
  Fib f(w, "main", {});
  ++w.run.fibers_started;
  read(f, point(0, Slot::Start));
  try {
    co_await run_block(f, w.sc.program);
  } catch (const ProgramThrow&) {
  } catch (const std::exception& e) {
    error(f, std::string("unexpected exception: ") + e.what());
  }
  read(f, point(0, Slot::End));
  w.ch.close();  // every send is done: children were joined, detached fibers do not send
  w.run.main_done = true;
  ++w.run.fibers_finished;
}

inline Task<> worker_loop(Fib& wf, int id) {
  World& w = wf.w;
  for (;;) {
    auto receive = w.ch.receive();
    std::optional<WorkItem> item = co_await receive;
    if (!item) break;
    const Op& op = *item->op;
    if (!w.run.item_worker.emplace(op.number, id).second) error(wf, "an item served twice");
    read(wf, point(op.number, Slot::WorkerBefore));
    Fib f(w, "item#" + std::to_string(op.number) + "@worker" + std::to_string(id),
          std::move(item->snaps));
    const auto serve = [&]() -> Task<> {
      read(f, point(op.number, Slot::Start));
      co_await run_block(f, op.body);
      read(f, point(op.number, Slot::End));
    };
    try {
      if (item->captured)
        co_await item->ctx.run(serve);  // [FL-3.5] the request's bindings, and only them
      else
        co_await serve();  // [FL-3.4] a bare item: the worker's own bindings
    } catch (const ProgramThrow&) {
    } catch (const std::exception& e) {
      error(f, std::string("unexpected exception: ") + e.what());
    }
    read(wf, point(op.number, Slot::WorkerAfter));  // [FL-3.6] the worker's own chain is back
  }
}

inline Task<> worker_root(World& w, int id) {
  Fib wf(w, "worker" + std::to_string(id), {});
  ++w.run.fibers_started;
  if (w.sc.workers_bind) {
    const auto loop = [&]() -> Task<> {
      Extent extent(wf, true);
      co_await worker_loop(wf, id);
    };
    co_await key(0).where(-(id + 1), loop);
  } else {
    co_await worker_loop(wf, id);
  }
  ++w.run.workers_done;
  ++w.run.fibers_finished;
}

}  // namespace runner

// Runs `sc` (numbered, see number_program) under `choices`.
inline FlRun run_program(const Scenario& sc, const std::vector<std::size_t>& choices) {
  FlRun run;
  ManualScheduler a;
  ManualScheduler b;
  Channel<runner::WorkItem> ch(sc.capacity);
  runner::World w{a, b, ch, run, sc};
  const auto on_thread = [&] {
    detach(a, runner::main_root(w));  // [FL-3.4] detach carries none of the thread's bindings
    for (std::size_t i = 0; i < sc.workers; ++i)
      detach(a, runner::worker_root(w, static_cast<int>(i)));
    run.drive = drive(std::vector<ManualScheduler*>{&a, &b}, choices);
    const int* k0 = key(0).try_get();
    run.thread_binding_kept =
        k0 != nullptr && *k0 == kThreadValue && !key(1).is_bound() && !key(2).is_bound();
  };
  key(0).where(kThreadValue, on_thread);
  run.thread_unbound_after = !key(0).is_bound() && !key(1).is_bound() && !key(2).is_bound();
  return run;
}

}  // namespace turnstile::prop::fl
