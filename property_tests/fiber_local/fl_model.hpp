// property_tests/fiber_local/fl_model.hpp: the sequential model of binding
// stacks that the interpreter's observations are compared with.
//
// The model walks the program once, in program order, with no scheduler: a
// binding stack per execution context is all FiberLocal's contract depends on,
// so what a read must see does not depend on the interleaving at all. That
// independence is exactly what the properties check.
//
//   - where(kK=V){b}: b sees the stack plus (K, V); after it, on return or on
//     throw, the stack is as before ([FL-3.1], [FL-6.2]).
//   - spawn{b}: the child starts from the parent's stack at the spawn
//     ([FL-3.2]); its own wheres touch only its stack ([FL-3.3]).
//   - detach{b}, send{b}: start from nothing (the worker's own stack for a send
//     without capture) ([FL-3.4]).
//   - capture: remembers the stack; run(#i){b}: b sees that stack, replacing
//     (not merging into) the current one, and afterwards the current stack is
//     back ([FL-3.5], [FL-3.6]); send+ctx{b}: b runs on a worker under the
//     sender's stack, and the worker's own stack is back after it ([FL-6.1]).
//
// A throw aimed at try level t (see fl_program.hpp) skips the rest of every
// block up to that try; the reads it skips are expected *not* to happen.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fl_program.hpp"

namespace turnstile::prop::fl {

// What a read sees: each key's innermost binding, or nullopt when unbound.
using Values = std::array<std::optional<int>, kKeys>;

inline std::string show_values(const Values& v) {
  std::string s = "{";
  for (int k = 0; k < kKeys; ++k) {
    s += (k ? " k" : "k") + std::to_string(k) + "=";
    s += v[static_cast<std::size_t>(k)] ? std::to_string(*v[static_cast<std::size_t>(k)]) : "-";
  }
  return s + "}";
}

// Read points: an op's number and a slot. The main fiber's root is op 0.
enum class Slot {
  At = 0,            // read: the read itself; where / try / run: after it completed
  Start = 1,         // spawn / detach / send / main: first thing the fiber (item) does
  End = 2,           // spawn / detach / main: after the root caught any escaping throw;
                     // send: after the item's body completed normally
  WorkerBefore = 3,  // send: the worker, just before serving the item
  WorkerAfter = 4,   // send: the worker, just after (return or throw)
  Inside = 5,        // where / run: first thing in the body
};
inline int point(int op_number, Slot s) { return op_number * 8 + static_cast<int>(s); }
inline std::string show_point(int p) {
  static const char* const names[] = {"at/after",      "start",        "end",
                                      "worker-before", "worker-after", "inside"};
  const int slot = p % 8;
  return "#" + std::to_string(p / 8) + " " + (slot < 6 ? names[slot] : "?");
}

// A binding stack, oldest first.
using Stack = std::vector<std::pair<int, int>>;

inline Values view(const Stack& st) {
  Values v;
  for (const auto& [key, value] : st) v[static_cast<std::size_t>(key)] = value;  // newest wins
  return v;
}

// What the model derives from a program.
struct ModelStats {
  int wheres_unwound = 0;             // wheres ended by a throw
  int runs_unwound = 0;               // runs ended by a throw
  int shadowing_wheres = 0;           // where on a key already bound
  int spawns_while_bound = 0;         // children started from a non-empty stack
  int rebinding_children = 0;         // children that bind a key themselves
  int bare_handoffs_while_bound = 0;  // detach / send without capture, sender bound
  int captured_sends = 0;             // send+ctx from a non-empty stack
  int stale_runs = 0;                 // run of a snapshot that differs from the current stack
  int items_thrown_out = 0;           // work items whose body threw out of run
  int workers_serving_several_contexts = 0;  // a worker served items of different contexts
};

class Model {
 public:
  struct Item {
    const Op* op = nullptr;
    bool captured = false;
    Stack stack;               // the sender's stack when captured
    std::vector<Stack> snaps;  // the sender's snapshots (its list, copied)
  };

  std::map<int, Values> expect;  // read point -> what it must see
  std::vector<Item> items;       // the work items sent, in program order
  ModelStats stats;

