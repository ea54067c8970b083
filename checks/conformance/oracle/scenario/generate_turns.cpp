// oracle/scenario/generate_turns.cpp: the generator's `turns` contract (generator.hpp;
// spec/trace-format.md section 2, [TRACE-2.1]). How its `expect`s are
// derived is in generate.cpp's header ("turns").
#include <string>
#include <utility>
#include <vector>

#include "oracle/scenario/generator.hpp"

namespace turnstile::oracle::gen {

// ------------------------------------------------------------------ turns
json Gen::turns(const std::string& id) {
  json doc = base(id, "turns");
  const std::size_t na = 1 + rng_.below(3), nf = 1 + rng_.below(3);
  for (std::size_t i = 0; i < na; ++i) {
    const bool peek = rng_.chance(50);
    interleaved_.push_back(peek);
    json a{{"act", "A" + std::to_string(i)}, {"interleaved", peek ? json::array({"peek"}) : json::array()}};
    doc["activations"].push_back(a);
  }
  acts_on_ = true;
  mix_in(doc, "turns");
  std::vector<std::string> roots;
  for (std::size_t f = 0; f < nf; ++f) roots.push_back(fiber_id());
  for (std::size_t f = 0; f < nf; ++f) {
    json ops = json::array();
    const std::size_t n = 1 + rng_.below(3);
    for (std::size_t k = 0; k < n; ++k) {
      if (rng_.chance(15)) {
        ops.push_back(json{{"id", op_id()}, {"do", "yield"}});
      } else if (fl_on_ && rng_.chance(35)) {  // the call's turn sees the caller's binding
        const std::string& key = keys_[rng_.below(keys_.size())];
        const std::string value = "v" + std::to_string(++values_);
        json call = call_op(rng_.below(na), {}, 0, Env{{key, value}});
        ops.push_back(json{{"id", op_id()}, {"do", "where"}, {"key", key}, {"value", value},
                           {"body", json::array({call})}});
        ops.push_back(read_op(Env{}, "FL-3.1"));
      } else {
        ops.push_back(call_op(rng_.below(na), {}, 0, Env{}));
      }
    }
    doc["fibers"].push_back(json{{"fiber", roots[f]}, {"ops", ops}});
  }
  if (rng_.chance(20)) two_request_cycle(doc);
  maybe_schedule(doc);
  return doc;
}

// Two requests that may wait for each other ([TURN-7.1]): on two activations
// of their own (no other call goes there), root fiber x calls P whose turn
// awaits a call into Q, and root fiber y calls Q whose turn awaits a call into
// P. Whether both turns are running when they await depends on the schedule
// (the scenario format has no way to order two fibers): when they are, one of
// the two awaits closes the cycle and is refused, the other completes; when
// not, both complete. Each inner call lists both outcomes; the checker judges
// the cycle itself on the trace.
void Gen::two_request_cycle(json& doc) {
  const std::size_t p = interleaved_.size(), q = p + 1;
  for (std::size_t a : {p, q}) {
    interleaved_.push_back(false);
    doc["activations"].push_back(json{{"act", "A" + std::to_string(a)}, {"interleaved", json::array()}});
  }
  for (const auto& [from, to] : {std::pair{p, q}, std::pair{q, p}}) {
    json inner{{"id", op_id()}, {"do", "call"}, {"act", "A" + std::to_string(to)}, {"method", "m0"},
               {"body", json::array()}, {"expect", json::array({"ok", "refused:wait-cycle"})},
               {"rule", "TURN-7.1"}};
    json body = json::array({json{{"id", op_id()}, {"do", "yield"}}, inner});
    json outer{{"id", op_id()}, {"do", "call"}, {"act", "A" + std::to_string(from)}, {"method", "m1"},
               {"body", body}, {"expect", json::array({"ok"})}, {"rule", "TURN-2.1"}};
    doc["fibers"].push_back(json{{"fiber", fiber_id()}, {"ops", json::array({outer})}});
  }
}

// An awaited call into `act` from the turns of `chain` (innermost last; the
// turns that wait for this await). It closes a cycle of waits, and is refused
// at the await, exactly when it is serial and a serial turn of `act` is on
// the chain: that turn holds `act`, so the call waits for it while it waits
// for the call ([TURN-7.1]). No other cycle can form: nested calls go to the
// same or a higher activation. The call's turn sees the caller's `env`.
json Gen::call_op(std::size_t act, const std::vector<Link>& chain, int depth, const Env& env) {
  static const char* const methods[] = {"m0", "m1", "peek"};
  const std::string method = methods[rng_.below(3)];
  const bool serial = !(method == "peek" && interleaved_[act]);
  bool refused = false;
  for (const Link& l : chain) refused = refused || (serial && l.serial && l.act == act);
  json op{{"id", op_id()}, {"do", "call"}, {"act", "A" + std::to_string(act)}, {"method", method}};
  if (refused) {
    op["body"] = json::array();  // it still runs, after the turn it would wait for
    op["expect"] = json::array({"refused:wait-cycle"});
    op["rule"] = "TURN-7.1";
    return op;
  }
  std::vector<Link> inner = chain;
  inner.push_back({act, serial});
  bool throws = false;
  op["body"] = turn_body(act, inner, depth + 1, throws, true, env);
  op["expect"] = json::array({throws ? "error" : "ok"});
  op["rule"] = "TURN-2.1";
  return op;
}

// A call that is not awaited (`await: false`): it queues and its turn runs on
// its own, after the current turn when it is a serial self-call; no turn waits
// for it, so it is never refused ([TURN-7.1]) and its own turn is the only one
// its awaits wait from.
json Gen::unawaited_call_op(std::size_t act, bool self_call, int depth, const Env& env) {
  static const char* const methods[] = {"m0", "m1", "peek"};
  const std::string method = methods[rng_.below(3)];
  const bool serial = !(method == "peek" && interleaved_[act]);
  bool throws = false;
  json body = turn_body(act, {{act, serial}}, depth + 1, throws, true, env);
  return json{{"id", op_id()}, {"do", "call"}, {"act", "A" + std::to_string(act)}, {"method", method},
              {"await", false}, {"body", body}, {"expect", json::array({throws ? "error" : "ok"})},
              {"rule", self_call && serial ? "TURN-7.1" : "TURN-2.1"}};
}

// An activation turn's body (`tasks`: ctx.task is available; `env`: the
// bindings it sees, [FL-3.9]).
json Gen::turn_body(std::size_t act, const std::vector<Link>& chain, int depth, bool& throws, bool tasks,
                    const Env& env) {
  json body = json::array();
  const std::size_t n = depth > 3 ? 0 : rng_.below(4);
  const std::size_t na = interleaved_.size();
  for (std::size_t k = 0; k < n; ++k) {
    if ((lanes_on_ || fl_on_) && rng_.chance(30) && mixed_actor_step(body, chain, depth, env)) continue;
    const std::uint64_t r = rng_.below(100);
    if (r < 27) {
      body.push_back(json{{"id", op_id()}, {"do", "yield"}});
    } else if (r < 50 && act + 1 < na) {
      body.push_back(call_op(act + 1 + rng_.below(na - act - 1), chain, depth, env));
    } else if (r < 68) {
      body.push_back(call_op(act, chain, depth, env));  // a self-call attempt
    } else if (r < 78 && depth < 3) {
      body.push_back(unawaited_call_op(act, true, depth, env));  // runs after this turn
    } else if (r < 84 && depth < 3) {
      // A Scope child is part of the turn: its awaits wait from the turn; it
      // sees the turn's bindings ([FL-3.2]).
      json child = json::array();
      const std::size_t m = 1 + rng_.below(2);
      for (std::size_t i = 0; i < m; ++i) {
        if (fl_on_ && rng_.chance(30)) child.push_back(read_op(env, "FL-3.2"));
        else if (rng_.chance(30)) child.push_back(json{{"id", op_id()}, {"do", "yield"}});
        else if (act + 1 < na && rng_.chance(40)) child.push_back(call_op(act + 1 + rng_.below(na - act - 1), chain, depth + 1, env));
        else child.push_back(call_op(act, chain, depth + 1, env));
      }
      body.push_back(json{{"id", op_id()}, {"do", "spawn"}, {"fiber", fiber_id()}, {"body", child}});
    } else if (r < 94 && tasks && depth < 3) {
      body.push_back(json{{"id", op_id()}, {"do", "task"}, {"body", task_body(act, depth + 1)}});
    }
  }
  if (rng_.chance(15)) {
    body.push_back(json{{"id", op_id()}, {"do", "throw"}});
    throws = true;
  }
  return body;
}

// A task's body: yields and serial re-entries through turn(). A task starts
// with no bindings, and a turn() from it sees the task's ([FL-3.9]).
json Gen::task_body(std::size_t act, int depth) {
  json body = json::array();
  const std::size_t n = 1 + rng_.below(3);
  for (std::size_t k = 0; k < n; ++k) {
    if (rng_.chance(35)) {
      body.push_back(json{{"id", op_id()}, {"do", "yield"}});
    } else {
      bool throws = false;
      json inner = turn_body(act, {{act, true}}, depth + 1, throws, false, Env{});
      body.push_back(json{{"id", op_id()}, {"do", "turn"}, {"body", inner},
                          {"expect", json::array({throws ? "error" : "ok"})}, {"rule", "TURN-5.2"}});
    }
  }
  return body;
}

}  // namespace turnstile::oracle::gen
