// oracle/trace.cpp: the trace reader of spec/trace-format.md section 1.
//
// Lines are read in blocks and never buffered past kMaxLineBytes, so a line of
// any length is rejected after at most 1 MiB of it was held ([TRACE-4.1]).
// Each line is checked for UTF-8, nesting depth, JSON syntax, then the fields
// its `ev` requires ([TRACE-1.2]); `seq` and the header/end placement are
// checked as lines arrive ([TRACE-1.1]).
//
// One pass, one line held at a time: read_trace() validates a line and hands its
// Event to a sink before it reads the next. A line is read by a small reader of
// flat JSON objects (string, integer, true/false/null members: what trace lines
// are), which fills the Event's field list directly; any line it does not take
// whole (an escape \u, a non-ASCII byte, a float, a nested value, a repeated
// member, a syntax error) goes to nlohmann::json, so the fields of a valid line
// and the message for an invalid one are exactly nlohmann's.
#include "oracle/trace.hpp"

#include <algorithm>
#include <array>
#include <istream>
#include <string_view>

#include "oracle/trace_fields.hpp"

namespace turnstile::oracle {

namespace {
const std::string kNoText;
const Value kNull;
}  // namespace

namespace {
// Field names are short: compare them in place (no call per candidate).
bool same_name(const std::string& a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < b.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}
// The same for a C string, without measuring it first.
bool same_name(const std::string& a, const char* b) {
  const std::size_t n = a.size();
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;  // stops at b's terminator too
  return b[n] == '\0';
}
}  // namespace

const Event::Field* Event::find(std::string_view name) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (same_name(fields_[i].name, name)) return &fields_[i];
  return nullptr;
}

const Event::Field* Event::find(const char* name) const {
  for (std::size_t i = 0; i < count_; ++i)
    if (same_name(fields_[i].name, name)) return &fields_[i];
  return nullptr;
}

Event::Field& Event::add_field(std::string_view name) {
  if (count_ == fields_.size()) fields_.emplace_back();
  Field& f = fields_[count_++];
  if (!same_name(f.name, name)) f.name.assign(name);  // lines of one shape reuse their names
  f.type = Type::kNull;
  f.has_json = false;
  return f;
}

void Event::assign(const nlohmann::json& doc) {
  clear_fields();
  for (const auto& [key, v] : doc.items()) {
    Field& f = add_field(key);
    if (v.is_string()) {
      f.type = Type::kString;
      f.text = v.get_ref<const std::string&>();
    } else if (v.is_boolean()) {
      f.type = Type::kBool;
      f.boolean = v.get<bool>();
    } else if (v.is_number_unsigned()) {
      f.type = Type::kUnsigned;
      f.uinteger = v.get<std::uint64_t>();
    } else if (v.is_number_integer()) {
      f.type = Type::kSigned;
      f.integer = v.get<std::int64_t>();
    } else if (v.is_null()) {
      f.type = Type::kNull;
    } else {
      f.type = v.is_number() ? Type::kFloat : Type::kStructured;
      f.json = v;
      f.has_json = true;
    }
  }
}

const std::string& Event::str(const char* field) const {
  const Field* f = find(field);
  return f != nullptr && f->type == Type::kString ? f->text : kNoText;
}

bool Event::flag(const char* field) const {
  const Field* f = find(field);
  return f != nullptr && f->type == Type::kBool && f->boolean;
}

bool Event::has(const char* field) const { return find(field) != nullptr; }

std::string Event::text(const char* field) const { return str(field); }

const Value& Event::value(const char* field) const {
  const Field* f = find(field);
  if (f == nullptr) return kNull;
  if (!f->has_json) {
    switch (f->type) {
      case Type::kString: f->json = f->text; break;
      case Type::kBool: f->json = f->boolean; break;
      case Type::kSigned: f->json = f->integer; break;
      case Type::kUnsigned: f->json = f->uinteger; break;
      default: f->json = nullptr; break;
    }
    f->has_json = true;
  }
  return f->json;
}

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

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A JSON string at `p` (on its opening quote) holding printable ASCII and the
// short escapes only; false for anything else (the general path decides).
bool read_plain_string(const char*& p, const char* end, std::string& out) {
  ++p;
  const char* run = p;
  // The common case: no escape, one copy.
  while (p < end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20 &&
         static_cast<unsigned char>(*p) < 0x80)
    ++p;
  if (p < end && *p == '"') {
    out.assign(run, static_cast<std::size_t>(p - run));
    ++p;
    return true;
  }
  out.assign(run, static_cast<std::size_t>(p - run));
  run = p;
  while (p < end) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"') {
      out.append(run, p);
      ++p;
      return true;
    }
    if (c == '\\') {
      out.append(run, p);
      if (++p == end) return false;
      switch (*p) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        default: return false;  // \u and invalid escapes
      }
      run = ++p;
      continue;
    }
    if (c < 0x20 || c >= 0x80) return false;
    ++p;
  }
  return false;
}

bool literal(const char*& p, const char* end, std::string_view word) {
  if (static_cast<std::size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word) return false;
  p += word.size();
  return true;
}