  // The whole scenario. `worker_of(op number)` tells which worker served an
  // item (the only thing of a run the model needs: a bare item sees that
  // worker's own stack); -1 if none did.
  template <class WorkerOf>
  void evaluate(const Scenario& s, WorkerOf worker_of) {
    Ctx main;
    expect[point(0, Slot::Start)] = Values{};
    (void)block(s.program, main, Stack{});
    expect[point(0, Slot::End)] = Values{};
    std::map<int, std::vector<Stack>> contexts_per_worker;
    for (std::size_t i = 0; i < items.size(); ++i) {  // (item bodies never send)
      const Item item = items[i];
      const int w = worker_of(item.op->number);
      Stack own;
      if (s.workers_bind && w >= 0) own.emplace_back(0, -(w + 1));
      const Stack base = item.captured ? item.stack : own;
      contexts_per_worker[w].push_back(base);
      expect[point(item.op->number, Slot::WorkerBefore)] = view(own);
      Ctx ctx;
      ctx.snaps = item.snaps;
      expect[point(item.op->number, Slot::Start)] = view(base);
      if (block(item.op->body, ctx, base))
        ++stats.items_thrown_out;
      else
        expect[point(item.op->number, Slot::End)] = view(base);
      expect[point(item.op->number, Slot::WorkerAfter)] = view(own);
    }
    for (auto& [w, contexts] : contexts_per_worker)
      for (const Stack& c : contexts)
        if (c != contexts.front()) {
          ++stats.workers_serving_several_contexts;
          break;
        }
  }

 private:
  // One execution context (a fiber, or a work item on a worker).
  struct Ctx {
    std::vector<Stack> snaps;  // captured snapshots, in capture order
    int try_depth = 0;         // enclosing trys
    bool child = false;
  };

  // nullopt: the block completed; otherwise the try level its throw is aimed at.
  std::optional<int> block(const std::vector<Op>& ops, Ctx& c, const Stack& st) {
    for (const Op& op : ops)
      if (const auto t = step(op, c, st)) return t;
    return std::nullopt;
  }

  // The body of a where or a run of `op`: it sees `inner`; after it, the op's point
  // sees `st` again. A throw out of the body (counted in `unwound`) skips that point.
  std::optional<int> body_under(const Op& op, Ctx& c, const Stack& st, const Stack& inner,
                                int& unwound) {
    expect[point(op.number, Slot::Inside)] = view(inner);
    if (const auto t = block(op.body, c, inner)) {
      ++unwound;
      return t;
    }
    expect[point(op.number, Slot::At)] = view(st);
    return std::nullopt;
  }

  // One op in context `c` with stack `st`; the same result as block().
  std::optional<int> step(const Op& op, Ctx& c, const Stack& st) {
    switch (op.kind) {
      case Kind::Read:
        expect[point(op.number, Slot::At)] = view(st);
        return std::nullopt;
      case Kind::Yield:
      case Kind::Hop:
        return std::nullopt;
      case Kind::Throw:
        return std::max(0, c.try_depth - op.levels);
      case Kind::Capture:
        c.snaps.push_back(st);
        return std::nullopt;
      case Kind::Where: {
        if (view(st)[static_cast<std::size_t>(op.key)]) ++stats.shadowing_wheres;
        if (c.child) ++stats.rebinding_children;
        Stack inner = st;
        inner.emplace_back(op.key, op.value);
        return body_under(op, c, st, inner, stats.wheres_unwound);
      }
      case Kind::Try: {
        const int mine = ++c.try_depth;
        const auto t = block(op.body, c, st);
        --c.try_depth;
        if (t && *t < mine) return t;  // aimed further out
        expect[point(op.number, Slot::At)] = view(st);
        return std::nullopt;
      }
      case Kind::Run: {
        const Stack snap = c.snaps.empty() ? Stack{} : c.snaps[op.snap % c.snaps.size()];
        if (snap != st) ++stats.stale_runs;
        return body_under(op, c, st, snap, stats.runs_unwound);
      }
      case Kind::Spawn:
      case Kind::Detach: {
        const Stack base = op.kind == Kind::Spawn ? st : Stack{};
        if (op.kind == Kind::Spawn && !st.empty()) ++stats.spawns_while_bound;
        if (op.kind == Kind::Detach && !st.empty()) ++stats.bare_handoffs_while_bound;
        Ctx child;
        child.snaps = c.snaps;
        child.child = op.kind == Kind::Spawn;
        expect[point(op.number, Slot::Start)] = view(base);
        (void)block(op.body, child, base);  // the child's root catches what escapes
        expect[point(op.number, Slot::End)] = view(base);
        return std::nullopt;
      }
      case Kind::Send: {
        if (op.capture && !st.empty()) ++stats.captured_sends;
        if (!op.capture && !st.empty()) ++stats.bare_handoffs_while_bound;
        items.push_back(Item{&op, op.capture, op.capture ? st : Stack{}, c.snaps});
        return std::nullopt;
      }
    }
    return std::nullopt;
  }
};

}  // namespace turnstile::prop::fl
