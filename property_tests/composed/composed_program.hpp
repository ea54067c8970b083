// property_tests/composed/composed_program.hpp: the generated programs of the
// composed suite (all three contracts at once), their printing and generators.
//
// A program is a set of root fibers, each a block of ops; ops nest. Run by the
// interpreter (composed_interpreter.hpp, driven by composed_runner.hpp) on one
// ManualScheduler. The world: A activations a0..a2 (methods "s" serial, "i"
// interleaved), two StateLanes L0 L1, one BindingTable, two user keys u0 u1,
// a Channel served by W workers.
//
// Grammar (`async` blocks are fibers and turn bodies; `plain` blocks are lane
// items and plain where/run bodies, which cannot suspend):
//
//   block   := op*
//   op      := observe                    check bindings and position now
//            | yield                      (async)
//            | where(uK=V){block}         Task body in async blocks, plain in plain ones
//            | call aN.s|i @now|@later|@never|@child|@detached {async block}
//                                         Activation::call; the body is the turn; the
//                                         Task is awaited now, at the end of the
//                                         fiber's root block (outside any where it was
//                                         made in), never, or handed to another fiber
//                                         that awaits it: a Scope child (part of the
//                                         caller's turn, if any) or a detached fiber
//                                         (part of none): [TURN-7.1] is decided by the
//                                         awaiter, not the caller. Plain blocks: @never.
//            | run LN @now|@later|@never|@child|@detached {plain block}
//                                         StateLane::run (async); in a plain block it is
//                                         never awaited, and on the item's own lane it
//                                         must throw LaneReentrancyError
//            | post LN {plain block}       StateLane::try_post
//            | spawn {async block}        Scope child, joined at the end of the block
//            | detach {async block}       detach(): starts with nothing
//            | task {async block}         ctx.task (in a turn only): no bindings, no turn
//            | turn @now|@later|@never|@child|@detached {async block}
//                                         TaskContext::turn(fn) (in a turn or a task):
//                                         a full serial turn of that activation
//            | send {async block}         Channel handoff of FiberContext::capture();
//                                         a worker runs the block under it (async)
//            | capture                    a snapshot into the program's global list
//            | runsnap #I {block}         FiberContext::run of snapshot I (mod count;
//                                         the empty context when there is none)
//            | defer(uK=V, uJ=W) {async block}
//                                         (async) made inside uK.where(V) plain: the Task
//                                         uJ.where(W, block) (or, when J == K and W == V,
//                                         the bare block's Task); awaited at the end of
//                                         the fiber's root block, outside uK's where:
//                                         the body sees the awaiter's bindings plus uJ=W
//                                         ([FL-4.7]: it binds from the moment it starts)
//            | table OP aX sY @now|@never BindingTable op (other modes: @now), then consistent() submitted in
//                                         the same step (so it runs right after the op's
//                                         turn); @never: awaited by a collector at the end
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "generated_schedules.hpp"

