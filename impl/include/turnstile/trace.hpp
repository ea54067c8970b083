// turnstile/trace.hpp: the TraceSink hook through which every primitive reports
// what it does, in the vocabulary of spec/trace-format.md ([TRACE-4.3]).
//
//   std::ostringstream out;
//   JsonLinesTraceSink sink(out);            // writes the `trace` header
//   TraceSink* prev = set_trace_sink(&sink); // on
//   sync_wait(run_app());                    // fibers, lanes, activations
//   set_trace_sink(prev);                    // off again, once quiescent
//   sink.finish();                           // writes the `end` line
//
// Guarantees
//   - Off by default. While no sink is installed, every emission point costs one
//     relaxed atomic load and a branch, and allocates nothing; the behaviour of
//     every primitive is the same with a sink on or off ([TRACE-4.3]). The later
//     events of an operation (a lane item's turn and resumption, a call's turn)
//     follow the decision taken at its first event: a null test of the item's
//     trace record (a pointer or an empty string kept in the item or call).
//     Measured: checks/conformance/reference/trace_cost_bench.cpp.
//   - Events are emitted where spec/trace-format.md section 1 says (StateLane,
//     FiberLocal, FiberContext, Scope::spawn, detach, Activation). Which fiber
//     emitted an event is filled in by trace::emit: a fiber's trace name, the
//     lane turn that runs on this thread, or "main" / "thread:N" on a plain
//     thread.
//   - Events that must be ordered across threads (a lane's accepted vs its turn
//     starts, close_requested vs submissions, a serial call vs its position in
//     the turn chain) are emitted under one ordering lock (trace::OrderLock),
//     taken only while a sink is installed.
//   - FiberLocal<T> is traced for T = std::string, bool and arithmetic types;
//     keys of other types (the runtime's own markers) emit nothing.
//
// Installing and removing ([TRACE-4.3], memory order): emission points load the
// sink pointer *relaxed* (the off path). When it is non-null, trace::emit loads
// it again with acquire, pairing with the release store in set_trace_sink, so
// the sink's construction is visible before its emit() runs. Installing a sink
// while primitives run only guarantees that events started after the install
// is visible to them are emitted: an operation already in progress may emit
// half of its events (e.g. a `restore` without its `bind`). Install the sink
// before starting the work to trace and remove it once quiescent; a removed
// sink must outlive any emit() still running (keep it alive until quiescent).
//
// Labels (for a driver, e.g. turnstile-oracle run): trace::ScopedLabel names
// the object created by the next emission on this thread within its lifetime:
// the `item` of a lane submission, the `call` (and `op`) of an activation
// call(), the `call` of a `turn` re-entry, the `op` of a FiberLocal read, the `ctx` of a capture or
// install, the `child` of a spawn/detach (which also becomes that fiber's trace
// name), the `task` of ctx.task(). Unlabelled objects get ids from a global
// counter ("#N"; a FiberContext: its snapshot's address, "ctx@...").
//
// Thread safety: set_trace_sink from any thread (see above). JsonLinesTraceSink
// serialises emit() under its mutex and assigns `seq` there.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "turnstile/detail/thread_annotations.hpp"

namespace turnstile {

// One JSON scalar of an event field.
struct TraceValue {
  enum class Kind : unsigned char { string, integer, real, boolean, null };
  Kind kind = Kind::null;
  std::string_view text;
  std::int64_t integer = 0;
  double real = 0;
  bool boolean = false;
};

// One event: a name plus up to kMaxFields typed fields. Views only: it never
// allocates, and it is built only while a sink is installed.
class TraceEvent {
 public:
  static constexpr std::size_t kMaxFields = 6;
  struct Field {
    const char* name = nullptr;
    TraceValue value;
  };

  explicit TraceEvent(std::string_view name) noexcept : name_(name) {}

  TraceEvent& str(const char* field, std::string_view v) noexcept {
    TraceValue t;
    t.kind = TraceValue::Kind::string;
    t.text = v;
    return value(field, t);
  }
  TraceEvent& flag(const char* field, bool v) noexcept {
    TraceValue t;
    t.kind = TraceValue::Kind::boolean;
    t.boolean = v;
    return value(field, t);
  }
  TraceEvent& value(const char* field, TraceValue v) noexcept {
    if (size_ < kMaxFields) fields_[size_++] = Field{field, v};
    return *this;
  }

  std::string_view name() const noexcept { return name_; }
  // The emitting fiber; set by trace::emit.
  std::string_view fiber() const noexcept { return fiber_; }
  void set_fiber(std::string_view f) noexcept { fiber_ = f; }
  std::size_t size() const noexcept { return size_; }
  const Field& field(std::size_t i) const noexcept { return fields_[i]; }
  // The field named `field`, or null.
  const TraceValue* find(std::string_view field) const noexcept;

 private:
  std::string_view name_;
  std::string_view fiber_;
  std::array<Field, kMaxFields> fields_{};
  std::size_t size_ = 0;
};

// Receives every event while installed. emit() may be called from any thread
// at once; it must not throw and must not call back into traced primitives.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void emit(const TraceEvent& event) noexcept = 0;
};

