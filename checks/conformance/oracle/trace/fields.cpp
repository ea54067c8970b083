// oracle/trace/fields.cpp: the event tables of spec/trace-format.md section 1 ([TRACE-1.2]).
#include "oracle/trace/fields.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace turnstile::oracle {

namespace {

using K = FieldKind;

// Numbers each field name for Event's index (oracle/trace/names.hpp).
std::vector<EventSpec> numbered(std::vector<EventSpec> specs) {
  for (EventSpec& s : specs)
    for (FieldSpec& f : s.fields) f.known = trace_names::known_field(f.name);
  return specs;
}

const std::vector<EventSpec>& event_specs() {
  static const std::vector<EventSpec> specs = numbered({
      {"trace", EventKind::kTrace, false,
       {{"format", K::kInteger, true, {}},
        {"impl", K::kString, true, {}},
        {"scenario", K::kId, false, {}},
        {"schedule_seed", K::kInteger, false, {}}}},
      {"end", EventKind::kEnd, false, {{"status", K::kEnum, true, {"quiescent", "timeout"}}}},
      // 1.1 lane events
      {"lane.submit", EventKind::kLaneSubmit, true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"op", K::kEnum, true, {"run", "post"}}}},
      {"lane.accepted", EventKind::kLaneAccepted, true, {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}}}},
      {"lane.refused", EventKind::kLaneRefused, true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"reason", K::kEnum, true, {"reentrant", "closed"}}}},
      {"lane.turn_start", EventKind::kLaneTurnStart, true, {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}}}},
      {"lane.turn_end", EventKind::kLaneTurnEnd, true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"outcome", K::kEnum, true, {"ok", "error"}}}},
      {"lane.resumed", EventKind::kLaneResumed, true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"outcome", K::kEnum, true, {"ok", "error"}}}},
      {"lane.close_requested", EventKind::kLaneCloseRequested, true, {{"lane", K::kId, true, {}}}},
      {"lane.drained", EventKind::kLaneDrained, true, {{"lane", K::kId, true, {}}}},
      {"lane.close_returned", EventKind::kLaneCloseReturned, true, {{"lane", K::kId, true, {}}}},
      // optional: an accepted item the library discarded before its turn started
      {"lane.dropped", EventKind::kLaneDropped, true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}}, {"reason", K::kString, false, {}}}},
      // 1.2 fiber-local events
      {"fiber.spawn", EventKind::kFiberSpawn, true, {{"child", K::kId, true, {}}, {"structured", K::kBool, true, {}}}},
      {"fl.bind", EventKind::kFlBind, true, {{"key", K::kId, true, {}}, {"value", K::kValue, true, {}}}},
      {"fl.restore", EventKind::kFlRestore, true, {{"key", K::kId, true, {}}}},
      {"fl.read", EventKind::kFlRead, true,
       {{"key", K::kId, true, {}}, {"value", K::kValue, false, {}},
        {"unbound", K::kBool, false, {}}, {"op", K::kId, false, {}}}},
      {"fl.capture", EventKind::kFlCapture, true, {{"ctx", K::kId, true, {}}}},
      {"fl.install", EventKind::kFlInstall, true, {{"ctx", K::kId, true, {}}}},
      {"fl.uninstall", EventKind::kFlUninstall, true, {{"ctx", K::kId, true, {}}}},
      // 1.3 turn events
      {"turn.call", EventKind::kTurnCall, true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}, {"method", K::kString, true, {}},
        {"mode", K::kEnum, true, {"serial", "interleaved"}}, {"op", K::kId, false, {}}}},
      // Obsolete: a call is never refused ([TURN-7.1]); parseable, and a violation.
      {"turn.refused", EventKind::kTurnRefused, true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"reason", K::kEnum, true, {"self-call"}}}},
      {"turn.start", EventKind::kTurnStart, true, {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}}},
      {"turn.await", EventKind::kTurnAwait, true, {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}}},
      {"turn.await_refused", EventKind::kTurnAwaitRefused, true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"reason", K::kEnum, true, {"wait-cycle"}}}},
      // optional: the awaiting fiber gave up waiting for the call (a timeout); the call goes on
      {"turn.await_abandoned", EventKind::kTurnAwaitAbandoned, true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}, {"reason", K::kString, false, {}}}},
      {"turn.end", EventKind::kTurnEnd, true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"outcome", K::kEnum, true, {"ok", "error"}}}},
      {"turn.task_start", EventKind::kTurnTaskStart, true,
       {{"act", K::kId, true, {}}, {"task", K::kId, true, {}}, {"call", K::kId, false, {}}}},
      {"turn.reentry", EventKind::kTurnReentry, true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}, {"task", K::kId, true, {}}}},
      // [TURN-4.2] a slow-turn report: at most once per turn, once it started
      {"turn.slow", EventKind::kTurnSlow, true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"by", K::kEnum, true, {"watchdog", "check", "settle"}}}},
      // [TURN-2.3] the activation's counters as the runtime reports them
      {"turn.counters", EventKind::kTurnCounters, true,
       {{"act", K::kId, true, {}}, {"queued", K::kInteger, true, {}},
        {"running", K::kInteger, true, {}}, {"completed", K::kInteger, false, {}},
        {"slow", K::kInteger, false, {}}}},
  });
  return specs;  // in EventKind order: find_event_spec(EventKind) indexes it
}