namespace turnstile::prop::composed {

inline constexpr int kKeys = 2;
inline constexpr int kLanes = 2;
inline constexpr int kTableNames = 3;  // actors a0..a2, sessions s0..s2 of the BindingTable

enum class Kind {
  // Simplest first: a shrunk kind index moves towards `observe`.
  Observe,
  Yield,
  Where,
  Call,
  Run,
  Post,
  Spawn,
  Detach,
  Task,
  Turn,
  Send,
  Capture,
  RunSnap,
  Defer,
  Table,
};
inline constexpr int kKinds = static_cast<int>(Kind::Table) + 1;

enum class Await { Now, Later, Never, Child, Detached };
enum class TableOp { Bind, Rebind, Unbind, SessionOf, ActorOf, Size };
inline constexpr int kTableOps = static_cast<int>(TableOp::Size) + 1;

struct Op {
  Kind kind = Kind::Observe;
  int a = 0;            // call: activation; run/post: lane; where/defer: key; runsnap: snapshot;
                        // table: actor
  int b = 0;            // defer: the second key; table: session
  int v = 0;            // where/defer: value
  int w = 0;            // defer: the second value
  bool inter = false;   // call: the interleaved method "i"
  Await await = Await::Now;
  TableOp table = TableOp::Bind;
  std::vector<Op> body;
};

struct Program {
  std::vector<std::vector<Op>> roots;  // detached root fibers
  int activations = 2;                 // 2..3
  int workers = 1;                     // 1..2
};

// ------------------------------------------------------------------ printing

inline const char* await_name(Await a) {
  switch (a) {
    case Await::Now: return "@now";
    case Await::Later: return "@later";
    case Await::Never: return "@never";
    case Await::Child: return "@child";
    case Await::Detached: return "@detached";
  }
  return "?";
}
inline const char* table_name(TableOp t) {
  switch (t) {
    case TableOp::Bind: return "bind";
    case TableOp::Rebind: return "rebind";
    case TableOp::Unbind: return "unbind";
    case TableOp::SessionOf: return "session_of";
    case TableOp::ActorOf: return "actor_of";
    case TableOp::Size: return "size";
  }
  return "?";
}

inline void print_block(std::ostream& os, const std::vector<Op>& ops);

inline void print_op(std::ostream& os, const Op& op) {
  switch (op.kind) {
    case Kind::Observe: os << "observe"; return;
    case Kind::Yield: os << "yield"; return;
    case Kind::Capture: os << "capture"; return;
    case Kind::Where: os << "where(u" << op.a << '=' << op.v << ')'; break;
    case Kind::Call: os << "call a" << op.a << (op.inter ? ".i " : ".s ") << await_name(op.await); break;
    case Kind::Run: os << "run L" << op.a << ' ' << await_name(op.await); break;
    case Kind::Post: os << "post L" << op.a; break;
    case Kind::Spawn: os << "spawn"; break;
    case Kind::Detach: os << "detach"; break;
    case Kind::Task: os << "task"; break;
    case Kind::Turn: os << "turn " << await_name(op.await); break;
    case Kind::Send: os << "send"; break;
    case Kind::RunSnap: os << "runsnap #" << op.a; break;
    case Kind::Defer:
      os << "defer(u" << op.a << '=' << op.v << ", u" << op.b << '=' << op.w << ')';
      break;
    case Kind::Table:
      os << "table " << table_name(op.table) << " a" << op.a << " s" << op.b << ' '
         << await_name(op.await);
      return;
  }
  os << ' ';
  print_block(os, op.body);
}

inline void print_block(std::ostream& os, const std::vector<Op>& ops) {
  os << '{';
  for (std::size_t i = 0; i < ops.size(); ++i) {
    os << (i ? "; " : " ");
    print_op(os, ops[i]);
  }
  os << (ops.empty() ? "}" : " }");
}

inline void showValue(const Op& op, std::ostream& os) { print_op(os, op); }
inline void showValue(const Program& p, std::ostream& os) {
  os << "activations " << p.activations << ", workers " << p.workers << ", roots:";
  for (std::size_t i = 0; i < p.roots.size(); ++i) {
    os << "\n    root " << i << ' ';
    print_block(os, p.roots[i]);
  }
}

// ---------------------------------------------------------------- generators

// The relative weights of the op kinds in a property's programs.
struct Mix {
  int weight[kKinds] = {};
  int max_depth = 3;     // nesting of bodies
  int max_roots = 3;
  int max_len = 4;       // ops in a root block
  int max_body_len = 3;  // ops in a nested block
  int await_now_in_4 = 2;  // how often a call / run / turn is awaited at once

