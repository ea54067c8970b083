// oracle/check/rules.hpp: the rule texts of spec/*.md, embedded at build time, for
// `turnstile-oracle explain` and the serve protocol's `explain`.
#pragma once

#include <span>
#include <string_view>

namespace turnstile::oracle {

struct RuleText {
  std::string_view id;     // "LANE-5.2"
  std::string_view title;  // the slug, "fifo"
  std::string_view file;   // "spec/state-lane.md"
  std::string_view text;   // the rule's text, verify: line included
};

std::span<const RuleText> all_rules();
const RuleText* find_rule(std::string_view id);  // null if unknown

}  // namespace turnstile::oracle
