// oracle/scenario/generate.cpp: generate_scenarios (spec/trace-format.md section 2,
// [TRACE-2.1]) and the generator's lane and fiber-local contracts
// (generator.hpp; turns: generate_turns.cpp; the seams between contracts:
// generate_mixed.cpp).
//
// Deterministic on every platform: an own splitmix64 generator, only integer
// arithmetic (no <random> distributions, whose output differs between standard
// libraries), and nlohmann::json objects (sorted keys) for the output. Scenario
// i depends only on (seed, i, its contract, the contracts asked for), not on
// count.
//
// Every `expect` lists every outcome the spec permits under any schedule:
//   lane: a close on another fiber races every submission (both outcomes); a
//     close earlier on the same fiber refuses for sure (a close made by a turn
//     counts as another fiber's); inside a turn, a
//     nested run on the same lane is refused `reentrant` (or `closed` when a
//     close exists: both are refusals), a nested post is accepted (or refused
//     `closed` when a close of that lane exists anywhere, since a posted turn
//     may run after a later close). A run of another lane from a turn is
//     started and not awaited (spec/porting.md section 4): ok or error by its
//     body, or refused:closed when that lane has a close.
//   fiber-local: values come from a sequential model (they do not depend on
//     the schedule: FL semantics are per fiber).
//   turns: an awaited call is refused at the await (`refused:wait-cycle`)
//     exactly when it is serial and a serial turn of the same activation is on
//     the chain of turns that await it (a Scope child counts as its turn);
//     otherwise ok, or error when the body ends with a throw. Nested calls only
//     go to activations of a higher index (or the same one), so no two requests
//     can wait for each other, except in the two-request shape, which has
//     activations of its own and lists both outcomes. A call with
//     `await: false` (a self-call, mostly) is never refused: it runs later.
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "oracle/scenario/generator.hpp"
#include "oracle/scenario/scenario.hpp"

