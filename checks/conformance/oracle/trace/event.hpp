// oracle/trace/event.hpp: the event model of spec/trace-format.md section 1: one
// line of a trace as the checkers see it (Event, its interned EventKind, its
// fields), and the InputError the reader (oracle/trace/reader.hpp) returns for
// input it cannot use.
//
// Contract: an Event is a value; its accessors read only fields the reader has
// validated for its `ev`. Thread safety: none shared; an Event is used by one
// thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/trace/names.hpp"

namespace turnstile::oracle {

// A fiber-local value as a trace carries it: a string, number, boolean or null.
// Compared with ==; shown with show_value().
using Value = nlohmann::json;

// "\"x\"", "1", "null": a value as the trace spelled it (for messages).
std::string show_value(const Value& v);

// The event names of format 1 ([TRACE-1.2]), interned by the reader: checkers
// switch on Event::kind; Event::ev keeps the name as written (for messages).
// Grouped by contract (see is_lane_event() and friends); the order is not part
// of the format.
enum class EventKind : std::uint8_t {
  kUnknown,  // not a format-1 name (never handed out by the reader)
  kTrace,
  kEnd,
  kLaneSubmit,
  kLaneAccepted,
  kLaneRefused,
  kLaneTurnStart,
  kLaneTurnEnd,
  kLaneResumed,
  kLaneCloseRequested,
  kLaneDrained,
  kLaneCloseReturned,  // optional: the awaiter of close() resumes
  kLaneDropped,        // optional: the library discarded an accepted item unrun
  kFiberSpawn,
  kFlBind,
  kFlRestore,
  kFlRead,
  kFlCapture,
  kFlInstall,
  kFlUninstall,
  kTurnCall,
  kTurnRefused,
  kTurnStart,
  kTurnAwait,
  kTurnAwaitRefused,
  kTurnAwaitAbandoned,  // optional: the awaiting fiber stopped waiting (a timeout)
  kTurnEnd,
  kTurnTaskStart,
  kTurnReentry,
  kTurnSlow,
  kTurnCounters,
};

// The kind of the event named `ev`: kUnknown for a name not in format 1.
EventKind event_kind(std::string_view ev);
// "lane.*", "fl.*", "turn.*" (fiber.spawn is none of them).
constexpr bool is_lane_event(EventKind k) { return k >= EventKind::kLaneSubmit && k <= EventKind::kLaneDropped; }
constexpr bool is_fl_event(EventKind k) { return k >= EventKind::kFlBind && k <= EventKind::kFlUninstall; }
constexpr bool is_turn_event(EventKind k) { return k >= EventKind::kTurnCall && k <= EventKind::kTurnCounters; }

// One line of a trace, as the reader keeps it: the fields every event has,
// typed, and the line's other top-level fields in a small flat list (no JSON
// tree). Checkers read fields only through the accessors; the representation
// behind them may change. An Event is a value: the streaming reader refills one
// Event per line, reusing its storage.
struct Event {
  std::size_t line = 0;  // 1-based line number in the input
  std::int64_t seq = 0;
  EventKind kind = EventKind::kUnknown;  // of `ev` (set by the reader; set both when making one by hand)
  std::string ev;        // "lane.submit", "fl.read", ...
  std::string fiber;     // empty for `trace` and `end`

  // Field accessors for fields the reader has validated for this `ev`
  // (str() of an absent field is "", value() of an absent field is null).
  // Inline: with a literal name, the lookup is an index (oracle/trace/names.hpp).
  [[gnu::always_inline]] const std::string& str(const char* field) const {
    const Field* f = find(field);
    return f != nullptr && f->type == Type::kString ? f->text : kNoText;
  }
  [[gnu::always_inline]] bool flag(const char* field) const {
    const Field* f = find(field);
    return f != nullptr && f->type == Type::kBool && f->boolean;
  }
  // Whether the line has `field` at all.
  [[gnu::always_inline]] bool has(const char* field) const { return find(field) != nullptr; }
  // A string field, or "" when it is absent or not a string.
  std::string text(const char* field) const;
  // A fiber-local value field (fl.bind's and fl.read's `value`), validated.
  const Value& value(const char* field) const;

  // One top-level field of the line. `json` holds the field's JSON value when
  // the reader had it as JSON (a number it did not read itself, an object or
  // an array), else it is made on the first value() call.
  enum class Type { kString, kBool, kSigned, kUnsigned, kFloat, kNull, kStructured };
  struct Field {
    std::string name;
    std::uint8_t known = 0;     // the number of a format-1 field name, 0 for any other name
    Type type = Type::kNull;
    std::string text;           // kString
    bool boolean = false;       // kBool
    std::int64_t integer = 0;   // kSigned (negative)
    std::uint64_t uinteger = 0; // kUnsigned (non-negative)
    mutable bool has_json = false;
    mutable Value json;
  };
  // The field named `name`, or null. A format-1 name is found by its number
  // (no scan of the line's fields).
  [[gnu::always_inline]] const Field* find(std::string_view name) const {
    if (const std::uint8_t k = trace_names::known_field(name); k != 0) return find_known(k);
    return find_other(name);
  }
  [[gnu::always_inline]] const Field* find(const char* name) const { return find(std::string_view(name)); }
  // The field whose name has number `known` (trace_names::known_field(), not 0), or null.
  const Field* find_known(std::uint8_t known) const {
    const std::uint32_t at = slot_[known];
    return at == 0 ? nullptr : &fields_[at - 1];
  }
  // Starts a new line's fields (storage is kept for reuse), and appends one.
  void clear_fields() {
    count_ = 0;
    slot_.fill(0);
  }
  Field& add_field(std::string_view name) { return append(name, trace_names::known_field(name)); }
  // add_field() unless the line has a field named `name` already (then null).
  Field* add_new_field(std::string_view name) {
    const std::uint8_t known = trace_names::known_field(name);
    if (known != 0 ? slot_[known] != 0 : find_other(name) != nullptr) return nullptr;
    return &append(name, known);
  }
  // a == b, compared in place (names and values are short: no call).
  static bool same_text(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  // Replaces the fields with the members of the JSON object `doc`.
  void assign(const nlohmann::json& doc);

  static constexpr std::size_t kKnownFields = trace_names::kCount + 1;

 private:
  inline static const std::string kNoText{};
  const Field* find_other(std::string_view name) const;  // a name trace_names does not number
  Field& append(std::string_view name, std::uint8_t known) {
    if (count_ == fields_.size()) grow();
    Field& f = fields_[count_++];
    // Lines of one shape reuse their names: a known number names its field.
    if (f.known != known || (known == 0 && !same_text(f.name, name))) f.name.assign(name);
    f.known = known;
    if (known != 0) slot_[known] = static_cast<std::uint32_t>(count_);
    f.type = Type::kNull;
    f.has_json = false;
    return f;
  }
  void grow();

  std::vector<Field> fields_;
  std::size_t count_ = 0;
  std::array<std::uint32_t, kKnownFields> slot_{};  // by number: 1 + the field's index, 0 when absent
};

struct InputError {
  std::string source;  // file name or "<stdin>", "<request>"
  std::size_t line = 0;
  std::string field;   // the field at fault, or empty
  std::string message; // one sentence

  // "SOURCE:LINE: field 'F': message" (the field part only when set).
  std::string to_string() const;
};

}  // namespace turnstile::oracle
