// oracle/trace.cpp: the trace reader of spec/trace-format.md section 1.
//
// Lines are read in blocks and never buffered past kMaxLineBytes, so a line of
// any length is rejected after at most 1 MiB of it was held ([TRACE-4.1]).
// Each line is checked for UTF-8, nesting depth, JSON syntax, then the fields
// its `ev` requires ([TRACE-1.2]); `seq` and the header/end placement are
// checked as lines arrive ([TRACE-1.1]).
#include "oracle/trace.hpp"

#include <algorithm>
#include <array>
#include <istream>
#include <string_view>

#include "oracle/trace_fields.hpp"

namespace turnstile::oracle {

const std::string& Event::str(const char* field) const {
  return data.at(field).get_ref<const std::string&>();
}

bool Event::flag(const char* field) const {
  const auto it = data.find(field);
  return it != data.end() && it->is_boolean() && it->get<bool>();
}

bool Event::has(const char* field) const { return data.contains(field); }

std::string Event::text(const char* field) const {
  const auto it = data.find(field);
  return it != data.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const Value& Event::value(const char* field) const { return data.at(field); }

std::string show_value(const Value& v) { return v.dump(); }

std::string InputError::to_string() const {
  std::string out = source + ":" + std::to_string(line) + ": ";
  if (!field.empty()) out += "field '" + field + "': ";
  return out + message;
}

namespace {

constexpr std::size_t kMaxDepth = 64;  // events are flat; deeper is garbage

std::string overlong_message() {
  return "line longer than 1 MiB (" + std::to_string(kMaxLineBytes) + " bytes)";
}

// Returns the 0-based byte offset of the first invalid UTF-8 sequence, or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1Fu; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0Fu; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07u; }
    else return i;
    if (n - i < len) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0u) != 0x80u) return i;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    const bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    if (overlong || surrogate || cp > 0x10FFFF) return i;
    i += len;
  }
  return std::string_view::npos;
}

// Deepest bracket nesting outside strings (a cheap guard before the JSON parser).
std::size_t nesting_depth(std::string_view s) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return deepest;
}

// Validates lines one at a time and builds the Trace.
class TraceBuilder {
 public:
  explicit TraceBuilder(std::string source) { trace_.source = std::move(source); }

  // Feeds line `line` (1-based) without its terminator; false after an error.
  bool feed(std::string_view text, std::size_t line) {
    if (error_) return false;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.size() > kMaxLineBytes) return fail(line, "", overlong_message());  // [TRACE-4.1]
    if (saw_end_) return fail(line, "ev", "a line follows the `end` marker, which must be the last line");
    if (text.empty()) return fail(line, "", "blank line (a trace has one JSON object per line)");
    if (const auto at = invalid_utf8_at(text); at != std::string_view::npos) {
      return fail(line, "", "byte " + std::to_string(at + 1) + " is not valid UTF-8");
    }
    if (nesting_depth(text) > kMaxDepth) {
      return fail(line, "", "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      return fail(line, "", std::string("not valid JSON: ") + e.what());
    }
    if (!doc.is_object()) return fail(line, "", "not a JSON object");

    Event event;
    event.line = line;
    const auto seq = doc.find("seq");
    if (seq == doc.end()) return fail(line, "seq", "missing");
    if (!seq->is_number_integer()) return fail(line, "seq", "must be an integer");
    event.seq = seq->is_number_unsigned() && seq->get<std::uint64_t>() > INT64_MAX
                    ? INT64_MAX
                    : seq->get<std::int64_t>();
    const auto expected = static_cast<std::int64_t>(line);
    if (event.seq != expected) {  // [TRACE-1.1] seq 1 on line 1, +1 per line
      if (line > 1 && event.seq == expected - 1) {
        return fail(line, "seq", "duplicate seq " + std::to_string(event.seq));
      }
      return fail(line, "seq", "seq " + std::to_string(event.seq) + " out of order (expected " +
                                   std::to_string(expected) + ")");
    }
    const auto ev = doc.find("ev");
    if (ev == doc.end()) return fail(line, "ev", "missing");
    if (!ev->is_string()) return fail(line, "ev", "must be a string");
    event.ev = ev->get<std::string>();
    const EventSpec* spec = find_event_spec(event.ev);
    if (spec == nullptr) return fail(line, "ev", "unknown event '" + event.ev + "'");  // [TRACE-1.2]
    if (line == 1 && event.ev != "trace") {  // [TRACE-1.1] header first
      return fail(line, "ev", "line 1 must be the `trace` header, got '" + event.ev + "'");
    }
    if (line > 1 && event.ev == "trace") {
      return fail(line, "ev", "the `trace` header may only be line 1");
    }
    if (spec->has_fiber) {
      if (auto problem = check_field(doc, {"fiber", FieldKind::kId, true, {}})) {
        return fail(line, "fiber", *problem);
      }
      event.fiber = doc["fiber"].get<std::string>();
    }
    for (const FieldSpec& field : spec->fields) {
      if (auto problem = check_field(doc, field)) return fail(line, field.name, *problem);
    }
    if (auto problem = check_cross_fields(event.ev, doc)) {
      return fail(line, problem->first, problem->second);
    }
    if (event.ev == "trace") {
      const auto format = doc["format"].get<std::int64_t>();
      if (format > kTraceFormat) {
        return fail(line, "format", "unsupported trace format " + std::to_string(format) +
                                        " (this oracle reads format " +
                                        std::to_string(kTraceFormat) + ")");
      }
      if (format < 1) return fail(line, "format", "must be 1");
      trace_.impl = doc["impl"].get<std::string>();
      if (const auto s = doc.find("scenario"); s != doc.end()) trace_.scenario = s->get<std::string>();
    } else if (event.ev == "end") {
      saw_end_ = true;
      trace_.end_status = doc["status"].get<std::string>();
    }
    event.data = std::move(doc);
    trace_.events.push_back(std::move(event));
    return true;
  }

  bool fail(std::size_t line, std::string field, std::string message) {
    if (!error_) error_ = InputError{trace_.source, line, std::move(field), std::move(message)};
    return false;
  }

  ParseResult finish(std::size_t lines) {
    if (error_) return *error_;
    if (lines == 0) return InputError{trace_.source, 0, "", "empty input (no `trace` header)"};
    if (!saw_end_) {  // [TRACE-1.1] end last; a trace without it is truncated
      return InputError{trace_.source, lines, "ev",
                        "the last line is not the `end` marker: the trace is truncated"};
    }
    return std::move(trace_);
  }

 private:
  Trace trace_;
  bool saw_end_ = false;
  std::optional<InputError> error_;
};

}  // namespace

ParseResult parse_trace(std::istream& in, std::string source) {
  TraceBuilder builder(std::move(source));
  std::array<char, std::size_t{64} * 1024> block{};
  std::string line;
  std::size_t number = 0;
  bool overlong = false;
  bool have_partial = false;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    std::string_view chunk(block.data(), got);
    while (!chunk.empty()) {
      const auto nl = chunk.find('\n');
      const auto piece = chunk.substr(0, nl);
      have_partial = true;
      // A line may carry one '\r' before its '\n', so the cap allows one more byte.
      if (line.size() + piece.size() > kMaxLineBytes + 1) overlong = true;
      else line.append(piece);
      if (overlong) {  // [TRACE-4.1] never buffer more than the cap
        builder.fail(number + 1, "", overlong_message());
        return builder.finish(number + 1);
      }
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

ParseResult parse_trace_text(std::string_view text, std::string source) {
  TraceBuilder builder(std::move(source));
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

}  // namespace turnstile::oracle
