// oracle/trace_fields.cpp: the event tables of spec/trace-format.md section 1 ([TRACE-1.2]).
#include "oracle/trace_fields.hpp"

#include <algorithm>

namespace turnstile::oracle {

namespace {

using K = FieldKind;

const std::vector<EventSpec>& event_specs() {
  static const std::vector<EventSpec> specs = {
      {"trace", false,
       {{"format", K::kInteger, true, {}},
        {"impl", K::kString, true, {}},
        {"scenario", K::kId, false, {}},
        {"schedule_seed", K::kInteger, false, {}}}},
      {"end", false, {{"status", K::kEnum, true, {"quiescent", "timeout"}}}},
      // 1.1 lane events
      {"lane.submit", true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"op", K::kEnum, true, {"run", "post"}}}},
      {"lane.accepted", true, {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}}}},
      {"lane.refused", true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"reason", K::kEnum, true, {"reentrant", "closed"}}}},
      {"lane.turn_start", true, {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}}}},
      {"lane.turn_end", true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"outcome", K::kEnum, true, {"ok", "error"}}}},
      {"lane.resumed", true,
       {{"lane", K::kId, true, {}}, {"item", K::kId, true, {}},
        {"outcome", K::kEnum, true, {"ok", "error"}}}},
      {"lane.close_requested", true, {{"lane", K::kId, true, {}}}},
      {"lane.drained", true, {{"lane", K::kId, true, {}}}},
      // 1.2 fiber-local events
      {"fiber.spawn", true, {{"child", K::kId, true, {}}, {"structured", K::kBool, true, {}}}},
      {"fl.bind", true, {{"key", K::kId, true, {}}, {"value", K::kValue, true, {}}}},
      {"fl.restore", true, {{"key", K::kId, true, {}}}},
      {"fl.read", true,
       {{"key", K::kId, true, {}}, {"value", K::kValue, false, {}},
        {"unbound", K::kBool, false, {}}, {"op", K::kId, false, {}}}},
      {"fl.capture", true, {{"ctx", K::kId, true, {}}}},
      {"fl.install", true, {{"ctx", K::kId, true, {}}}},
      {"fl.uninstall", true, {{"ctx", K::kId, true, {}}}},
      // 1.3 turn events
      {"turn.call", true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}, {"method", K::kString, true, {}},
        {"mode", K::kEnum, true, {"serial", "interleaved"}}, {"op", K::kId, false, {}}}},
      // Obsolete: a call is never refused ([TURN-7.1]); parseable, and a violation.
      {"turn.refused", true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"reason", K::kEnum, true, {"self-call"}}}},
      {"turn.start", true, {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}}},
      {"turn.await", true, {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}}},
      {"turn.await_refused", true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"reason", K::kEnum, true, {"wait-cycle"}}}},
      {"turn.end", true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"outcome", K::kEnum, true, {"ok", "error"}}}},
      {"turn.task_start", true,
       {{"act", K::kId, true, {}}, {"task", K::kId, true, {}}, {"call", K::kId, false, {}}}},
      {"turn.reentry", true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}}, {"task", K::kId, true, {}}}},
      // [TURN-4.2] a slow-turn report: at most once per turn, once it started
      {"turn.slow", true,
       {{"act", K::kId, true, {}}, {"call", K::kId, true, {}},
        {"by", K::kEnum, true, {"watchdog", "check", "settle"}}}},
      // [TURN-2.3] the activation's counters as the runtime reports them
      {"turn.counters", true,
       {{"act", K::kId, true, {}}, {"queued", K::kInteger, true, {}},
        {"running", K::kInteger, true, {}}, {"completed", K::kInteger, false, {}},
        {"slow", K::kInteger, false, {}}}},
  };
  return specs;
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

const EventSpec* find_event_spec(std::string_view ev) {
  const auto& specs = event_specs();
  const auto it = std::find_if(specs.begin(), specs.end(),
                               [ev](const EventSpec& s) { return s.ev == ev; });
  return it == specs.end() ? nullptr : &*it;
}

std::optional<std::string> check_field(const Event& e, const FieldSpec& field) {
  using T = Event::Type;
  const Event::Field* f = e.find(field.name);
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
    if (std::find(field.values.begin(), field.values.end(), v) == field.values.end()) {
      std::string allowed;
      for (const auto& a : field.values) allowed += (allowed.empty() ? "\"" : ", \"") + std::string(a) + "\"";
      return "unknown value \"" + v + "\" (one of " + allowed + ")";
    }
  }
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> check_cross_fields(std::string_view ev,
                                                                     const Event& e) {
  if (ev != "fl.read") return std::nullopt;
  const bool unbound = e.flag("unbound");
  const bool has_value = e.has("value");
  if (unbound && has_value) return std::pair<std::string, std::string>{"unbound", "`unbound: true` with a `value`"};
  if (!unbound && !has_value) return std::pair<std::string, std::string>{"value", "missing (or `unbound: true`)"};
  return std::nullopt;
}

}  // namespace turnstile::oracle
