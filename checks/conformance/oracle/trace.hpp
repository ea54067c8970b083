// oracle/trace.hpp: a trace of spec/trace-format.md, parsed and validated.
//
// Contract: parse_trace() never throws on bad input and never crashes: any input
// (bad JSON, a missing or mistyped field, an unknown event, a `seq` out of order,
// a line longer than kMaxLineBytes, bytes that are not UTF-8, no header, no end
// marker, a higher format) yields an InputError naming the line (1-based; 0 for
// the input as a whole) and the field at fault. Only std::bad_alloc escapes.
// Thread safety: pure functions; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnstile::oracle {

inline constexpr int kTraceFormat = 1;
inline constexpr int kScenarioFormat = 1;
inline constexpr int kServeProtocol = 1;
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;  // 1 MiB

// A fiber-local value as a trace carries it: a string, number, boolean or null.
// Compared with ==; shown with show_value().
using Value = nlohmann::json;

// "\"x\"", "1", "null": a value as the trace spelled it (for messages).
std::string show_value(const Value& v);

// One line of a trace. `data` is the whole JSON object of the line; the fields
// every event has are also kept typed. Checkers read fields only through the
// accessors (the representation behind them may change).
struct Event {
  std::size_t line = 0;  // 1-based line number in the input
  std::int64_t seq = 0;
  std::string ev;        // "lane.submit", "fl.read", ...
  std::string fiber;     // empty for `trace` and `end`
  nlohmann::json data;

  // Field accessors for fields parse_trace() has validated for this `ev`.
  const std::string& str(const char* field) const;
  bool flag(const char* field) const;
  // Whether the line has `field` at all.
  bool has(const char* field) const;
  // A string field, or "" when it is absent or not a string.
  std::string text(const char* field) const;
  // A fiber-local value field (fl.bind's and fl.read's `value`), validated.
  const Value& value(const char* field) const;
};

struct InputError {
  std::string source;  // file name or "<stdin>", "<request>"
  std::size_t line = 0;
  std::string field;   // the field at fault, or empty
  std::string message; // one sentence

  // "SOURCE:LINE: field 'F': message" (the field part only when set).
  std::string to_string() const;
};

struct Trace {
  std::string source;
  std::string impl;                     // header `impl`
  std::optional<std::string> scenario;  // header `scenario`
  std::string end_status;               // "quiescent" | "timeout"
  std::vector<Event> events;            // every line, header and end included
};

using ParseResult = std::variant<Trace, InputError>;

ParseResult parse_trace(std::istream& in, std::string source);
ParseResult parse_trace_text(std::string_view text, std::string source);

}  // namespace turnstile::oracle