namespace turnstile::oracle {

namespace gen {

namespace {
bool asked_for(const std::vector<std::string>& asked, const char* c) {
  for (const auto& a : asked) if (a == c) return true;
  return false;
}
}  // namespace

Gen::Gen(std::uint64_t seed, std::size_t index, const std::vector<std::string>& asked)
    : rng_{seed ^ (0x5851f42d4c957f2dULL * (index + 1))},
      ask_lane_(asked_for(asked, "lane")),
      ask_fl_(asked_for(asked, "fiber-local")),
      ask_turns_(asked_for(asked, "turns")) {
  rng_.next();
}

json Gen::base(const std::string& id, const std::string& contract) {
  return json{{"scenario", id}, {"format", kScenarioFormat}, {"contract", contract},
              {"lanes", json::array()}, {"keys", json::array()},
              {"activations", json::array()}, {"fibers", json::array()}};
}

void Gen::maybe_schedule(json& doc) {
  if (!rng_.chance(35)) return;  // deterministic vectors: an explicit schedule
  json s = json::array();
  const std::uint64_t n = 4 + rng_.below(24);
  for (std::uint64_t i = 0; i < n; ++i) s.push_back(rng_.below(8));
  doc["schedule"] = s;
}

// ------------------------------------------------------------------ lanes
json Gen::lane(const std::string& id) {
  json doc = base(id, "lane");
  const std::size_t nl = 1 + rng_.below(2), nf = 1 + rng_.below(3);
  for (std::size_t i = 0; i < nl; ++i) lanes_.push_back("L" + std::to_string(i));
  doc["lanes"] = lanes_;
  closes_.assign(nl, {});
  lanes_on_ = true;
  mix_in(doc, "lane");
  // Pass 1: each root fiber's top-level plan (kind, lane, a lane its turn closes).
  struct Top { std::string kind; std::size_t lane; std::size_t closes = kInTurn; };
  std::vector<std::vector<Top>> plan(nf);
  for (std::size_t f = 0; f < nf; ++f) {
    const std::size_t n = 1 + rng_.below(4);
    bool closed_one = false;
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t r = rng_.below(100);
      const std::size_t l = rng_.below(nl);
      if (r < 45) plan[f].push_back({"run", l});
      else if (r < 75) plan[f].push_back({"post", l});
      else if (r < 87) plan[f].push_back({"yield", l});
      else if (!closed_one) {
        plan[f].push_back({"close", l});
        closes_[l].push_back(f);
        closed_one = true;
      } else plan[f].push_back({"post", l});
      Top& t = plan[f].back();
      if ((t.kind == "run" || t.kind == "post") && nl > 1 && rng_.chance(8)) {
        t.closes = (l + 1) % nl;  // a close from inside a turn: started, not awaited
        closes_[t.closes].push_back(kInTurn);
      }
    }
  }
  // Pass 2: the ops with their expectations.
  for (std::size_t f = 0; f < nf; ++f) {
    json ops = json::array();
    std::vector<bool> closed_here(nl, false);
    Ctxs ctxs;  // contexts captured in this fiber's finished turns
    for (const Top& t : plan[f]) {
      const std::string& L = lanes_[t.lane];
      json op{{"id", op_id()}, {"do", t.kind}};
      if (t.kind == "yield") { ops.push_back(op); continue; }
      op["lane"] = L;
      if (t.kind == "close") {
        closed_here[t.lane] = true;
        ops.push_back(op);
        continue;
      }
      if (fl_on_ && !ctxs.empty() && rng_.chance(60)) install_after_turn(ops, ctxs, closed_here);
      Env env;  // a root fiber binds nothing, except around a submission
      std::string wkey, wvalue;
      if (fl_on_ && rng_.chance(30)) {
        wkey = keys_[rng_.below(keys_.size())];
        wvalue = "v" + std::to_string(++values_);
        env[wkey] = wvalue;
      }
      bool throws = false;
      Ctxs body_ctxs = ctxs;
      json body = lane_body(t.lane, 0, throws, env, body_ctxs);
      if (fl_on_ && t.kind == "run" && closes_[t.lane].empty() && rng_.chance(50))
        capture_at_end(body, throws, t.lane, env, body_ctxs);
      if (t.closes != kInTurn) {
        json c{{"id", op_id()}, {"do", "close"}, {"lane", lanes_[t.closes]}};
        body.insert(throws ? body.end() - 1 : body.end(), c);
      }
      op["body"] = body;
      bool other_close = false;
      for (std::size_t c : closes_[t.lane]) other_close = other_close || c != f;
      json expect = json::array();
      std::string rule;
      if (closed_here[t.lane]) {
        expect.push_back("refused:closed");
        rule = "LANE-7.4";
      } else {
        expect.push_back(t.kind == "post" ? "accepted" : (throws ? "error" : "ok"));
        rule = t.kind == "run" ? (throws ? "LANE-7.5" : "LANE-8.1") : "LANE-8.1";
        if (other_close) {
          expect.push_back("refused:closed");
          rule = "LANE-7.4";
        }
      }
      op["expect"] = expect;
      op["rule"] = rule;
      // An awaited run that cannot be refused has run its turn when it resumes:
      // the contexts its body captured exist from here on.
      if (t.kind == "run" && closes_[t.lane].empty()) ctxs = body_ctxs;
      if (wkey.empty()) {
        ops.push_back(op);
      } else {
        ops.push_back(json{{"id", op_id()}, {"do", "where"}, {"key", wkey}, {"value", wvalue},
                           {"body", json::array({op})}});
        ops.push_back(read_op(Env{}, "FL-3.1"));
      }
    }
    doc["fibers"].push_back(json{{"fiber", fiber_id()}, {"ops", ops}});
  }
  maybe_schedule(doc);
  return doc;
}

std::vector<std::string> Gen::lane_expect(std::size_t l, bool throws) const {
  std::vector<std::string> e{throws ? "error" : "ok"};
  if (!closes_[l].empty()) e.push_back("refused:closed");
  return e;
}

// A reentrant attempt from a turn of lane `l`: must be refused.
json Gen::reentrant_run(std::size_t l, const char* rule) {
  json expect = json::array({"refused:reentrant"});
  if (!closes_[l].empty()) expect.push_back("refused:closed");
  return json{{"id", op_id()}, {"do", "run"}, {"lane", lanes_[l]}, {"body", json::array()},
              {"expect", expect}, {"rule", rule}};
}

// A lane turn's (synchronous) body on lane `l`. `env` is what the turn sees
// (the submitter's bindings at the submission, [FL-3.9]); `ctxs` the contexts
// it may install, to which its own captures are added.
json Gen::lane_body(std::size_t l, int depth, bool& throws, const Env& env, Ctxs& ctxs) {
  json body = json::array();
  const bool mixed = fl_on_ || acts_on_;
  const std::size_t n = rng_.below(mixed ? 4 : 3);
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t r = rng_.below(100);
    if (mixed && r >= 60 && mixed_lane_step(body, l, depth, env, ctxs)) continue;
    if (r < 35) {
      body.push_back(reentrant_run(l, "LANE-5.3"));
      continue;
    }
    const std::size_t m = rng_.below(lanes_.size());
    bool inner_throws = false;
    Ctxs inner_ctxs = ctxs;  // the nested turn runs later: its captures stay in it
    json inner = depth < 1 ? lane_body(m, depth + 1, inner_throws, env, inner_ctxs) : json::array();
    if (m != l && rng_.chance(35)) {  // another lane's run: started, not awaited
      const char* rule = closes_[m].empty() ? (inner_throws ? "LANE-7.5" : "LANE-8.1") : "LANE-7.4";
      body.push_back(json{{"id", op_id()}, {"do", "run"}, {"lane", lanes_[m]}, {"body", inner},
                          {"expect", lane_expect(m, inner_throws)}, {"rule", rule}});
      continue;
    }
    json expect = json::array({"accepted"});
    std::string rule = m == l ? "LANE-7.7" : "LANE-8.1";
    if (!closes_[m].empty()) {
      expect.push_back("refused:closed");
      rule = "LANE-7.4";
    }
    body.push_back(json{{"id", op_id()}, {"do", "post"}, {"lane", lanes_[m]}, {"body", inner},
                        {"expect", expect}, {"rule", rule}});
  }
  if (rng_.chance(25)) {
    body.push_back(json{{"id", op_id()}, {"do", "throw"}});
    throws = true;
  }
  return body;
}