  // Mix::of({{Kind::Read, 3}, {Kind::Where, 5}}): these weights, the others 0.
  static Mix of(std::initializer_list<std::pair<Kind, int>> weights) { return weighted<Mix>(weights); }
};

// Where a block runs: what its ops may do.
struct Features {
  bool async = true;      // false: a lane item or a plain body (no suspension)
  bool in_turn = false;   // ctx.task is available (a turn body, or its children)
  bool has_task = false;  // TaskContext::turn is available (a turn or a task)
};

inline bool allowed(Kind k, const Features& f) {
  switch (k) {
    case Kind::Observe:
    case Kind::Where:
    case Kind::Call:
    case Kind::Run:
    case Kind::Post:
    case Kind::Detach:
    case Kind::Capture:
    case Kind::RunSnap:
    case Kind::Table:
      return true;
    case Kind::Yield:
    case Kind::Spawn:
    case Kind::Send:
    case Kind::Defer:
      return f.async;
    case Kind::Task:
      return f.async && f.in_turn;
    case Kind::Turn:
      return f.async && f.has_task;
  }
  return false;
}

inline rc::Gen<std::vector<Op>> gen_block(const Mix& mix, int depth, Features f);

inline rc::Gen<std::vector<Op>> gen_body(const Mix& mix, int depth, Features f) {
  if (depth <= 0) return rc::gen::just(std::vector<Op>{});
  return rc::gen::lazy([=] { return gen_block(mix, depth - 1, f); });
}

inline rc::Gen<Await> gen_await(const Mix& mix, bool async) {
  if (!async) return rc::gen::just(Await::Never);
  return rc::gen::map(uniform_in(0, 11), [=](std::size_t x) {
    const auto now = static_cast<std::size_t>(3 * mix.await_now_in_4);
    if (x < now) return Await::Now;
    switch ((x - now) % 4) {
      case 0: return Await::Later;
      case 1: return Await::Never;
      case 2: return Await::Child;
      default: return Await::Detached;
    }
  });
}

// The body's features for an op of kind `k` in a block with features `f`.
inline Features body_features(Kind k, const Features& f) {
  Features in = f;
  switch (k) {
    case Kind::Call:
    case Kind::Turn:
      return Features{true, true, true};  // a turn body
    case Kind::Task:
      return Features{true, false, true};
    case Kind::Run:
    case Kind::Post:
      return Features{false, false, false};  // a lane item
    case Kind::Detach:
    case Kind::Send:
      return Features{true, false, false};
    case Kind::Defer:
    case Kind::Spawn:
      return in;
    default:
      return in;  // where, runsnap: same context
  }
}

inline rc::Gen<Op> gen_op_of(Kind k, const Mix& mix, int depth, Features f) {
  const Features inner = body_features(k, f);
  return rc::gen::map(
      rc::gen::tuple(uniform_in(0, 2), uniform_in(0, 2), uniform_in(0, 9), uniform_in(0, 9),
                     rc::gen::arbitrary<bool>(), gen_await(mix, f.async),
                     uniform_in(0, kTableOps - 1), gen_body(mix, depth, inner)),
      [k, f](std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, bool, Await,
                        std::size_t, std::vector<Op>>
                 t) {
        Op op;
        op.kind = k;
        op.a = static_cast<int>(std::get<0>(t));
        op.b = static_cast<int>(std::get<1>(t));
        op.v = static_cast<int>(std::get<2>(t));
        op.w = static_cast<int>(std::get<3>(t));
        op.inter = std::get<4>(t);
        op.await = std::get<5>(t);
        op.table = static_cast<TableOp>(std::get<6>(t));
        if (k == Kind::Where || k == Kind::Defer) {
          op.a %= kKeys;
          op.b %= kKeys;
        }
        if (k == Kind::Run || k == Kind::Post) op.a %= kLanes;
        const bool has_body = k != Kind::Observe && k != Kind::Yield && k != Kind::Capture &&
                              k != Kind::Table;
        if (has_body) op.body = std::move(std::get<7>(t));
        if (!f.async) op.await = Await::Never;
        return op;
      });
}

// One op: a kind drawn by weight among those allowed here.
inline rc::Gen<Op> gen_op(const Mix& mix, int depth, Features f) {
  return gen_by_weight<Kind>(
      mix, kKinds, [f](Kind k) { return allowed(k, f); },
      [=](Kind k) { return gen_op_of(k, mix, depth, f); });
}

inline rc::Gen<std::vector<Op>> gen_block(const Mix& mix, int depth, Features f) {
  return vector_of<Op>(0, static_cast<std::size_t>(mix.max_body_len), gen_op(mix, depth, f));
}

inline rc::Gen<Program> gen_program(const Mix& mix) {
  return rc::gen::map(
      rc::gen::tuple(vector_of<std::vector<Op>>(
                         1, static_cast<std::size_t>(mix.max_roots),
                         vector_of<Op>(1, static_cast<std::size_t>(mix.max_len),
                                       gen_op(mix, mix.max_depth, Features{}))),
                     uniform_in(2, 3), uniform_in(1, 2)),
      [](std::tuple<std::vector<std::vector<Op>>, std::size_t, std::size_t> t) {
        Program p;
        p.roots = std::move(std::get<0>(t));
        p.activations = static_cast<int>(std::get<1>(t));
        p.workers = static_cast<int>(std::get<2>(t));
        return p;
      });
}

// A program and its schedule, drawn as one value (generated_schedules.hpp).
using Case = Scheduled<Program>;
inline rc::Gen<Case> gen_case(const Mix& mix) { return with_schedule(gen_program(mix)); }

}  // namespace turnstile::prop::composed