const char* kind_name(FieldKind kind) {
  switch (kind) {
    case K::kId: return "a non-empty string";
    case K::kString: return "a string";
    case K::kBool: return "a boolean";
    case K::kInteger: return "an integer";
    case K::kValue: return "a string, number, boolean or null";
    case K::kEnum: return "a string";
  }
  return "?";
}

}  // namespace

namespace {

// event_kind()'s table: the format-1 names by a hash of their length and two
// bytes, open addressing (every lookup ends on the name or an empty slot).
struct KindTable {
  static constexpr std::size_t kSlots = 128;  // a power of two, well over the 29 names
  std::array<const EventSpec*, kSlots> slot{};

  static std::size_t hash(std::string_view ev) {
    const std::size_t n = ev.size();
    return (n * 31u + static_cast<unsigned char>(ev[n - 1]) * 7u + static_cast<unsigned char>(ev[n / 2])) &
           (kSlots - 1);
  }

  KindTable() {
    for (const EventSpec& s : event_specs()) {
      std::size_t h = hash(s.ev);
      while (slot[h] != nullptr) h = (h + 1) & (kSlots - 1);
      slot[h] = &s;
    }
  }
};

const KindTable& kind_table() {
  static const KindTable table;
  return table;
}

}  // namespace

const EventSpec* find_event_spec(std::string_view ev) {
  if (ev.empty()) return nullptr;
  const KindTable& t = kind_table();
  for (std::size_t h = KindTable::hash(ev);; h = (h + 1) & (KindTable::kSlots - 1)) {
    const EventSpec* s = t.slot[h];
    if (s == nullptr || s->ev == ev) return s;
  }
}

const EventSpec* find_event_spec(EventKind kind) {
  const auto& specs = event_specs();
  const auto at = static_cast<std::size_t>(kind) - 1;  // the table is in EventKind order (kUnknown first)
  return kind == EventKind::kUnknown || at >= specs.size() ? nullptr : &specs[at];
}

EventKind event_kind(std::string_view ev) {
  const EventSpec* s = find_event_spec(ev);
  return s == nullptr ? EventKind::kUnknown : s->kind;
}

std::optional<std::string> check_field(const Event& e, const FieldSpec& field) {
  using T = Event::Type;
  const Event::Field* f = field.known != 0 ? e.find_known(field.known) : e.find(field.name);
  if (f == nullptr) {
    if (field.required) return std::string("missing");
    return std::nullopt;
  }
  bool ok = false;
  switch (field.kind) {
    case K::kId: ok = f->type == T::kString && !f->text.empty(); break;
    case K::kString: ok = f->type == T::kString; break;
    case K::kBool: ok = f->type == T::kBool; break;
    case K::kInteger: ok = f->type == T::kSigned || f->type == T::kUnsigned; break;
    case K::kValue: ok = f->type != T::kStructured; break;
    case K::kEnum: ok = f->type == T::kString; break;
  }
  if (!ok) return std::string("must be ") + kind_name(field.kind);
  if (field.kind == K::kEnum) {
    const std::string& v = f->text;
    if (std::none_of(field.values.begin(), field.values.end(),
                     [&](std::string_view a) { return Event::same_text(a, v); })) {
      std::string allowed;
      for (const auto& a : field.values) allowed += (allowed.empty() ? "\"" : ", \"") + std::string(a) + "\"";
      return "unknown value \"" + v + "\" (one of " + allowed + ")";
    }
  }
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> check_cross_fields(EventKind kind,
                                                                     const Event& e) {
  if (kind != EventKind::kFlRead) return std::nullopt;
  const bool unbound = e.flag("unbound");
  const bool has_value = e.has("value");
  if (unbound && has_value) return std::pair<std::string, std::string>{"unbound", "`unbound: true` with a `value`"};
  if (!unbound && !has_value) return std::pair<std::string, std::string>{"value", "missing (or `unbound: true`)"};
  return std::nullopt;
}

}  // namespace turnstile::oracle