// The fast path: a flat JSON object into `e`'s fields, or false (nothing is
// decided: the line goes to the general path).
bool read_flat_object(std::string_view text, Event& e, std::string& key) {
  const char* p = text.data();
  const char* const end = p + text.size();
  e.clear_fields();
  while (p < end && is_space(*p)) ++p;
  if (p == end || *p != '{') return false;
  ++p;
  while (p < end && is_space(*p)) ++p;
  if (p < end && *p == '}') {
    ++p;
  } else {
    while (true) {
      if (p == end || *p != '"' || !read_plain_string(p, end, key)) return false;
      if (e.find(key) != nullptr) return false;  // a repeated member: nlohmann decides
      while (p < end && is_space(*p)) ++p;
      if (p == end || *p != ':') return false;
      ++p;
      while (p < end && is_space(*p)) ++p;
      if (p == end) return false;
      Event::Field& f = e.add_field(key);
      const char c = *p;
      if (c == '"') {
        f.type = Event::Type::kString;
        if (!read_plain_string(p, end, f.text)) return false;
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        const bool negative = c == '-';
        if (negative) ++p;
        const char* digits = p;
        std::uint64_t n = 0;
        while (p < end && *p >= '0' && *p <= '9') n = n * 10 + static_cast<std::uint64_t>(*p++ - '0');
        const auto count = p - digits;
        if (count == 0 || count > 18 || (*digits == '0' && count > 1)) return false;
        if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return false;  // a float
        if (negative && n != 0) {
          f.type = Event::Type::kSigned;
          f.integer = -static_cast<std::int64_t>(n);
        } else if (negative) {
          return false;  // -0: nlohmann's reading decides
        } else {
          f.type = Event::Type::kUnsigned;
          f.uinteger = n;
        }
      } else if (literal(p, end, "true")) {
        f.type = Event::Type::kBool;
        f.boolean = true;
      } else if (literal(p, end, "false")) {
        f.type = Event::Type::kBool;
        f.boolean = false;
      } else if (literal(p, end, "null")) {
        f.type = Event::Type::kNull;
      } else {
        return false;
      }
      while (p < end && is_space(*p)) ++p;
      if (p == end) return false;
      if (*p == ',') {
        ++p;
        while (p < end && is_space(*p)) ++p;
        continue;
      }
      if (*p != '}') return false;
      ++p;
      break;
    }
  }
  while (p < end && is_space(*p)) ++p;
  return p == end;
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
    if (!read_flat_object(text, event, key_)) {
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
      event.assign(doc);
    }

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
    if (event.ev != ev->text || spec_ == nullptr) {
      event.ev = ev->text;
      spec_ = find_event_spec(event.ev);
    }
    const EventSpec* spec = spec_;
    if (spec == nullptr) return fail(line, "ev", "unknown event '" + event.ev + "'");  // [TRACE-1.2]
    if (line == 1 && event.ev != "trace") {  // [TRACE-1.1] header first
      return fail(line, "ev", "line 1 must be the `trace` header, got '" + event.ev + "'");
    }
    if (line > 1 && event.ev == "trace") {
      return fail(line, "ev", "the `trace` header may only be line 1");
    }
    event.fiber.clear();
    if (spec->has_fiber) {
      if (auto problem = check_field(event, {"fiber", FieldKind::kId, true, {}})) {
        return fail(line, "fiber", *problem);
      }
      event.fiber = event.str("fiber");
    }
    for (const FieldSpec& field : spec->fields) {
      if (auto problem = check_field(event, field)) return fail(line, field.name, *problem);
    }
    if (auto problem = check_cross_fields(event.ev, event)) {
      return fail(line, problem->first, problem->second);
    }
    if (event.ev == "trace") {
      const auto format = integer_of(*event.find("format"));
      if (format > kTraceFormat) {
        return fail(line, "format", "unsupported trace format " + std::to_string(format) +
                                        " (this oracle reads format " +
                                        std::to_string(kTraceFormat) + ")");
      }
      if (format < 1) return fail(line, "format", "must be 1");
    } else if (event.ev == "end") {
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
  const EventSpec* spec_ = nullptr;  // of event_.ev
  std::string key_;
  bool saw_end_ = false;
  std::optional<InputError> error_;
};

// Keeps every event (parse_trace).
EventSink collect_into(Trace& trace) {
  return [&trace](const Event& e) {
    trace.events.push_back(e);
    if (e.ev == "trace") {
      trace.impl = e.str("impl");
      if (e.has("scenario")) trace.scenario = e.str("scenario");
    } else if (e.ev == "end") {
      trace.end_status = e.str("status");
    }
  };
}

}  // namespace

std::optional<InputError> read_trace(std::istream& in, const std::string& source, const EventSink& sink) {
  TraceBuilder builder(source, sink);
  std::array<char, std::size_t{64} * 1024> block{};
  std::string line;
  std::size_t number = 0;
  bool have_partial = false;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    std::string_view chunk(block.data(), got);
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
