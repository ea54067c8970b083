// oracle/scenario/generator.hpp: the scenario generator behind generate_scenarios()
// (spec/trace-format.md section 2, [TRACE-2.1]); internal to the oracle.
//
// Contract: Gen(seed, index, asked) makes scenario `index` of a listing; the
// result depends only on (seed, index, its contract, the contracts asked for),
// with an own splitmix64 generator and integer arithmetic only, so it is the
// same on every platform. Every `expect` lists every outcome the spec permits
// under any schedule (see generate.cpp's header for the reasoning per
// contract, generate_mixed.cpp's for the seams between contracts).
//
// Mixed scenarios: when more than one contract is asked for, a scenario of one
// contract may use the others (a lane scenario reads and captures in its
// turns, a fiber-local scenario submits turns, a turns scenario runs lane
// items from actor turns), but never one that was not asked for: a port that
// asks only for the contracts it implements gets only scenarios it can run.
// The `contract` tag stays the scenario's main contract.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnstile::oracle::gen {

using nlohmann::json;
using Env = std::map<std::string, std::string>;              // key -> bound value
using Ctxs = std::vector<std::pair<std::string, Env>>;       // captured contexts, in order

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
  bool chance(std::uint64_t percent) { return below(100) < percent; }
};

class Gen {
 public:
  Gen(std::uint64_t seed, std::size_t index, const std::vector<std::string>& asked);

  json lane(const std::string& id);
  json fiber_local(const std::string& id);
  json turns(const std::string& id);

 private:
  struct Link { std::size_t act; bool serial; };
  static constexpr std::size_t kInTurn = static_cast<std::size_t>(-1);  // a close made by a turn
  static constexpr std::size_t kNoLane = static_cast<std::size_t>(-1);  // mixed_where: no lane to reenter

  // generate.cpp: lane and fiber-local; generate_turns.cpp: turns.
  std::string op_id() { return "o" + std::to_string(++ops_); }
  std::string fiber_id() { return "f" + std::to_string(fibers_++); }
  json base(const std::string& id, const std::string& contract);
  void maybe_schedule(json& doc);
  json lane_body(std::size_t l, int depth, bool& throws, const Env& env, Ctxs& ctxs);
  json reentrant_run(std::size_t l, const char* rule);
  json read_op(const Env& env, const std::string& rule);
  json capture_op(const Env& env, Ctxs& ctxs);
  json fl_list(int depth, const Env& env, Ctxs& ctxs, std::string rule, bool may_throw);
  void two_request_cycle(json& doc);
  json call_op(std::size_t act, const std::vector<Link>& chain, int depth, const Env& env);
  json unawaited_call_op(std::size_t act, bool self_call, int depth, const Env& env);
  json turn_body(std::size_t act, const std::vector<Link>& chain, int depth, bool& throws,
                 bool tasks, const Env& env);
  json task_body(std::size_t act, int depth);
  static bool has(const Ctxs& c, const std::string& n);

  // generate_mixed.cpp: the seams between contracts.
  void mix_in(json& doc, const std::string& contract);
  void mixed_where(json& body, const Env& env, std::size_t l);
  bool read_or_where(json& body, const Env& env, std::size_t l, std::uint64_t r, std::uint64_t reads,
                     std::uint64_t wheres);
  json capture_in_turn(std::size_t l, const Env& env, Ctxs& ctxs);
  bool mixed_lane_step(json& body, std::size_t l, int depth, const Env& env, Ctxs& ctxs);
  void capture_at_end(json& body, bool throws, std::size_t l, const Env& env, Ctxs& ctxs);
  void install_after_turn(json& ops, const Ctxs& ctxs, const std::vector<bool>& closed_here);
  bool mixed_actor_step(json& body, const std::vector<Link>& chain, int depth, const Env& env);
  std::vector<std::string> lane_expect(std::size_t l, bool throws) const;

  Rng rng_;
  std::size_t ops_ = 0, fibers_ = 0, values_ = 0, ctx_count_ = 0;
  bool ask_lane_ = false, ask_fl_ = false, ask_turns_ = false;  // the contracts asked for
  bool lanes_on_ = false, fl_on_ = false, acts_on_ = false;     // what this scenario uses
  std::vector<std::string> lanes_, keys_;
  std::vector<std::vector<std::size_t>> closes_;  // per lane: the fibers (or kInTurn) closing it
  std::vector<bool> interleaved_;                 // per activation: `peek` is interleaved
  std::map<std::string, std::size_t> ctx_lane_;   // a context captured in a turn: its lane
};

}  // namespace turnstile::oracle::gen