// ----------------------------------------------------------- fiber-local
json Gen::fiber_local(const std::string& id) {
  json doc = base(id, "fiber-local");
  const std::size_t nk = 1 + rng_.below(2), nf = 1 + rng_.below(3);
  for (std::size_t i = 0; i < nk; ++i) keys_.push_back("K" + std::to_string(i));
  doc["keys"] = keys_;
  fl_on_ = true;
  mix_in(doc, "fiber-local");
  std::vector<std::string> roots;
  for (std::size_t f = 0; f < nf; ++f) roots.push_back(fiber_id());
  for (std::size_t f = 0; f < nf; ++f) {
    Ctxs ctxs;
    json ops = fl_list(0, Env{}, ctxs, "FL-3.1", false);
    doc["fibers"].push_back(json{{"fiber", roots[f]}, {"ops", ops}});
  }
  maybe_schedule(doc);
  return doc;
}

json Gen::read_op(const Env& env, const std::string& rule) {
  const std::string& k = keys_[rng_.below(keys_.size())];
  auto it = env.find(k);
  json v = it == env.end() ? json(nullptr) : json(it->second);
  return json{{"id", op_id()}, {"do", "read"}, {"key", k}, {"expect", json::array({v})}, {"rule", rule}};
}

// A capture of the bindings `env` into a fresh context, added to `ctxs`.
json Gen::capture_op(const Env& env, Ctxs& ctxs) {
  const std::string name = "c" + std::to_string(++ctx_count_);
  ctxs.emplace_back(name, env);
  return json{{"id", op_id()}, {"do", "capture"}, {"ctx", name}};
}

