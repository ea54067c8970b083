// oracle/serve.cpp: the `serve` subcommand, the JSON Lines protocol of
// spec/trace-format.md section 3 ([TRACE-3.1]): one response line per request
// line, in order, echoing `id`; a bad request gets an error response and the
// session goes on; it ends at end of input or after `bye`.
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "oracle/check/rules.hpp"
#include "oracle/check/trace_checker.hpp"
#include "oracle/commands.hpp"
#include "oracle/pipeline.hpp"
#include "oracle/scenario/scenario.hpp"
#include "oracle/trace/reader.hpp"

namespace turnstile::oracle {

namespace {

using nlohmann::json;

constexpr int kServeProtocol = 1;  // spec/trace-format.md section 3
constexpr const char* kOracleVersion = "turnstile-oracle 0.1";

struct RequestError {
  std::string code;
  std::string message;
};

json error_response(const json& id, const RequestError& e) {
  return json{{"id", id}, {"ok", false}, {"error", {{"code", e.code}, {"message", e.message}}}};
}

std::uint64_t unsigned_field(const json& req, const char* field) {
  if (!req.contains(field) || !req[field].is_number_unsigned())
    throw RequestError{"bad-request", std::string("field '") + field + "': a non-negative integer is required"};
  return req[field].get<std::uint64_t>();
}

json hello(const json& req) {
  if (!req.contains("protocol") || !req["protocol"].is_number_integer())
    throw RequestError{"bad-request", "field 'protocol': an integer is required"};
  if (req["protocol"].get<std::int64_t>() != kServeProtocol)
    throw RequestError{"unsupported-version", "protocol " + req["protocol"].dump() +
                                                  " is not supported; this oracle speaks protocol 1"};
  return json{{"protocol", kServeProtocol}, {"trace_format", kTraceFormat},
              {"scenario_format", kScenarioFormat}, {"oracle", kOracleVersion}};
}

json scenarios(const json& req) {
  const std::uint64_t seed = unsigned_field(req, "seed");
  const std::uint64_t count = unsigned_field(req, "count");
  if (count > 100000) throw RequestError{"bad-request", "field 'count': at most 100000 per request"};
  std::vector<std::string> contracts;
  if (req.contains("contract")) {
    const json& c = req["contract"];
    const json list = c.is_array() ? c : json::array({c});
    for (const auto& x : list) {
      if (!x.is_string() || (x != "lane" && x != "fiber-local" && x != "turns"))
        throw RequestError{"bad-request",
                           "field 'contract': one of \"lane\", \"fiber-local\", \"turns\" or a list of them"};
      contracts.push_back(x.get<std::string>());
    }
  }
  return json{{"scenarios", generate_scenarios(seed, count, contracts)}};
}

json check(const json& req) {
  if (!req.contains("trace") || !req["trace"].is_string())
    throw RequestError{"bad-request", "field 'trace': the trace as a string of JSON Lines is required"};
  std::set<std::string> known;
  if (req.contains("known_failures")) {
    if (!req["known_failures"].is_array())
      throw RequestError{"bad-request", "field 'known_failures': a list of rule IDs is required"};
    for (const auto& k : req["known_failures"]) {
      if (!k.is_string()) throw RequestError{"bad-request", "field 'known_failures': rule IDs are strings"};
      std::string id = k.get<std::string>();
      if (id.size() > 2 && id.front() == '[' && id.back() == ']') id = id.substr(1, id.size() - 2);
      // As `check --known-failures`: an ID that is no rule is not silently ignored.
      const RuleText* rule = find_rule(id);
      if (rule == nullptr)
        throw RequestError{"bad-request", "field 'known_failures': unknown rule ID '" + id + "'"};
      known.insert(std::string(rule->id));
    }
  }
  std::optional<Scenario> scenario;
  if (req.contains("scenario")) {
    auto parsed = parse_scenario(req["scenario"], "<scenario>");
    if (auto* e = std::get_if<InputError>(&parsed)) {
      if (e->message.find("unsupported version") != std::string::npos)
        throw RequestError{"unsupported-version", e->to_string()};
      throw RequestError{"bad-request", e->to_string()};
    }
    scenario = std::get<Scenario>(std::move(parsed));
  }
  // One pass over the request's trace text: no copy of it, no event kept.
  StreamResult checked = check_stream_text(req["trace"].get_ref<const std::string&>(), "<request>",
                                           scenario ? &*scenario : nullptr);
  if (checked.error) {
    // A trace of another scenario is a bad request; any other error an unusable trace.
    if (checked.wrong_scenario) throw RequestError{"bad-request", checked.error->to_string()};
    throw RequestError{"unusable-trace", checked.error->to_string()};
  }
  std::vector<Violation> violations = std::move(checked.violations);
  const auto [fresh, old] = mark_known(violations, known);
  json list = json::array();
  for (const auto& v : violations) list.push_back(to_json(v));
  return json{{"verdict", fresh == 0 ? "pass" : "fail"}, {"violations", list},
              {"new_failures", fresh}, {"known_failures", old}};
}

json explain(const json& req) {
  if (!req.contains("rule") || !req["rule"].is_string())
    throw RequestError{"bad-request", "field 'rule': a rule ID is required"};
  std::string id = req["rule"].get<std::string>();
  if (id.size() > 2 && id.front() == '[' && id.back() == ']') id = id.substr(1, id.size() - 2);
  const RuleText* r = find_rule(id);
  if (r == nullptr) throw RequestError{"bad-request", "field 'rule': no rule '" + id + "' in spec/"};
  return json{{"rule", std::string(r->id)}, {"title", std::string(r->title)}, {"text", std::string(r->text)}};
}

}  // namespace

int cmd_serve(Args args) {
  if (!args.empty()) {
    std::cerr << "usage: turnstile-oracle serve (requests on stdin, responses on stdout)\n";
    return 2;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    json id = nullptr;
    json response;
    bool bye = false;
    try {
      const json req = json::parse(line, nullptr, false);
      if (req.is_discarded() || !req.is_object())
        throw RequestError{"bad-request", "a request is one JSON object per line"};
      if (req.contains("id")) id = req["id"];
      if (!req.contains("id")) throw RequestError{"bad-request", "field 'id': required"};
      if (!req.contains("method") || !req["method"].is_string())
        throw RequestError{"bad-request", "field 'method': a string is required"};
      const std::string method = req["method"].get<std::string>();
      json result;
      if (method == "hello") result = hello(req);
      else if (method == "scenarios") result = scenarios(req);
      else if (method == "check") result = check(req);
      else if (method == "explain") result = explain(req);
      else if (method == "bye") { result = json::object(); bye = true; }
      else throw RequestError{"unknown-method", "unknown method '" + method + "'"};
      response = json{{"id", id}, {"ok", true}};
      for (auto& [k, v] : result.items()) response[k] = v;
    } catch (const RequestError& e) {
      response = error_response(id, e);
    } catch (const std::bad_alloc&) {
      response = error_response(id, {"bad-request", "out of memory handling the request"});
    } catch (const std::exception& e) {
      response = error_response(id, {"bad-request", e.what()});
    }
    std::cout << response.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    std::cout.flush();
    if (bye) return 0;
  }
  return 0;
}

}  // namespace turnstile::oracle
