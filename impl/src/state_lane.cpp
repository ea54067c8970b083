// state_lane.cpp: StateLane's submission, drain step, marker and close.
#include "turnstile/state_lane.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "turnstile/trace.hpp"

namespace turnstile {

namespace detail {
namespace {
FrameRef carry_lane_marker(FrameRef onto, const Frame* running);
}

// A position key ([FL-3.8]): FiberContext::run keeps the running fiber's marker,
// so a context captured in a turn does not carry the lane out of it ([LANE-6.2]),
// and one run inside a turn does not drop it ([LANE-5.3]). nullptr = no lane.
const FiberLocal<const StateLane*>& lane_marker() noexcept {
  static const FiberLocal<const StateLane*>& marker = [] () -> const FiberLocal<const StateLane*>& {
    static const FiberLocal<const StateLane*> key("turnstile.lane_marker");
    register_position_key(&carry_lane_marker);
    return key;
  }();
  return marker;
}

namespace {
FrameRef carry_lane_marker(FrameRef onto, const Frame* running) {
  return FiberLocalAccess::carry_position(lane_marker(), std::move(onto), running);
}
}  // namespace

namespace {
// How many turns one drain step runs before reposting itself, so one busy lane
// does not monopolise a carrier shared with other lanes and fibers.
constexpr std::size_t kTurnsPerStep = 64;

// Installs, for one turn, the submitter's context with the lane's marker on top;
// exit() restores the carrier's own context, before the item completes
// ([LANE-I5], [LANE-5.6]).
//
// A submitter with no bindings (none once its position is cleared) gets the
// lane's bare marker frame, built once and shared by all such turns: frames are
// immutable, so every one of those turns would build the same frame ([FL-5.3]).
// `bare` is the lane's slot for it, touched only by the running drain [LANE-I1].
// The frame is lent to the carrier's context slot for the turn and taken back
// at exit(), not copied: no reference count is changed per turn (two atomic
// read-modify-writes of a bare turn's cost). A turn that copies the context
// (a FiberContext captured inside it) counts a reference of its own as usual.
class LaneTurnMarker {
 public:
  LaneTurnMarker(const StateLane* lane, FrameRef& bare) noexcept : lane_(lane), bare_(bare) {}
  void enter(LaneCore::Item* item) {
    auto* queued = static_cast<LaneItem*>(item);
    // The submitter's bindings, this lane as the position and no actor turn:
    // the item is the lane's turn, not part of the submitter's ([FL-3.8] table).
    FrameRef start = clear_position(std::move(queued->context));
    FrameRef head;
    if (start || trace::on()) [[unlikely]] {  // traced: each turn's context has its own id
      head = FiberLocalAccess::bind(lane_marker(), lane_, std::move(start));
    } else {
      if (!bare_) bare_ = FiberLocalAccess::bind(lane_marker(), lane_, FrameRef());
      lent_ = bare_.get();  // [FL-3.8] this lane as the position, nothing else bound
      head = std::move(bare_);
    }
    saved_ = exchange_context(std::move(head));
    if (queued->trace) [[unlikely]] {  // [TRACE-4.3] the turn runs as its own fiber
      traced_ = queued->trace.get();
      fiber_.emplace(traced_->fiber);
      auto order = trace::order_lock();  // after the submitter's lane.accepted
      trace_lane_event("lane.turn_start", *traced_, nullptr);
    }
  }
  void exit() noexcept {
    // [FL-3.1] the carrier's context restored. The turn's head is released,
    // unless it is the lent frame, which goes back to the lane's slot (a head
    // other than it, a turn that left a binding installed, is released, and
    // the slot rebuilt at the next turn).
    {
      FrameRef back = exchange_context(std::move(saved_));
      if (lent_ != nullptr && back.get() == lent_) bare_ = std::move(back);
    }  // released here, before the trace events below
    lent_ = nullptr;
    if (traced_ != nullptr) [[unlikely]] {  // [TRACE-4.3] after the marker is released
      trace_lane_event("lane.turn_end", *traced_, traced_->failed ? "error" : "ok");
      fiber_.reset();
      traced_ = nullptr;
    }
  }

