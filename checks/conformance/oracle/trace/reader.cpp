// oracle/trace/reader.cpp: the trace reader of spec/trace-format.md section 1.
//
// Lines are read in blocks and never buffered past kMaxLineBytes, so a line of
// any length is rejected after at most 1 MiB of it was held ([TRACE-4.1]).
// Each line is checked for UTF-8, nesting depth, JSON syntax (LineReader,
// oracle/trace/line.hpp), then the fields its `ev` requires ([TRACE-1.2]);
// `seq` and the header/end placement are checked as lines arrive
// ([TRACE-1.1]).
//
// One pass, one line held at a time: read_trace() validates a line and hands its
// Event to a sink before it reads the next. The event's name is interned
// (Event::kind) here, once, for the checkers to switch on.
#include "oracle/trace/reader.hpp"

#include <istream>
#include <memory>
#include <string_view>

#include "oracle/trace/fields.hpp"
#include "oracle/trace/line.hpp"

namespace turnstile::oracle {

namespace {

std::string overlong_message() {
  return "line longer than 1 MiB (" + std::to_string(kMaxLineBytes) + " bytes)";
}

std::int64_t integer_of(const Event::Field& f) {
  if (f.type == Event::Type::kSigned) return f.integer;
  return static_cast<std::int64_t>(f.uinteger);
}

// Validates lines one at a time and hands each event to the sink.
class TraceBuilder {
 public:
  TraceBuilder(const std::string& source, const EventSink& sink) : source_(source), sink_(sink) {}

  // Feeds line `line` (1-based) without its terminator; false after an error.
  bool feed(std::string_view text, std::size_t line) {
    if (error_) return false;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.size() > kMaxLineBytes) return fail(line, "", overlong_message());  // [TRACE-4.1]
    if (saw_end_) return fail(line, "ev", "a line follows the `end` marker, which must be the last line");
    if (text.empty()) return fail(line, "", "blank line (a trace has one JSON object per line)");
    Event& event = event_;
    if (auto problem = lines_.read_line_fields(text, event)) return fail(line, "", std::move(*problem));

    event.line = line;
    const Event::Field* seq = event.find("seq");
    if (seq == nullptr) return fail(line, "seq", "missing");
    if (seq->type != Event::Type::kSigned && seq->type != Event::Type::kUnsigned) {
      return fail(line, "seq", "must be an integer");
    }
    event.seq = seq->type == Event::Type::kUnsigned && seq->uinteger > INT64_MAX ? INT64_MAX
                                                                                : integer_of(*seq);
    const auto expected = static_cast<std::int64_t>(line);
    if (event.seq != expected) {  // [TRACE-1.1] seq 1 on line 1, +1 per line
      if (line > 1 && event.seq == expected - 1) {
        return fail(line, "seq", "duplicate seq " + std::to_string(event.seq));
      }
      return fail(line, "seq", "seq " + std::to_string(event.seq) + " out of order (expected " +
                                   std::to_string(expected) + ")");
    }
    const Event::Field* ev = event.find("ev");
    if (ev == nullptr) return fail(line, "ev", "missing");
    if (ev->type != Event::Type::kString) return fail(line, "ev", "must be a string");
    const EventSpec* spec = find_event_spec(ev->text);
    if (spec == nullptr) return fail(line, "ev", "unknown event '" + ev->text + "'");  // [TRACE-1.2]
    if (event.kind != spec->kind) {  // intern the name: `ev` follows `kind`
      event.kind = spec->kind;
      event.ev.assign(spec->ev);
    }
    if (line == 1 && event.kind != EventKind::kTrace) {  // [TRACE-1.1] header first
      return fail(line, "ev", "line 1 must be the `trace` header, got '" + event.ev + "'");
    }
    if (line > 1 && event.kind == EventKind::kTrace) {
      return fail(line, "ev", "the `trace` header may only be line 1");
    }
    if (spec->has_fiber) {
      static const FieldSpec kFiber{"fiber", FieldKind::kId, true, {}, trace_names::known_field("fiber")};
      if (auto problem = check_field(event, kFiber)) return fail(line, "fiber", *problem);
      const std::string& fiber = event.str("fiber");
      if (fiber != event.fiber) event.fiber = fiber;  // consecutive lines often share it
    } else {
      event.fiber.clear();
    }
    for (const FieldSpec& field : spec->fields) {
      if (auto problem = check_field(event, field)) return fail(line, field.name, *problem);
    }
    if (auto problem = check_cross_fields(event.kind, event)) {
      return fail(line, problem->first, problem->second);
    }
    if (event.kind == EventKind::kTrace) {
      const auto format = integer_of(*event.find("format"));
      if (format > kTraceFormat) {
        return fail(line, "format", "unsupported trace format " + std::to_string(format) +
                                        " (this oracle reads format " +
                                        std::to_string(kTraceFormat) + ")");
      }
      if (format < 1) return fail(line, "format", "must be 1");
    } else if (event.kind == EventKind::kEnd) {
      saw_end_ = true;
    }
    sink_(event);
    return true;
  }

