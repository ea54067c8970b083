// oracle/scenario/parse.cpp: parse_scenario (spec/trace-format.md section
// 2): a scenario is validated whole, every failure naming the field at fault.
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "oracle/scenario/scenario.hpp"

namespace turnstile::oracle {

namespace {

using nlohmann::json;

const std::set<std::string>& known_ops() {
  static const std::set<std::string> ops = {"run",   "post",   "close",   "throw",   "yield",
                                            "where", "read",   "spawn",   "detach",  "capture",
                                            "install", "call", "task",    "turn"};
  return ops;
}

const std::set<std::string>& ops_with_body() {
  static const std::set<std::string> ops = {"run",    "post",    "where", "spawn",
                                            "detach", "install", "call",  "task", "turn"};
  return ops;
}

// Validates one scenario; every failure names the field at fault.
class Validator {
 public:
  explicit Validator(std::string source) : source_(std::move(source)) {}

  std::optional<InputError> check(const json& doc) {
    if (!doc.is_object()) return fail("", "a scenario is a JSON object");
    if (!doc.contains("format") || !doc["format"].is_number_integer())
      return fail("format", "missing or not an integer");
    if (doc["format"].get<std::int64_t>() > kScenarioFormat)
      return fail("format", "scenario format " + doc["format"].dump() +
                                " is newer than this oracle (1): unsupported version");
    if (doc["format"].get<std::int64_t>() < 1) return fail("format", "must be 1");
    if (!nonempty_string(doc, "scenario")) return fail("scenario", "missing or not a non-empty string");
    if (!nonempty_string(doc, "contract")) return fail("contract", "missing or not a string");
    const std::string contract = doc["contract"].get<std::string>();
    if (contract != "lane" && contract != "fiber-local" && contract != "turns")
      return fail("contract", "must be \"lane\", \"fiber-local\" or \"turns\"");
    for (const char* list : {"lanes", "keys"}) {
      if (auto e = names(doc, list, list == std::string("lanes") ? lanes_ : keys_)) return e;
    }
    if (!doc.contains("activations") || !doc["activations"].is_array())
      return fail("activations", "missing or not an array");
    for (const auto& a : doc["activations"]) {
      if (!a.is_object() || !nonempty_string(a, "act"))
        return fail("activations", "each activation is an object with a string `act`");
      if (a.contains("interleaved")) {
        if (!a["interleaved"].is_array()) return fail("interleaved", "not an array");
        for (const auto& m : a["interleaved"])
          if (!m.is_string()) return fail("interleaved", "method names are strings");
      }
      if (!acts_.insert(a["act"].get<std::string>()).second)
        return fail("act", "activation '" + a["act"].get<std::string>() + "' listed twice");
    }
    if (!doc.contains("fibers") || !doc["fibers"].is_array())
      return fail("fibers", "missing or not an array");
    for (const auto& f : doc["fibers"]) {
      if (!f.is_object() || !nonempty_string(f, "fiber"))
        return fail("fiber", "each root fiber is an object with a string `fiber`");
      if (!fibers_.insert(f["fiber"].get<std::string>()).second)
        return fail("fiber", "fiber '" + f["fiber"].get<std::string>() + "' named twice");
      if (!f.contains("ops") || !f["ops"].is_array()) return fail("ops", "missing or not an array");
      if (auto e = op_list(f["ops"])) return e;
    }
    if (doc.contains("schedule")) {
      if (!doc["schedule"].is_array()) return fail("schedule", "not an array");
      for (const auto& k : doc["schedule"])
        if (!k.is_number_unsigned() && !(k.is_number_integer() && k.get<std::int64_t>() >= 0))
          return fail("schedule", "entries are non-negative integers");
    }
    return std::nullopt;
  }

