// oracle/scenario/generate_mixed.cpp: the seams between contracts in generated
// scenarios (generator.hpp; spec/trace-format.md section 2, [TRACE-2.1]).
//
// When a port asks for several contracts, most scenarios cross them, at the
// places where one contract's guarantee depends on another's:
//   - reads and `where` in a lane turn: the turn sees the submitter's bindings
//     at the submission ([FL-3.9]), a `where` inside it restores ([FL-3.1]);
//   - a context captured in a turn and installed after it, by the fiber whose
//     awaited `run` made the turn: the snapshot does not carry the lane marker
//     out, so a `run` of that lane under it is accepted ([FL-3.8]; a port
//     whose snapshot keeps the marker refuses it: [LANE-8.7]);
//   - FiberContext::run (`install`) inside a turn: it keeps the marker, so a
//     reentrant `run` under it is refused ([FL-3.8]; a port that drops the
//     marker accepts it: [LANE-5.3]);
//   - `detach` from a lane turn: the handoff carries no bindings and no marker,
//     so its `run` of the same lane is accepted ([LANE-6.2], [FL-3.4]);
//     `spawn` from an actor turn: the child sees the turn's bindings ([FL-3.2]);
//   - a lane turn that calls an actor (`await: false`: a turn body is
//     synchronous; the call's turn sees the item's bindings, [FL-3.9]), and an
//     actor turn that runs a lane item (awaited; the item is not part of the
//     turn and sees its bindings).
// `spawn` inside a lane turn is not generated: a structured child must be
// joined, and a lane turn cannot wait (spec/porting.md section 4).
#include <string>
#include <vector>

#include "oracle/scenario/generator.hpp"