json Gen::fl_list(int depth, const Env& env, Ctxs& ctxs, std::string rule, bool may_throw) {
  json ops = json::array();
  const std::size_t n = 1 + rng_.below(depth == 0 ? 5 : 3);
  for (std::size_t k = 0; k < n; ++k) {
    if (lanes_on_ && depth < 3 && rng_.chance(22)) {  // a fiber submits a turn: it sees `env`
      const std::size_t m = rng_.below(lanes_.size());
      bool throws = false;
      Ctxs body_ctxs = ctxs;
      json lb = lane_body(m, 0, throws, env, body_ctxs);
      const bool post = rng_.chance(30);
      if (!post && rng_.chance(50)) capture_at_end(lb, throws, m, env, body_ctxs);
      ops.push_back(json{{"id", op_id()}, {"do", post ? "post" : "run"}, {"lane", lanes_[m]}, {"body", lb},
                         {"expect", post ? json::array({"accepted"}) : json(lane_expect(m, throws))},
                         {"rule", throws && !post ? "LANE-7.5" : "LANE-8.1"}});
      if (!post) ctxs = body_ctxs;  // the turn ran before the run resumed (no close here)
      continue;
    }
    if (acts_on_ && depth < 3 && rng_.chance(12)) {  // a fiber calls an actor: the turn sees `env`
      ops.push_back(call_op(rng_.below(interleaved_.size()), {}, 0, env));
      continue;
    }
    const std::uint64_t r = rng_.below(100);
    if (r < 28 || depth >= 3) {
      ops.push_back(read_op(env, rule));
    } else if (r < 52) {
      const std::string& key = keys_[rng_.below(keys_.size())];
      const std::string value = "v" + std::to_string(++values_);
      Env inner = env;
      inner[key] = value;
      Ctxs inner_ctxs = ctxs;  // captures inside stay inside (their names live on)
      json body = fl_list(depth + 1, inner, inner_ctxs, "FL-3.1", true);
      for (auto& c : inner_ctxs) if (!has(ctxs, c.first)) ctxs.push_back(c);
      ops.push_back(json{{"id", op_id()}, {"do", "where"}, {"key", key}, {"value", value}, {"body", body}});
      ops.push_back(read_op(env, "FL-3.1"));  // restored, also after a throw
    } else if (r < 62) {
      Ctxs child = ctxs;
      json body = fl_list(depth + 1, env, child, "FL-3.2", true);
      ops.push_back(json{{"id", op_id()}, {"do", "spawn"}, {"fiber", fiber_id()}, {"body", body}});
      rule = "FL-3.3";
    } else if (r < 70) {
      Ctxs child = ctxs;
      json body = fl_list(depth + 1, Env{}, child, "FL-3.4", true);
      ops.push_back(json{{"id", op_id()}, {"do", "detach"}, {"fiber", fiber_id()}, {"body", body}});
    } else if (r < 80) {
      ops.push_back(capture_op(env, ctxs));
    } else if (r < 92 && !ctxs.empty()) {
      auto pick = ctxs[rng_.below(ctxs.size())];
      for (const auto& c : ctxs)  // one captured in a turn, mostly ([FL-3.8])
        if (ctx_lane_.count(c.first) != 0 && rng_.chance(70)) pick = c;
      const Env snap = pick.second;
      const std::string ctx = pick.first;
      Ctxs inner = ctxs;
      json body = fl_list(depth + 1, snap, inner, "FL-3.5", true);
      auto on_lane = ctx_lane_.find(ctx);
      if (on_lane != ctx_lane_.end()) {
        // [FL-3.8] captured in a turn of that lane, run after it: not on the lane.
        bool throws = false;
        Ctxs none;
        json lb = lane_body(on_lane->second, 1, throws, snap, none);
        body.insert(body.begin(), json{{"id", op_id()}, {"do", "run"}, {"lane", lanes_[on_lane->second]},
                                       {"body", lb}, {"expect", lane_expect(on_lane->second, throws)},
                                       {"rule", "FL-3.8"}});
      }
      ops.push_back(json{{"id", op_id()}, {"do", "install"}, {"ctx", ctx}, {"body", body}});
      ops.push_back(read_op(env, "FL-3.6"));
    } else {
      ops.push_back(json{{"id", op_id()}, {"do", "yield"}});
    }
  }
  if (may_throw && rng_.chance(15)) ops.push_back(json{{"id", op_id()}, {"do", "throw"}});
  return ops;
}

bool Gen::has(const Ctxs& c, const std::string& n) {
  for (auto& x : c) if (x.first == n) return true;
  return false;
}

}  // namespace gen

std::vector<nlohmann::json> generate_scenarios(std::uint64_t seed, std::size_t count,
                                               const std::vector<std::string>& contracts) {
  std::vector<std::string> cs = contracts;
  if (cs.empty()) cs = {"lane", "fiber-local", "turns"};
  std::vector<nlohmann::json> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& c = cs[i % cs.size()];
    char num[32];
    std::snprintf(num, sizeof num, "%04zu", i);
    const std::string id = c + "-s" + std::to_string(seed) + "-" + num;
    gen::Gen g(seed, i, cs);
    if (c == "lane") out.push_back(g.lane(id));
    else if (c == "fiber-local") out.push_back(g.fiber_local(id));
    else out.push_back(g.turns(id));
  }
  return out;
}

}  // namespace turnstile::oracle
