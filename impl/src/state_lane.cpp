// state_lane.cpp: StateLane's submission, drain step, marker and close.
#include "turnstile/state_lane.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>

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
class TurnMarker {
 public:
  explicit TurnMarker(const StateLane* lane) noexcept : lane_(lane) {}
  void enter(LaneCore::Item* item) {
    auto* queued = static_cast<LaneItem*>(item);
    swap_.emplace(FiberLocalAccess::bind(lane_marker(), lane_, std::move(queued->context)));
  }
  void exit() noexcept { swap_.reset(); }

 private:
  const StateLane* lane_;
  std::optional<ContextSwap> swap_;
};
}  // namespace
}  // namespace detail

StateLane::StateLane(std::string name, Scheduler& scheduler)
    : name_(std::move(name)), scheduler_(scheduler) {}

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
    throw LaneReentrancyError("reentrant entry into StateLane '" + name_ +
                              "' from its own turn: it would wait for itself. Call the on-lane "
                              "body directly instead [LANE-5.3]");
}

LaneClosedError StateLane::closed_error() const {
  return LaneClosedError("StateLane '" + name_ + "' is closed [LANE-7.4]");
}

bool StateLane::submit(detail::LaneItem& item) {
#if defined(TURNSTILE_MUTANT_LANE_POST_INLINE_ON_OWN_TURN)
  // mutant: [LANE-7.7] work submitted from the lane's own turn (a try_post:
  // run() has thrown already) runs inline, inside that turn, instead of
  // queuing behind it
  if (is_on_lane() && !core_.is_closed()) {
    item.run_turn();
    item.complete();
    return true;
  }
#endif
  item.context = detail::current_context();  // the turn sees the submitter's bindings
  switch (core_.submit(&item)) {
    case detail::LaneCore::Submit::refused_closed:
      return false;
    case detail::LaneCore::Submit::accepted:
      return true;
    case detail::LaneCore::Submit::accepted_start_drain:
      start_drain();
      return true;
  }
  return true;
}

void StateLane::start_drain() { scheduler_.post(drainer_); }  // never inline [RT-2.1]

void StateLane::Drainer::run() noexcept {
  detail::TurnMarker marker(lane_);
  switch (lane_->core_.drain(marker, detail::kTurnsPerStep)) {
    case detail::LaneCore::Drain::more:
      lane_->start_drain();  // budget used: repost behind other ready work
      break;
    case detail::LaneCore::Drain::idle:
      break;  // the lane may be destroyed from here on
    case detail::LaneCore::Drain::drained:
      lane_->drained_.set();  // [LANE-7.6] the last accepted item has run
      break;
  }
}

Task<> StateLane::close() {
#if defined(TURNSTILE_MUTANT_LANE_CLOSE_BEFORE_DRAIN)
  // mutant: [LANE-7.6] close() completes once it stops accepting, before the
  // items it had accepted have run
  core_.close();
  drained_.set();
#else
  if (core_.close()) drained_.set();  // idle when closed: drained at once [LANE-I4]
#endif
  return wait_drained(drained_);      // takes effect at the call; idempotent
}

bool StateLane::is_closed() { return core_.is_closed(); }

void StateLane::set_error_handler(ErrorHandler h) {
  std::lock_guard lock(handler_mu_);
  handler_ = std::move(h);
}

void StateLane::report_error(const std::exception_ptr& e) noexcept {
  ErrorHandler h;
  {
    std::lock_guard lock(handler_mu_);
    h = handler_;
  }
  if (h) {
    try {
      h(*this, e);
      return;
    } catch (...) {
      std::fprintf(stderr, "turnstile: the error handler of StateLane '%s' threw\n",
                   name_.c_str());
    }
  }
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "turnstile: StateLane '%s': posted work threw: %s\n", name_.c_str(),
                 ex.what());
  } catch (...) {
    std::fprintf(stderr, "turnstile: StateLane '%s': posted work threw a non-standard exception\n",
                 name_.c_str());
  }
}

}  // namespace turnstile