namespace turnstile::oracle::gen {

// Declares the other asked-for contracts' objects this scenario uses: each
// one with a chance of 70%, so that both the crossings and the plain
// scenarios of each contract come at any count.
void Gen::mix_in(json& doc, const std::string& contract) {
  if (contract != "fiber-local" && ask_fl_ && rng_.chance(70)) {
    fl_on_ = true;
    const std::size_t nk = 1 + rng_.below(2);
    for (std::size_t i = 0; i < nk; ++i) keys_.push_back("K" + std::to_string(i));
    doc["keys"] = keys_;
  }
  if (contract != "lane" && ask_lane_ && rng_.chance(70)) {
    lanes_on_ = true;
    const std::size_t nl = 1 + rng_.below(2);
    for (std::size_t i = 0; i < nl; ++i) lanes_.push_back("L" + std::to_string(i));
    closes_.assign(nl, {});  // no close: a turn submitted from anywhere runs
    doc["lanes"] = lanes_;
  }
  if (contract != "turns" && ask_turns_ && rng_.chance(70)) {
    acts_on_ = true;
    const std::size_t na = 1 + rng_.below(2);
    for (std::size_t i = 0; i < na; ++i) {
      const bool peek = rng_.chance(50);
      interleaved_.push_back(peek);
      doc["activations"].push_back(json{{"act", "A" + std::to_string(i)},
                                        {"interleaved", peek ? json::array({"peek"}) : json::array()}});
    }
  }
}

// Appends to `body` a `where` of a fresh value on a random key whose body reads
// it, maybe runs lane `l` reentrantly (not when l is kNoLane), maybe throws;
// then a read after it (the value is restored).
void Gen::mixed_where(json& body, const Env& env, std::size_t l) {
  const std::string& key = keys_[rng_.below(keys_.size())];
  const std::string value = "v" + std::to_string(++values_);
  Env inner = env;
  inner[key] = value;
  json sub = json::array({read_op(inner, "FL-3.1")});
  if (l != kNoLane && rng_.chance(30)) sub.push_back(reentrant_run(l, "LANE-5.3"));
  if (rng_.chance(15)) sub.push_back(json{{"id", op_id()}, {"do", "throw"}});
  body.push_back(json{{"id", op_id()}, {"do", "where"}, {"key", key}, {"value", value}, {"body", sub}});
  body.push_back(read_op(env, "FL-3.1"));
}

// The fiber-local steps of a turn body that runs another contract's work
// (mixed_lane_step, mixed_actor_step): when r < reads, a read that must see
// the bindings it was submitted or called with ([FL-3.9]); when r < wheres, a
// where (reentering lane `l` inside, unless kNoLane). False: neither (r past both).
bool Gen::read_or_where(json& body, const Env& env, std::size_t l, std::uint64_t r, std::uint64_t reads,
                        std::uint64_t wheres) {
  if (r < reads) {
    body.push_back(read_op(env, "FL-3.9"));
  } else if (r < wheres) {
    mixed_where(body, env, l);
  } else {
    return false;
  }
  return true;
}

// One step of another contract in the body of a turn of lane `l` (see the
// file header); false when none applies.
bool Gen::mixed_lane_step(json& body, std::size_t l, int depth, const Env& env, Ctxs& ctxs) {
  const std::uint64_t r = rng_.below(100);
  if (acts_on_ && depth < 2 && (r >= 82 || !fl_on_)) {
    // A lane item calls an actor: the call queues, its turn is not on the lane.
    body.push_back(unawaited_call_op(rng_.below(interleaved_.size()), false, depth + 2, env));
    return true;
  }
  if (!fl_on_) return false;
  if (read_or_where(body, env, l, r, 22, 36)) return true;
  if (r < 50) {
    body.push_back(capture_in_turn(l, env, ctxs));
  } else if (r < 66) {
    // [FL-3.8] a snapshot run inside the turn keeps the marker (one taken
    // here when there is none to take).
    if (ctxs.empty()) body.push_back(capture_in_turn(l, env, ctxs));
    const auto pick = ctxs[rng_.below(ctxs.size())];
    json sub = json::array({read_op(pick.second, "FL-3.5"), reentrant_run(l, "FL-3.8")});
    if (rng_.chance(40)) sub.push_back(read_op(pick.second, "FL-3.5"));
    body.push_back(json{{"id", op_id()}, {"do", "install"}, {"ctx", pick.first}, {"body", sub}});
    body.push_back(read_op(env, "FL-3.6"));
  } else if (r < 82 && depth < 2) {
    // [LANE-6.2] a handoff from the turn enters the same lane normally.
    bool throws = false;
    Ctxs none;
    json lb = lane_body(l, depth + 1, throws, Env{}, none);
    json sub = json::array({read_op(Env{}, "FL-3.4"),
                            json{{"id", op_id()}, {"do", "run"}, {"lane", lanes_[l]}, {"body", lb},
                                 {"expect", lane_expect(l, throws)},
                                 {"rule", closes_[l].empty() ? "LANE-6.2" : "LANE-7.4"}}});
    body.push_back(json{{"id", op_id()}, {"do", "detach"}, {"fiber", fiber_id()}, {"body", sub}});
  } else {
    return false;
  }
  return true;
}

// A capture in a turn of lane `l`: its context is remembered as taken on that
// lane (install_after_turn() and fl_list() run a lane under it after the turn).
json Gen::capture_in_turn(std::size_t l, const Env& env, Ctxs& ctxs) {
  json c = capture_op(env, ctxs);
  ctx_lane_[ctxs.back().first] = l;
  return c;
}

// A capture as the last step of a turn body (before its throw).
void Gen::capture_at_end(json& body, bool throws, std::size_t l, const Env& env, Ctxs& ctxs) {
  body.insert(throws ? body.end() - 1 : body.end(), capture_in_turn(l, env, ctxs));
}

// At the top level of a lane scenario's root fiber: installs a context that
// one of its finished turns captured, and runs that lane under it ([FL-3.8]:
// not on the lane any more), then reads its own bindings back ([FL-3.6]).
void Gen::install_after_turn(json& ops, const Ctxs& ctxs, const std::vector<bool>& closed_here) {
  auto pick = ctxs[rng_.below(ctxs.size())];
  for (const auto& c : ctxs)  // the newest one captured in a turn, mostly
    if (ctx_lane_.count(c.first) != 0 && rng_.chance(70)) pick = c;
  json sub = json::array({read_op(pick.second, "FL-3.5")});
  const auto on = ctx_lane_.find(pick.first);
  const std::size_t l = on != ctx_lane_.end() ? on->second : rng_.below(lanes_.size());
  bool throws = false;
  Ctxs none;
  json lb = lane_body(l, 1, throws, pick.second, none);
  json run{{"id", op_id()}, {"do", "run"}, {"lane", lanes_[l]}, {"body", lb}};
  if (closed_here[l]) {
    run["expect"] = json::array({"refused:closed"});
    run["rule"] = "LANE-7.4";
  } else {
    run["expect"] = lane_expect(l, throws);
    run["rule"] = "FL-3.8";
  }
  sub.push_back(run);
  ops.push_back(json{{"id", op_id()}, {"do", "install"}, {"ctx", pick.first}, {"body", sub}});
  ops.push_back(read_op(Env{}, "FL-3.6"));
}

// One step of another contract in an actor turn's body, which sees `env`.
bool Gen::mixed_actor_step(json& body, const std::vector<Link>& chain, int depth, const Env& env) {
  (void)chain;  // nothing here awaits a call: the chain of waits is unchanged
  const std::uint64_t r = rng_.below(100);
  if (lanes_on_ && depth < 3 && (r < 50 || !fl_on_)) {
    // An actor turn runs a lane item: not on the lane ([FL-3.9]), so accepted.
    const std::size_t m = rng_.below(lanes_.size());
    bool throws = false;
    Ctxs none;
    json lb = lane_body(m, 1, throws, env, none);
    if (rng_.chance(25)) {
      json expect = json::array({"accepted"});
      if (!closes_[m].empty()) expect.push_back("refused:closed");
      body.push_back(json{{"id", op_id()}, {"do", "post"}, {"lane", lanes_[m]}, {"body", lb},
                          {"expect", expect}, {"rule", "FL-3.9"}});
    } else {
      body.push_back(json{{"id", op_id()}, {"do", "run"}, {"lane", lanes_[m]}, {"body", lb},
                          {"expect", lane_expect(m, throws)}, {"rule", "FL-3.9"}});
    }
    return true;
  }
  if (!fl_on_) return false;
  if (read_or_where(body, env, kNoLane, r, 75, 90)) return true;
  // A handoff from an actor turn carries nothing ([FL-3.4]).
  body.push_back(json{{"id", op_id()}, {"do", "detach"}, {"fiber", fiber_id()},
                      {"body", json::array({read_op(Env{}, "FL-3.4")})}});
  return true;
}

}  // namespace turnstile::oracle::gen
