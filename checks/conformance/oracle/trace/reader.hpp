// oracle/trace/reader.hpp: a trace of spec/trace-format.md, parsed and validated.
//
// Contract: read_trace() and parse_trace() never throw on bad input and never
// crash: any input (bad JSON, a missing or mistyped field, an unknown event, a `seq` out of order,
// a line longer than kMaxLineBytes, bytes that are not UTF-8, no header, no end
// marker, a higher format) yields an InputError naming the line (1-based; 0 for
// the input as a whole) and the field at fault. Only std::bad_alloc escapes.
// Thread safety: pure functions; no shared state.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "oracle/trace/event.hpp"

namespace turnstile::oracle {

inline constexpr int kTraceFormat = 1;
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;  // 1 MiB

struct Trace {
  std::string source;
  std::string impl;                     // header `impl`
  std::optional<std::string> scenario;  // header `scenario`
  std::string end_status;               // "quiescent" | "timeout"
  std::vector<Event> events;            // every line, header and end included
};

using ParseResult = std::variant<Trace, InputError>;

// Reads the whole trace into memory (for tests and small traces; `check` and
// `serve` stream it with read_trace(), see oracle/pipeline.hpp).
ParseResult parse_trace(std::istream& in, std::string source);
ParseResult parse_trace_text(std::string_view text, std::string source);

// The streaming reader: validates the trace line by line and hands each valid
// event, in order, to `sink` (the same Event object, refilled: copy what must
// outlive the call). Stops at the first unusable line; returns that error, or
// the trace-level one (empty input, no `end`), or nullopt for a usable trace.
// Holds at most one line (kMaxLineBytes) at a time.
using EventSink = std::function<void(const Event&)>;
std::optional<InputError> read_trace(std::istream& in, const std::string& source, const EventSink& sink);
std::optional<InputError> read_trace_text(std::string_view text, const std::string& source,
                                          const EventSink& sink);

}  // namespace turnstile::oracle