 private:
  const StateLane* lane_;
  FrameRef& bare_;
  FrameRef saved_;                // the carrier's context, replaced during the turn
  const Frame* lent_ = nullptr;   // a bare turn: bare_'s frame, lent to the context slot
  LaneTrace* traced_ = nullptr;
  std::optional<trace::ScopedFiber> fiber_;
};

void trace_lane(const char* ev, std::string_view lane) noexcept {
  TraceEvent e(ev);
  e.str("lane", lane);
  trace::emit(e);
}
}  // namespace

void trace_lane_event(const char* ev, const LaneTrace& t, const char* outcome) noexcept {
  TraceEvent e(ev);
  e.str("lane", t.lane).str("item", t.item);
  if (outcome != nullptr) e.str("outcome", outcome);
  trace::emit(e);
}
}  // namespace detail

StateLane::StateLane(std::string name, Scheduler& scheduler)
    : name_(std::move(name)),
      scheduler_(scheduler),
      hot_(std::make_unique<Hot>()),  // items are in slabs, not spares [LANE-7.9]
      core_(hot_->core) {}

StateLane::~StateLane() {
  if (!core_.is_idle()) {
    std::fprintf(stderr,
                 "turnstile: StateLane '%s' was destroyed with turns queued or running; "
                 "co_await close() before destroying it [LANE-7.6]\n",
                 name_.c_str());
    std::abort();
  }
}

const StateLane* StateLane::current() noexcept {
  const StateLane* const* v = detail::lane_marker().try_get();
  return v != nullptr ? *v : nullptr;
}

void StateLane::throw_if_reentrant() const {
  if (is_on_lane())  // [LANE-5.3] [LANE-7.2] checked in every build
    throw LaneReentrancyError(
        "reentrant entry into StateLane '" + name_ +
        "' from its own turn: it would wait for itself. If the component calls its own public "
        "method, call the private on-lane body directly instead [LANE-6.1]; if a callback or "
        "listener invoked inside the turn calls back in, invoke it outside the turn with "
        "split_callback [LANE-6.3] [LANE-5.3] [LANE-5.5]");
}

LaneClosedError StateLane::closed_error() const {
  return LaneClosedError("StateLane '" + name_ + "' is closed [LANE-7.4]");
}

bool StateLane::submit(detail::LaneItem& item) {
  item.context = detail::current_context();  // the turn sees the submitter's bindings
  // Read before the item is queued: once it is, a carrier may run and free it
  // (a try_post item belongs to the lane). A traced item stays alive below: its
  // turn_start waits for the order lock this call holds.
  const bool traced = item.trace != nullptr;
  std::unique_lock<std::mutex> order;  // [TRACE-4.3] the answer is ordered with the queue
  if (traced) [[unlikely]] order = trace::order_lock();
  const auto result = core_.submit(&item);
  if (traced) [[unlikely]] {
    if (result == detail::LaneCore::Submit::refused_closed) {
      trace_refused(*item.trace, "closed");
    } else {
      detail::trace_lane_event("lane.accepted", *item.trace, nullptr);
      TraceEvent e("fiber.spawn");  // the turn sees the submitter's bindings
      e.str("child", item.trace->fiber).flag("structured", true);
      trace::emit(e);
    }
  }
  if (result == detail::LaneCore::Submit::accepted_start_drain) start_drain();
  return result != detail::LaneCore::Submit::refused_closed;
}

std::unique_ptr<detail::LaneTrace> StateLane::trace_submit(const char* op) {
  auto t = std::make_unique<detail::LaneTrace>();
  t->lane = name_;
  t->item = trace::take_label_or_id();
  t->fiber = name_ + ":" + t->item;
  TraceEvent e("lane.submit");
  e.str("lane", t->lane).str("item", t->item).str("op", op);
  trace::emit(e);
  return t;
}

void StateLane::trace_refused(const detail::LaneTrace& t, const char* reason) noexcept {
  TraceEvent e("lane.refused");
  e.str("lane", t.lane).str("item", t.item).str("reason", reason);
  trace::emit(e);
}

void StateLane::start_drain() { scheduler_.post(drainer_); }  // never inline [RT-2.1]

void StateLane::Drainer::run() noexcept {
  detail::LaneTurnMarker marker(lane_, lane_->hot_->bare_marker);
  // No item returns a spare: a try_post item's slot is released by its
  // complete() [LANE-7.9], a run() item's record by its awaiter.
  const auto status = lane_->core_.drain(marker, detail::kTurnsPerStep);
  switch (status) {
    case detail::LaneCore::Drain::more:
      lane_->start_drain();  // budget used: repost behind other ready work
      break;
    case detail::LaneCore::Drain::idle:
      break;  // the lane may be destroyed from here on
    case detail::LaneCore::Drain::drained:
      if (trace::on()) [[unlikely]] detail::trace_lane("lane.drained", lane_->name_);  // [TRACE-4.3]
      lane_->drained_.set();  // [LANE-7.6] the last accepted item has run
      break;
  }
}

Task<> StateLane::close() {
  bool idle = false;
  if (trace::on()) [[unlikely]] {  // [TRACE-4.3] ordered with the submissions it refuses
    auto order = trace::order_lock();
    detail::trace_lane("lane.close_requested", name_);
    idle = core_.close();
    if (idle) detail::trace_lane("lane.drained", name_);
  } else {
    idle = core_.close();
  }
  if (idle) drained_.set();  // idle when closed: drained at once [LANE-I4]
  return wait_drained(drained_);      // takes effect at the call; idempotent
}

bool StateLane::is_closed() { return core_.is_closed(); }

void StateLane::set_error_handler(ErrorHandler h) {
  detail::LockGuard lock(handler_mu_);
  handler_ = std::move(h);
}

namespace {
// The message of an exception: what() of a std::exception, else a fixed text.
std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "a non-standard exception";
  }
}
}  // namespace

void StateLane::report_error(const std::exception_ptr& e) noexcept {
  ErrorHandler h;
  {
    detail::LockGuard lock(handler_mu_);
    h = handler_;
  }
  std::string handler_error;
  if (h) {
    try {
      h(*this, e);
      return;
    } catch (...) {
      handler_error = describe(std::current_exception());
    }
  }
  // [LANE-7.5] one line: the lane, the work's error and, when the handler threw,
  // that it did and its message.
  try {
    const std::string work_error = describe(e);
    if (!h) {
      std::fprintf(stderr, "turnstile: StateLane '%s': posted work threw: %s\n", name_.c_str(),
                   work_error.c_str());
    } else {
      std::fprintf(stderr,
                   "turnstile: StateLane '%s': posted work threw: %s; its error handler threw: "
                   "%s\n",
                   name_.c_str(), work_error.c_str(), handler_error.c_str());
    }
  } catch (...) {  // no memory for the message: the lane's name alone
    std::fprintf(stderr, "turnstile: StateLane '%s': posted work threw\n", name_.c_str());
  }
}

}  // namespace turnstile
