// oracle/scenario/scenario.hpp: portable scenarios (spec/trace-format.md section 2):
// the model, parsed (parse.cpp) and generated (generate*.cpp). A trace is checked
// against a scenario's `expect`s in oracle/scenario/expectations.hpp.
//
// Contract: generate_scenarios() is deterministic in (seed, count, contracts): the
// same arguments give byte-identical scenarios on every platform. Every `expect`
// it writes lists every outcome the spec permits for that operation under any
// schedule. parse_scenario() never throws on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/trace/event.hpp"

namespace turnstile::oracle {

inline constexpr int kScenarioFormat = 1;

struct Scenario {
  std::string id;
  std::string contract;  // "lane" | "fiber-local" | "turns"
  nlohmann::json doc;    // the whole validated scenario object
};

std::variant<Scenario, InputError> parse_scenario(const nlohmann::json& doc,
                                                  std::string source);

// contracts empty = all three.
std::vector<nlohmann::json> generate_scenarios(std::uint64_t seed, std::size_t count,
                                               const std::vector<std::string>& contracts);

}  // namespace turnstile::oracle