// Installs `sink` (null turns tracing off) and returns the previous one.
TraceSink* set_trace_sink(TraceSink* sink) noexcept;

// Writes spec/trace-format.md JSON Lines to `out`: the `trace` header at
// construction, one line per event with `seq` assigned under a mutex, and the
// `end` line at finish() (after which events are dropped).
class JsonLinesTraceSink final : public TraceSink {
 public:
  explicit JsonLinesTraceSink(std::ostream& out, std::string_view impl = "turnstile-cpp 0.1",
                              std::optional<std::string> scenario = std::nullopt,
                              std::optional<std::uint64_t> schedule_seed = std::nullopt);
  void emit(const TraceEvent& event) noexcept override;
  // Writes the end marker: status "quiescent" or "timeout". Idempotent.
  void finish(std::string_view status = "quiescent");
  // Lines written so far (header and end included).
  std::uint64_t lines() const;

 private:
  mutable detail::Mutex mu_;
  std::ostream& out_;  // written only with mu_ held (a reference cannot carry the annotation)
  std::uint64_t seq_ TURNSTILE_GUARDED_BY(mu_) = 0;
  bool finished_ TURNSTILE_GUARDED_BY(mu_) = false;
};

namespace trace {
namespace detail {
extern std::atomic<TraceSink*> g_sink;
// The trace-name slot of the fiber whose step runs on this thread, or null on
// a plain thread. Defined by fiber.cpp (a fiber owns its name; emit() names an
// unnamed fiber "fiber:N" on its first event, through this slot).
std::string* current_fiber_trace_name() noexcept;
}  // namespace detail

// The off path of every emission point: one relaxed load and a branch. Relaxed
// is enough here: it only decides whether to build an event; emit() re-loads
// with acquire (pairs with the release store in set_trace_sink). [TRACE-4.3]
inline bool on() noexcept {
  return detail::g_sink.load(std::memory_order_relaxed) != nullptr;
}

// Fills the event's fiber and hands it to the installed sink (no-op if none).
void emit(TraceEvent& event) noexcept;

// Names the object created by the next emission on this thread (see above).
// The label's characters must outlive the ScopedLabel (it keeps a view).
class ScopedLabel {
 public:
  explicit ScopedLabel(std::string_view label) noexcept;
  explicit ScopedLabel(const char* label) noexcept : ScopedLabel(std::string_view(label)) {}
  explicit ScopedLabel(std::string&&) = delete;  // a temporary would dangle
  ~ScopedLabel();
  ScopedLabel(const ScopedLabel&) = delete;
  ScopedLabel& operator=(const ScopedLabel&) = delete;

 private:
  std::string_view previous_;
};

// The pending label (cleared), or "#N" from the global counter when none.
std::string take_label_or_id();
// The pending label (cleared), or empty when none.
std::string take_label();
// "#N" from the global counter.
std::string next_id();

// Emissions made on this thread in this object's lifetime are attributed to
// fiber `name` (a lane turn runs on the drain's carrier, as its own fiber).
class ScopedFiber {
 public:
  explicit ScopedFiber(std::string_view name) noexcept;  // `name` outlives this object
  explicit ScopedFiber(std::string&&) = delete;
  ~ScopedFiber();
  ScopedFiber(const ScopedFiber&) = delete;
  ScopedFiber& operator=(const ScopedFiber&) = delete;

 private:
  std::string_view previous_;
};
// Serialises emissions that must be ordered with a state change made under it.
std::unique_lock<std::mutex> order_lock();

// Values of FiberLocal<T> that appear in traces.
template <class T>
inline constexpr bool traceable_v =
    std::is_same_v<T, std::string> || std::is_same_v<T, bool> || std::is_arithmetic_v<T>;

template <class T>
TraceValue value_of(const T& v) noexcept {
  TraceValue t;
  if constexpr (std::is_same_v<T, std::string>) {
    t.kind = TraceValue::Kind::string;
    t.text = v;
  } else if constexpr (std::is_same_v<T, bool>) {
    t.kind = TraceValue::Kind::boolean;
    t.boolean = v;
  } else if constexpr (std::is_integral_v<T>) {
    t.kind = TraceValue::Kind::integer;
    t.integer = static_cast<std::int64_t>(v);
  } else {
    t.kind = TraceValue::Kind::real;
    t.real = static_cast<double>(v);
  }
  return t;
}

// Out-of-line emitters for FiberLocal and FiberContext (header templates).
void fl_bind(std::string_view key, const TraceValue& value) noexcept;
void fl_restore(std::string_view key) noexcept;
void fl_read(std::string_view key, const TraceValue* value) noexcept;  // null: unbound
std::string ctx_id(const void* head);  // label, or "ctx@<address>"
void fl_ctx(const char* ev, std::string_view ctx) noexcept;  // capture/install/uninstall
}  // namespace trace

}  // namespace turnstile
