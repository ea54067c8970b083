// property_tests/fiber_local/fl_program.hpp: the generated programs of the
// FiberLocal property suite, their printing and their generators.
//
// A program is a tree of operations run by the interpreter (fl_runner.hpp) on
// ManualSchedulers and, independently, by the sequential model (fl_model.hpp):
//
//   read                    record what try_get() returns for every key
//   yield / hop             co_await yield() / resume_on(the other scheduler)
//   throw(n)                throw; caught by the n-th enclosing try (0 = the
//                           innermost), or by the fiber's root when there are
//                           fewer than n + 1
//   capture                 FiberContext::capture() into this fiber's list of
//                           snapshots (a child, a detached fiber and a work item
//                           get a copy of the list as it stood when they started)
//   where(kK=V){...}        kK.where(V, body); `plain` runs a plain (synchronous)
//                           body, otherwise a Task body
//   try{...}                catches the throws aimed at it, then goes on
//   run(#i){...}            snapshot i (mod the count; the empty context when
//                           none was captured) .run(body); plain or Task body
//   spawn{...}              a child fiber in the enclosing block's Scope, joined
//                           at the end of that block (also on the throw edge)
//   detach{...}             detach(current_scheduler(), fiber): starts unbound
//   send[+ctx]{...}         a work item through the Channel to a worker fiber,
//                           which runs the body under the captured FiberContext
//                           (+ctx) or bare (no capture)
//
// Besides `read`, the interpreter reads at fixed points (each a "read point"):
// first thing inside every where / run body, after every where / try / run that
// completed normally, at the start and end of every fiber and work item, and in
// the worker just before and just after it serves an item. Every read point runs at most once (a
// program has no loops), so a run is a map read point -> observed values, compared with the
// model's.
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

namespace turnstile::prop::fl {

inline constexpr int kKeys = 3;

enum class Kind {
  // Ordered simplest first: a shrunk kind index moves towards `read`.
  Read,
  Yield,
  Hop,
  Throw,
  Capture,
  Where,
  Try,
  Run,
  Spawn,
  Detach,
  Send,
};
inline constexpr int kKinds = static_cast<int>(Kind::Send) + 1;

struct Op {
  Kind kind = Kind::Read;
  int key = 0;           // where: which key
  int value = 0;         // where: the bound value
  int levels = 0;        // throw: enclosing trys it passes through
  std::size_t snap = 0;  // run: which captured snapshot (mod the count)
  bool plain = false;    // where / run: a plain (synchronous) body
  bool capture = false;  // send: the item carries FiberContext::capture()
  std::vector<Op> body;  // where / try / run / spawn / detach / send
  int number = 0;        // pre-order number, assigned by number_program (not generated)
};

// The program and the world it runs in.
struct Scenario {
  std::vector<Op> program;    // the main fiber's body
  std::size_t workers = 1;    // worker fibers serving the Channel
  std::size_t capacity = 0;   // the Channel's capacity (0: rendezvous)
  bool workers_bind = false;  // each worker w runs its loop inside k0.where(-(w + 1))
};

// ------------------------------------------------------------------ printing

inline void print_block(std::ostream& os, const std::vector<Op>& ops, bool numbers);

// The kinds by name, in Kind order; the first five have no body.
inline constexpr const char* kKindNames[kKinds] = {
    "read", "yield", "hop", "throw", "capture", "where", "try", "run", "spawn", "detach", "send"};
inline constexpr int kFirstKindWithBody = static_cast<int>(Kind::Where);

inline void print_op(std::ostream& os, const Op& op, bool numbers) {
  if (numbers) os << '#' << op.number << ' ';
  switch (op.kind) {
    case Kind::Throw:
      os << "throw(" << op.levels << ')';
      break;
    case Kind::Where:
      os << (op.plain ? "plain-where(k" : "where(k") << op.key << '=' << op.value << ')';
      break;
    case Kind::Run:
      os << (op.plain ? "plain-run(#" : "run(#") << op.snap << ')';
      break;
    case Kind::Send:
      os << (op.capture ? "send+ctx" : "send");
      break;
    default:
      os << kKindNames[static_cast<int>(op.kind)];
      break;
  }
  if (static_cast<int>(op.kind) >= kFirstKindWithBody) print_block(os, op.body, numbers);
}

inline void print_block(std::ostream& os, const std::vector<Op>& ops, bool numbers) {
  os << '{';
  for (std::size_t i = 0; i < ops.size(); ++i) {
    os << (i ? "; " : " ");
    print_op(os, ops[i], numbers);
  }
  os << (ops.empty() ? "}" : " }");
}

inline std::string render(const std::vector<Op>& ops, bool numbers) {
  std::ostringstream os;
  print_block(os, ops, numbers);
  return os.str();
}

inline void showValue(const Op& op, std::ostream& os) { print_op(os, op, false); }
inline void showValue(const Scenario& s, std::ostream& os) {
  os << "program ";
  print_block(os, s.program, false);
  os << "\n  workers " << s.workers << (s.workers_bind ? " (each binds k0=-(w+1))" : "")
     << ", channel capacity " << s.capacity;
}

// Numbers every op in pre-order from 1 (0 is the main fiber's root).
inline int number_block(std::vector<Op>& ops, int next) {
  for (Op& op : ops) {
    op.number = next++;
    next = number_block(op.body, next);
  }
  return next;
}
inline Scenario number_program(Scenario s) {
  number_block(s.program, 1);
  return s;
}

// ---------------------------------------------------------------- generators

// The relative weights of the op kinds in a property's programs, and how
// often a send captures (capture_in_4 of 4).
struct Mix {
  int weight[kKinds] = {};
  int capture_in_4 = 2;
  int max_depth = 3;     // nesting depth of bodies at RapidCheck size 100
  int max_len = 8;       // ops in the main block at size 100
  int max_body_len = 4;  // ops in a nested block