  bool fail(std::size_t line, std::string field, std::string message) {
    if (!error_) error_ = InputError{source_, line, std::move(field), std::move(message)};
    return false;
  }

  std::optional<InputError> finish(std::size_t lines) {
    if (error_) return error_;
    if (lines == 0) return InputError{source_, 0, "", "empty input (no `trace` header)"};
    if (!saw_end_) {  // [TRACE-1.1] end last; a trace without it is truncated
      return InputError{source_, lines, "ev",
                        "the last line is not the `end` marker: the trace is truncated"};
    }
    return std::nullopt;
  }

 private:
  const std::string& source_;
  const EventSink& sink_;
  Event event_;
  LineReader lines_;
  bool saw_end_ = false;
  std::optional<InputError> error_;
};

// Keeps every event (parse_trace).
EventSink collect_into(Trace& trace) {
  return [&trace](const Event& e) {
    trace.events.push_back(e);
    if (e.kind == EventKind::kTrace) {
      trace.impl = e.str("impl");
      if (e.has("scenario")) trace.scenario = e.str("scenario");
    } else if (e.kind == EventKind::kEnd) {
      trace.end_status = e.str("status");
    }
  };
}

}  // namespace

std::optional<InputError> read_trace(std::istream& in, const std::string& source, const EventSink& sink) {
  TraceBuilder builder(source, sink);
  constexpr std::size_t kBlock = std::size_t{64} * 1024;  // (the cost is the copy, not the number of reads)
  const std::unique_ptr<char[]> block(new char[kBlock]);
  std::string line;
  std::size_t number = 0;
  bool have_partial = false;
  while (in) {
    in.read(block.get(), static_cast<std::streamsize>(kBlock));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    std::string_view chunk(block.get(), got);
    while (!chunk.empty()) {
      const auto nl = chunk.find('\n');
      const auto piece = chunk.substr(0, nl);
      if (nl != std::string_view::npos && !have_partial) {  // a whole line in the block
        chunk.remove_prefix(nl + 1);
        if (!builder.feed(piece, ++number)) return builder.finish(number);
        continue;
      }
      have_partial = true;
      // A line may carry one '\r' before its '\n', so the cap allows one more byte.
      if (line.size() + piece.size() > kMaxLineBytes + 1) {  // [TRACE-4.1] never buffer more than the cap
        builder.fail(number + 1, "", overlong_message());
        return builder.finish(number + 1);
      }
      line.append(piece);
      if (nl == std::string_view::npos) break;
      chunk.remove_prefix(nl + 1);
      ++number;
      if (!builder.feed(line, number)) return builder.finish(number);
      line.clear();
      have_partial = false;
    }
  }
  if (in.bad()) {
    builder.fail(number + 1, "", "read error");
    return builder.finish(number + 1);
  }
  if (have_partial && !line.empty()) {  // a last line without '\n'
    ++number;
    if (!builder.feed(line, number)) return builder.finish(number);
  }
  return builder.finish(number);
}

std::optional<InputError> read_trace_text(std::string_view text, const std::string& source,
                                          const EventSink& sink) {
  TraceBuilder builder(source, sink);
  std::size_t number = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto piece = text.substr(0, nl);
    ++number;
    if (!builder.feed(piece, number)) return builder.finish(number);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return builder.finish(number);
}

ParseResult parse_trace(std::istream& in, std::string source) {
  Trace trace;
  trace.source = source;
  if (auto error = read_trace(in, source, collect_into(trace))) return *std::move(error);
  return trace;
}

ParseResult parse_trace_text(std::string_view text, std::string source) {
  Trace trace;
  trace.source = source;
  if (auto error = read_trace_text(text, source, collect_into(trace))) return *std::move(error);
  return trace;
}

}  // namespace turnstile::oracle
