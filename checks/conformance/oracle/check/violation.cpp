// oracle/check/violation.cpp: mark_known() and the text and JSON forms of a
// Violation (oracle/check/violation.hpp).
#include "oracle/check/violation.hpp"

#include <string>

namespace turnstile::oracle {

std::pair<std::size_t, std::size_t> mark_known(std::vector<Violation>& violations,
                                               const std::set<std::string>& known) {
  std::size_t fresh = 0, old = 0;
  for (auto& v : violations) {
    v.known = known.count(v.rule) != 0 ||
              (v.consequence_of && known.count(v.consequence_of->rule) != 0);
    ++(v.known ? old : fresh);
  }
  return {fresh, old};
}

namespace {
std::string join(const std::vector<std::size_t>& lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(lines[i]);
  }
  return out;
}
}  // namespace

std::string to_string(const Violation& v) {
  // [TRACE-4.2] no lines: the rule and message alone (never "FILE:: [RULE]").
  std::string out = v.lines.empty() ? "" : join(v.lines) + ": ";
  out += "[" + v.rule + "] " + v.message;
  if (v.consequence_of) {
    out += " (consequence of [" + v.consequence_of->rule + "]";
    if (!v.consequence_of->lines.empty()) out += " at lines " + join(v.consequence_of->lines);
    out += ")";
  }
  return out;
}

nlohmann::json to_json(const Violation& v) {
  nlohmann::json cause = nullptr;
  if (v.consequence_of) cause = {{"rule", v.consequence_of->rule}, {"lines", v.consequence_of->lines}};
  return {{"rule", v.rule},     {"lines", v.lines},
          {"message", v.message}, {"known", v.known},
          {"consequence_of", cause}};
}

}  // namespace turnstile::oracle