 private:
  static bool nonempty_string(const json& o, const char* f) {
    return o.contains(f) && o[f].is_string() && !o[f].get<std::string>().empty();
  }
  InputError fail(std::string field, std::string message) const {
    return InputError{source_, 0, std::move(field), std::move(message)};
  }
  std::optional<InputError> names(const json& doc, const char* field, std::set<std::string>& out) {
    if (!doc.contains(field) || !doc[field].is_array())
      return fail(field, "missing or not an array");
    for (const auto& n : doc[field]) {
      if (!n.is_string() || n.get<std::string>().empty())
        return fail(field, "names are non-empty strings");
      out.insert(n.get<std::string>());
    }
    return std::nullopt;
  }
  std::optional<InputError> op_list(const json& ops) {
    for (const auto& op : ops)
      if (auto e = one_op(op)) return e;
    return std::nullopt;
  }
  std::optional<InputError> named(const json& op, const char* field, const std::set<std::string>& in,
                                  const std::string& id) {
    if (!nonempty_string(op, field)) return fail(field, "op '" + id + "': missing or not a string");
    if (!in.count(op[field].get<std::string>()))
      return fail(field, "op '" + id + "': '" + op[field].get<std::string>() +
                             "' is not declared at the top level");
    return std::nullopt;
  }
  std::optional<InputError> one_op(const json& op) {
    if (!op.is_object()) return fail("ops", "an operation is a JSON object");
    if (!nonempty_string(op, "id")) return fail("id", "missing or not a non-empty string");
    const std::string id = op["id"].get<std::string>();
    if (!ids_.insert(id).second) return fail("id", "op id '" + id + "' used twice");
    if (!op.contains("do") || !op["do"].is_string()) return fail("do", "op '" + id + "': missing");
    const std::string what = op["do"].get<std::string>();
    if (!known_ops().count(what)) return fail("do", "op '" + id + "': unknown operation '" + what + "'");
    if (what == "run" || what == "post" || what == "close") {
      if (auto e = named(op, "lane", lanes_, id)) return e;
    } else if (what == "where" || what == "read") {
      if (auto e = named(op, "key", keys_, id)) return e;
      if (what == "where" && (!op.contains("value") || op["value"].is_structured()))
        return fail("value", "op '" + id + "': missing or not a JSON scalar");
    } else if (what == "call") {
      if (auto e = named(op, "act", acts_, id)) return e;
      if (!nonempty_string(op, "method")) return fail("method", "op '" + id + "': missing");
      if (op.contains("await") && !op["await"].is_boolean())
        return fail("await", "op '" + id + "': not a boolean");
    } else if (what == "spawn" || what == "detach") {
      if (!nonempty_string(op, "fiber")) return fail("fiber", "op '" + id + "': missing");
      if (!fibers_.insert(op["fiber"].get<std::string>()).second)
        return fail("fiber", "op '" + id + "': fiber '" + op["fiber"].get<std::string>() +
                                 "' named twice");
    } else if (what == "capture" || what == "install") {
      if (!nonempty_string(op, "ctx")) return fail("ctx", "op '" + id + "': missing");
    }
    if (op.contains("expect")) {
      if (!op["expect"].is_array()) return fail("expect", "op '" + id + "': not an array");
      for (const auto& x : op["expect"])
        if (x.is_structured() || (what != "read" && !x.is_string()))
          return fail("expect", "op '" + id + "': outcomes are strings (values for a read)");
    }
    if (op.contains("rule") && !op["rule"].is_string())
      return fail("rule", "op '" + id + "': not a string");
    if (ops_with_body().count(what)) {
      if (op.contains("body") && !op["body"].is_array())
        return fail("body", "op '" + id + "': not an array");
      if (op.contains("body")) return op_list(op["body"]);
    } else if (op.contains("body") && !(op["body"].is_array() && op["body"].empty())) {
      return fail("body", "op '" + id + "': '" + what + "' takes no body");
    }
    return std::nullopt;
  }

  std::string source_;
  std::set<std::string> lanes_, keys_, acts_, fibers_, ids_;
};

}  // namespace

std::variant<Scenario, InputError> parse_scenario(const nlohmann::json& doc, std::string source) {
  try {
    Validator v(source);
    if (auto e = v.check(doc)) return *e;
    return Scenario{doc["scenario"].get<std::string>(), doc["contract"].get<std::string>(), doc};
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return InputError{std::move(source), 0, "", std::string("invalid scenario: ") + e.what()};
  }
}

}  // namespace turnstile::oracle
