// trace.cpp: the trace sink slot, fiber naming, labels and the JSON Lines sink
// ([TRACE-4.3], spec/trace-format.md).
#include "turnstile/trace.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <thread>

namespace turnstile {

namespace trace::detail {
std::atomic<TraceSink*> g_sink{nullptr};
}  // namespace trace::detail

namespace {
std::atomic<std::uint64_t> next_counter{0};  // ids only: relaxed, pairs with nothing
std::atomic<std::uint64_t> next_thread{0};   // "thread:N" numbers: relaxed, pairs with nothing
// The thread that runs static initialisation is the program's main flow.
const std::thread::id main_thread = std::this_thread::get_id();
thread_local std::string_view tls_label;     // trace::ScopedLabel
thread_local std::string_view tls_fiber;     // trace::ScopedFiber
std::mutex order_mu;

// "prefix" + N, built by appending (GCC 12 -O3 reports a false -Wrestrict for
// a string literal + std::to_string(...)).
std::string numbered(const char* prefix, std::atomic<std::uint64_t>& counter) {
  std::string s(prefix);
  s += std::to_string(counter.fetch_add(1, std::memory_order_relaxed) + 1);
  return s;
}

std::string_view thread_name() {
  if (std::this_thread::get_id() == main_thread) return "main";
  thread_local const std::string name = numbered("thread:", next_thread);
  return name;
}

// The calling fiber's trace name; a fiber without one gets "fiber:N" now.
std::string_view fiber_name() {
  if (!tls_fiber.empty()) return tls_fiber;
  std::string* name = trace::detail::current_fiber_trace_name();  // fiber.cpp
  if (name == nullptr) return thread_name();
  if (name->empty()) *name = numbered("fiber:", next_counter);
  return *name;
}

void write_json_string(std::ostream& out, std::string_view s) {
  out << '"';
  for (const char c : s) {
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\r': out << "\\r"; break;
      case '\t': out << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          std::array<char, 8> buf{};
          std::snprintf(buf.data(), buf.size(), "\\u%04x", static_cast<unsigned>(c));
          out << buf.data();
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

void write_value(std::ostream& out, const TraceValue& v) {
  switch (v.kind) {
    case TraceValue::Kind::string: write_json_string(out, v.text); break;
    case TraceValue::Kind::integer: out << v.integer; break;
    case TraceValue::Kind::real:
      if (std::isfinite(v.real)) {
        std::array<char, 32> buf{};
        std::snprintf(buf.data(), buf.size(), "%.17g", v.real);
        out << buf.data();
      } else {
        out << "null";
      }
      break;
    case TraceValue::Kind::boolean: out << (v.boolean ? "true" : "false"); break;
    case TraceValue::Kind::null: out << "null"; break;
  }
}
}  // namespace

const TraceValue* TraceEvent::find(std::string_view field) const noexcept {
  for (std::size_t i = 0; i < size_; ++i)
    if (field == fields_[i].name) return &fields_[i].value;
  return nullptr;
}

TraceSink* set_trace_sink(TraceSink* sink) noexcept {
  // release: publishes the sink's construction to trace::emit's acquire load.
  return trace::detail::g_sink.exchange(sink, std::memory_order_acq_rel);
}

namespace trace {

void emit(TraceEvent& event) noexcept {
  // acquire: pairs with the release in set_trace_sink (the sink is constructed).
  TraceSink* sink = detail::g_sink.load(std::memory_order_acquire);
  if (sink == nullptr) return;
  try {
    event.set_fiber(fiber_name());
    sink->emit(event);
  } catch (...) {
    // Tracing never changes behaviour: an allocation failure drops the event.
  }
}

ScopedLabel::ScopedLabel(std::string_view label) noexcept : previous_(tls_label) { tls_label = label; }
ScopedLabel::~ScopedLabel() { tls_label = previous_; }

std::string next_id() { return numbered("#", next_counter); }

std::string take_label() {
  std::string s(tls_label);
  tls_label = {};
  return s;
}

std::string take_label_or_id() {
  if (tls_label.empty()) return next_id();
  std::string s(tls_label);
  tls_label = {};  // one emission takes it
  return s;
}

ScopedFiber::ScopedFiber(std::string_view name) noexcept : previous_(tls_fiber) { tls_fiber = name; }
ScopedFiber::~ScopedFiber() { tls_fiber = previous_; }

std::unique_lock<std::mutex> order_lock() { return std::unique_lock<std::mutex>(order_mu); }

void fl_bind(std::string_view key, const TraceValue& value) noexcept {
  TraceEvent e("fl.bind");
  e.str("key", key).value("value", value);
  emit(e);
}

void fl_restore(std::string_view key) noexcept {
  TraceEvent e("fl.restore");
  e.str("key", key);
  emit(e);
}

void fl_read(std::string_view key, const TraceValue* value) noexcept {
  try {
    const std::string op(tls_label);
    tls_label = {};
    TraceEvent e("fl.read");
    e.str("key", key);
    if (value != nullptr) e.value("value", *value); else e.flag("unbound", true);
    if (!op.empty()) e.str("op", op);
    emit(e);
  } catch (...) {
  }
}

std::string ctx_id(const void* head) {
  if (!tls_label.empty()) return take_label_or_id();
  std::array<char, 40> buf{};
  std::snprintf(buf.data(), buf.size(), "ctx@%p", head);
  return buf.data();
}

void fl_ctx(const char* ev, std::string_view ctx) noexcept {
  TraceEvent e(ev);
  e.str("ctx", ctx);
  emit(e);
}

}  // namespace trace

JsonLinesTraceSink::JsonLinesTraceSink(std::ostream& out, std::string_view impl,
                                       std::optional<std::string> scenario,
                                       std::optional<std::uint64_t> schedule_seed)
    : out_(out) {
  detail::LockGuard lock(mu_);
  out_ << R"({"seq":)" << ++seq_ << R"(,"ev":"trace","format":1,"impl":)";
  write_json_string(out_, impl);
  if (scenario) {
    out_ << ",\"scenario\":";
    write_json_string(out_, *scenario);
  }
  if (schedule_seed) out_ << ",\"schedule_seed\":" << *schedule_seed;
  out_ << "}\n";
}

void JsonLinesTraceSink::emit(const TraceEvent& event) noexcept {
  try {
    detail::LockGuard lock(mu_);
    if (finished_) return;
    out_ << "{\"seq\":" << ++seq_ << ",\"ev\":";
    write_json_string(out_, event.name());
    out_ << ",\"fiber\":";
    write_json_string(out_, event.fiber());
    for (std::size_t i = 0; i < event.size(); ++i) {
      out_ << ",\"" << event.field(i).name << "\":";
      write_value(out_, event.field(i).value);
    }
    out_ << "}\n";
  } catch (...) {
  }
}

void JsonLinesTraceSink::finish(std::string_view status) {
  detail::LockGuard lock(mu_);
  if (finished_) return;
  finished_ = true;
  out_ << R"({"seq":)" << ++seq_ << R"(,"ev":"end","status":)";
  write_json_string(out_, status);
  out_ << "}\n";
  out_.flush();
}

std::uint64_t JsonLinesTraceSink::lines() const {
  detail::LockGuard lock(mu_);
  return seq_;
}

}  // namespace turnstile