  // Mix::of({{Kind::Read, 3}, {Kind::Where, 5}}): these weights, the others 0.
  static Mix of(std::initializer_list<std::pair<Kind, int>> weights) { return weighted<Mix>(weights); }
};

// Where a block runs: what its ops may do.
struct Features {
  bool async = true;     // false: inside a plain where/run body (no suspension)
  bool can_send = true;  // false: in a detached fiber or a work item (they may
                         // run after the Channel is closed)
};

inline bool allowed(Kind k, const Features& f) {
  switch (k) {
    case Kind::Read:
    case Kind::Throw:
    case Kind::Capture:
    case Kind::Where:
    case Kind::Try:
    case Kind::Run:
      return true;
    case Kind::Yield:
    case Kind::Hop:
    case Kind::Spawn:
    case Kind::Detach:
      return f.async;
    case Kind::Send:
      return f.async && f.can_send;
  }
  return false;
}

rc::Gen<std::vector<Op>> gen_block(const Mix& mix, int depth, std::size_t max_len, Features f);

// A bool that is true `in4` times in 4 and shrinks towards false.
inline rc::Gen<bool> gen_chance(int in4) {
  return rc::gen::map(uniform_in(0, 3),
                      [in4](std::size_t x) { return static_cast<int>(x) >= 4 - in4; });
}

inline rc::Gen<std::vector<Op>> gen_body(const Mix& mix, int depth, Features f) {
  if (depth <= 0) return rc::gen::just(std::vector<Op>{});
  return rc::gen::lazy(
      [=] { return gen_block(mix, depth - 1, static_cast<std::size_t>(mix.max_body_len), f); });
}

// One op of kind `k`; its body is `depth - 1` deep at most.
inline rc::Gen<Op> gen_op_of(Kind k, const Mix& mix, int depth, Features f) {
  const auto make = [k](auto&&... fields) {
    Op op;
    op.kind = k;
    (fields(op), ...);
    return op;
  };
  switch (k) {
    case Kind::Read:
    case Kind::Yield:
    case Kind::Hop:
    case Kind::Capture:
      return rc::gen::just(make());
    case Kind::Throw:
      return rc::gen::map(uniform_in(0, 2), [make](std::size_t n) {
        return make([n](Op& op) { op.levels = static_cast<int>(n); });
      });
    case Kind::Where:
    case Kind::Run: {
      // A plain body one time in four (always inside a plain body): its ops
      // must not suspend.
      const rc::Gen<bool> plain = f.async ? gen_chance(1) : rc::gen::just(true);
      return rc::gen::mapcat(plain, [=](bool is_plain) {
        Features inner = f;
        if (is_plain) inner.async = false;
        return rc::gen::map(
            rc::gen::tuple(uniform_in(0, kKeys - 1), uniform_in(0, 99), uniform_in(0, 3),
                           gen_body(mix, depth, inner)),
            [=](std::tuple<std::size_t, std::size_t, std::size_t, std::vector<Op>> t) {
              return make([&](Op& op) {
                op.plain = is_plain;
                if (k == Kind::Where) {
                  op.key = static_cast<int>(std::get<0>(t));
                  op.value = static_cast<int>(std::get<1>(t));
                } else {
                  op.snap = std::get<2>(t);
                }
                op.body = std::move(std::get<3>(t));
              });
            });
      });
    }
    case Kind::Try:
    case Kind::Spawn:
    case Kind::Detach:
    case Kind::Send: {
      Features inner = f;
      if (k == Kind::Detach || k == Kind::Send) inner.can_send = false;
      const rc::Gen<bool> capture =
          k == Kind::Send ? gen_chance(mix.capture_in_4) : rc::gen::just(false);
      return rc::gen::map(rc::gen::pair(capture, gen_body(mix, depth, inner)),
                          [make](std::pair<bool, std::vector<Op>> p) {
                            return make([&](Op& op) {
                              op.capture = p.first;
                              op.body = std::move(p.second);
                            });
                          });
    }
  }
  return rc::gen::just(make());
}

// One op: a kind drawn by weight among those allowed here (the index shrinks
// towards the simplest kind), then its fields.
inline rc::Gen<Op> gen_op(const Mix& mix, int depth, Features f) {
  return gen_by_weight<Kind>(
      mix, kKinds, [f](Kind k) { return allowed(k, f); },
      [=](Kind k) { return gen_op_of(k, mix, depth, f); });
}

inline rc::Gen<std::vector<Op>> gen_block(const Mix& mix, int depth, std::size_t max_len,
                                          Features f) {
  return vector_of<Op>(0, max_len, gen_op(mix, depth, f));
}

// A scenario whose program grows with RapidCheck's size: up to mix.max_len ops
// in the main block and mix.max_depth levels of nesting at size 100.
inline rc::Gen<Scenario> gen_scenario(const Mix& mix) {
  return rc::gen::withSize([mix](int size) {
    const int depth = 1 + (mix.max_depth - 1) * std::min(size, 100) / 100;
    const auto len = static_cast<std::size_t>(1 + (mix.max_len - 1) * std::min(size, 100) / 100);
    return rc::gen::map(
        rc::gen::tuple(vector_of<Op>(1, len, gen_op(mix, depth, Features{})), uniform_in(1, 2),
                       uniform_in(0, 2), rc::gen::arbitrary<bool>()),
        [](std::tuple<std::vector<Op>, std::size_t, std::size_t, bool> t) {
          Scenario s;
          s.program = std::move(std::get<0>(t));
          s.workers = std::get<1>(t);
          s.capacity = std::get<2>(t);
          s.workers_bind = std::get<3>(t);
          return s;
        });
  });
}

// A scenario and its schedule, drawn as one value (generated_schedules.hpp).
using Case = Scheduled<Scenario>;
inline rc::Gen<Case> gen_case(const Mix& mix) { return with_schedule(gen_scenario(mix)); }

}  // namespace turnstile::prop::fl
