// oracle/trace/line.cpp: LineReader, one trace line into an Event's fields
// (oracle/trace/line.hpp).
//
// The fast path reads a flat object in place: keys without escapes are
// compared where they lie in the line (no copy), string values are copied
// once into the field's reused storage. Whatever it does not take whole, it
// leaves to the general path, which decides: UTF-8, nesting depth, then
// nlohmann::json (whose reading and messages are the reference).
#include "oracle/trace/line.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace turnstile::oracle {

namespace {

constexpr std::size_t kMaxDepth = 64;  // events are flat; deeper is garbage

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

void skip_space(const char*& p, const char* end) {
  while (p < end && is_space(*p)) ++p;
}

// Printable ASCII other than the quote and the backslash: a string's plain
// run (a table: one load and one branch per byte).
struct PlainBytes {
  bool is[256] = {};
  constexpr PlainBytes() {
    for (int c = 0x20; c < 0x80; ++c) is[c] = c != '"' && c != '\\';
  }
};
constexpr PlainBytes kPlain;

bool plain(char c) { return kPlain.is[static_cast<unsigned char>(c)]; }

// The first byte from `p` on that is not plain, or `end`: eight bytes at a
// time (a byte below 0x20, a quote, a backslash or a byte from 0x80 up sets
// the high bit of its lane; a borrow only ever marks lanes above a marked
// one, so the lowest mark is exact), then byte by byte.
const char* skip_plain(const char* p, const char* end) {
  if constexpr (std::endian::native == std::endian::little) {
    constexpr std::uint64_t kOnes = 0x0101010101010101u;
    constexpr std::uint64_t kHigh = 0x8080808080808080u;
    while (end - p >= 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, p, 8);
      const std::uint64_t quote = w ^ (kOnes * '"');
      const std::uint64_t slash = w ^ (kOnes * '\\');
      const std::uint64_t marks = (((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) |
                                   ((slash - kOnes) & ~slash) | w) & kHigh;
      if (marks != 0) return p + (std::countr_zero(marks) >> 3);
      p += 8;
    }
  }
  while (p < end && plain(*p)) ++p;
  return p;
}

// The rest of a string with escapes (read_string()'s slow path): `run` is
// where its text starts, `p` the first byte that is not plain.
bool read_escaped(const char* run, const char*& p, const char* end, std::string& decoded,
                  std::string_view& out) {
  decoded.assign(run, static_cast<std::size_t>(p - run));
  run = p;
  while (p < end) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"') {
      decoded.append(run, p);
      ++p;
      out = decoded;
      return true;
    }
    if (c == '\\') {
      decoded.append(run, p);
      if (++p == end) return false;
      switch (*p) {
        case '"': decoded += '"'; break;
        case '\\': decoded += '\\'; break;
        case '/': decoded += '/'; break;
        case 'b': decoded += '\b'; break;
        case 'f': decoded += '\f'; break;
        case 'n': decoded += '\n'; break;
        case 'r': decoded += '\r'; break;
        case 't': decoded += '\t'; break;
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

// A JSON string at `p` (on its opening quote) holding printable ASCII and the
// short escapes only; false for anything else (the general path decides).
// `out` is the string's text: a view of the line when it has no escape, else
// of `decoded`, which holds it decoded.
inline bool read_string(const char*& p, const char* end, std::string& decoded, std::string_view& out) {
  const char* run = ++p;
  p = skip_plain(p, end);
  if (p < end && *p == '"') {  // the common case: no escape, no copy
    out = std::string_view(run, static_cast<std::size_t>(p - run));
    ++p;
    return true;
  }
  return read_escaped(run, p, end, decoded, out);
}

bool literal(const char*& p, const char* end, std::string_view word) {
  if (static_cast<std::size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word) return false;
  p += word.size();
  return true;
}

// An integer that nlohmann reads as the same int64/uint64 (at most 18
// digits, no leading zero, not -0, not a float) into `f`; false otherwise.
bool read_integer(const char*& p, const char* end, Event::Field& f) {
  const bool negative = *p == '-';
  if (negative) ++p;
  const char* digits = p;
  std::uint64_t n = 0;
  while (p < end && *p >= '0' && *p <= '9') n = n * 10 + static_cast<std::uint64_t>(*p++ - '0');
  const auto count = p - digits;
  if (count == 0 || count > 18 || (*digits == '0' && count > 1)) return false;
  if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return false;  // a float
  if (negative && n == 0) return false;  // -0: nlohmann's reading decides
  if (negative) {
    f.type = Event::Type::kSigned;
    f.integer = -static_cast<std::int64_t>(n);
  } else {
    f.type = Event::Type::kUnsigned;
    f.uinteger = n;
  }
  return true;
}

}  // namespace

// The fast path: a flat JSON object into `e`'s fields, or false (nothing is
// decided: the line goes to the general path).
bool LineReader::read_flat_object(std::string_view text, Event& e) {
  const char* p = text.data();
  const char* const end = p + text.size();
  e.clear_fields();
  skip_space(p, end);
  if (p == end || *p != '{') return false;
  ++p;
  skip_space(p, end);
  if (p < end && *p == '}') {
    ++p;
  } else {
    while (true) {
      std::string_view key;
      if (p == end || *p != '"' || !read_string(p, end, key_, key)) return false;
      Event::Field* added = e.add_new_field(key);
      if (added == nullptr) return false;  // a repeated member: nlohmann decides
      Event::Field& f = *added;
      skip_space(p, end);
      if (p == end || *p != ':') return false;
      ++p;
      skip_space(p, end);
      if (p == end) return false;
      const char c = *p;
      if (c == '"') {
        f.type = Event::Type::kString;
        std::string_view value;
        if (!read_string(p, end, f.text, value)) return false;
        // (consecutive lines often repeat a value: keep it)
        if (value.data() != f.text.data() && !Event::same_text(f.text, value))
          f.text.assign(value.data(), value.size());
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        if (!read_integer(p, end, f)) return false;
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
      skip_space(p, end);
      if (p == end) return false;
      if (*p == ',') {
        ++p;
        skip_space(p, end);
        continue;
      }
      if (*p != '}') return false;
      ++p;
      break;
    }
  }
  skip_space(p, end);
  return p == end;
}

std::optional<std::string> LineReader::read_line_fields(std::string_view text, Event& e) {
  if (read_flat_object(text, e)) return std::nullopt;
  if (const auto at = invalid_utf8_at(text); at != std::string_view::npos) {
    return "byte " + std::to_string(at + 1) + " is not valid UTF-8";
  }
  if (nesting_depth(text) > kMaxDepth) {
    return "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels";
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& ex) {
    return std::string("not valid JSON: ") + ex.what();
  }
  if (!doc.is_object()) return std::string("not a JSON object");
  e.assign(doc);
  return std::nullopt;
}

}  // namespace turnstile::oracle
