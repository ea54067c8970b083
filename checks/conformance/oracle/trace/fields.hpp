// oracle/trace/fields.hpp (internal): the vocabulary of trace format 1 as data,
// the tables of spec/trace-format.md section 1 ([TRACE-1.2]).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oracle/trace/event.hpp"

namespace turnstile::oracle {

enum class FieldKind {
  kId,       // non-empty string
  kString,   // any string
  kBool,
  kInteger,
  kValue,    // string, number, boolean or null (a fiber-local value)
  kEnum,     // one of `values`
};

struct FieldSpec {
  const char* name;
  FieldKind kind;
  bool required;
  std::vector<std::string_view> values;  // kEnum only
  std::uint8_t known = 0;  // trace_names::known_field(name), set with the table
};

struct EventSpec {
  std::string_view ev;
  EventKind kind;
  bool has_fiber;  // `fiber` required (every event but `trace` and `end`)
  std::vector<FieldSpec> fields;
};

// Null for an event name that is not in format 1 (or kUnknown).
const EventSpec* find_event_spec(std::string_view ev);
const EventSpec* find_event_spec(EventKind kind);

// What is wrong with `field` of the event's line, or nullopt when it is fine.
std::optional<std::string> check_field(const Event& e, const FieldSpec& field);

// Rules between fields of one event (fl.read: `value` or `unbound: true`):
// {field, problem} or nullopt.
std::optional<std::pair<std::string, std::string>> check_cross_fields(EventKind kind,
                                                                     const Event& e);

}  // namespace turnstile::oracle
