// oracle/trace/names.hpp (internal to Event): the field names of trace format
// 1 (spec/trace-format.md section 1; the tables of fields.cpp), numbered
// from 1 for Event's field index. Inline and branchy on purpose: called with a
// literal (`e.str("lane")`), it folds to a constant; called with a name read
// from a line, it costs a switch and one fixed-length compare. A name missing
// here is still found by Event::find(), by a scan: the list only makes
// lookups cheap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace turnstile::oracle::trace_names {

inline constexpr std::uint8_t kCount = 29;  // numbers are 1..kCount

// Whether `s` (of the literal's length) is the literal: a fixed-length loop
// the compiler unrolls (no call).
template <std::size_t N>
constexpr bool is(std::string_view s, const char (&literal)[N]) {
  for (std::size_t i = 0; i + 1 < N; ++i)
    if (s[i] != literal[i]) return false;
  return true;
}

// The number of a format-1 field name, or 0.
[[gnu::always_inline]] constexpr std::uint8_t known_field(std::string_view s) {
  switch (s.size()) {
    case 2:
      if (is(s, "ev")) return 2;
      if (is(s, "op")) return 11;
      if (is(s, "by")) return 25;
      return 0;
    case 3:
      if (is(s, "seq")) return 1;
      if (is(s, "key")) return 16;
      if (is(s, "ctx")) return 19;
      if (is(s, "act")) return 20;
      return 0;
    case 4:
      if (is(s, "impl")) return 5;
      if (is(s, "lane")) return 9;
      if (is(s, "item")) return 10;
      if (is(s, "call")) return 21;
      if (is(s, "mode")) return 23;
      if (is(s, "task")) return 24;
      if (is(s, "slow")) return 29;
      return 0;
    case 5:
      if (is(s, "fiber")) return 3;
      if (is(s, "child")) return 14;
      if (is(s, "value")) return 17;
      return 0;
    case 6:
      if (is(s, "format")) return 4;
      if (is(s, "status")) return 8;
      if (is(s, "reason")) return 12;
      if (is(s, "method")) return 22;
      if (is(s, "queued")) return 26;
      return 0;
    case 7:
      if (is(s, "outcome")) return 13;
      if (is(s, "unbound")) return 18;
      if (is(s, "running")) return 27;
      return 0;
    case 8:
      if (is(s, "scenario")) return 6;
      return 0;
    case 9:
      if (is(s, "completed")) return 28;
      return 0;
    case 10:
      if (is(s, "structured")) return 15;
      return 0;
    case 13:
      if (is(s, "schedule_seed")) return 7;
      return 0;
    default:
      return 0;
  }
}

}  // namespace turnstile::oracle::trace_names
