// gate.cpp: Gate's direction check, FIFO hand-off and release.
#include "turnstile/gate.hpp"

#include <cstdio>
#include <cstdlib>

#include "turnstile/state_lane.hpp"

namespace turnstile {

Gate::Gate(std::string name) : name_(std::move(name)) {}

Gate::~Gate() {
  bool busy = false;
  {
    detail::LockGuard lock(mu_);
    busy = held_ || head_ != nullptr;
  }
  if (busy) {
    std::fprintf(stderr,
                 "turnstile: Gate '%s' was destroyed while held or waited on; every Holder and "
                 "waiter must be gone first\n",
                 name_.c_str());
    std::abort();
  }
}

void Gate::refuse_inside_turn(const char* what) const {
  if (const StateLane* lane = StateLane::current())  // [LANE-4.6] the forbidden direction
    throw LaneGateError(std::string(what) + " on Gate '" + name_ + "' inside a turn of StateLane '" +
                        lane->name() +
                        "': a turn must not wait for a gate, whose holder may be waiting for "
                        "this lane. Take the gate before entering the lane [LANE-4.6]");
}

Gate::AcquireAwaiter Gate::acquire() {
  refuse_inside_turn("acquire()");
  return AcquireAwaiter(*this);
}

std::optional<Gate::Holder> Gate::try_acquire() {
  refuse_inside_turn("try_acquire()");
  detail::LockGuard lock(mu_);
  if (held_) return std::nullopt;  // a held gate may have waiters: never overtake them
  held_ = true;
  return Holder(this);
}

bool Gate::is_held() const {
  detail::LockGuard lock(mu_);
  return held_;
}

std::size_t Gate::waiting() const {
  detail::LockGuard lock(mu_);
  return waiting_;
}

void Gate::link(Waiter* w) noexcept {
  w->next = nullptr;
  if (tail_ != nullptr) tail_->next = w; else head_ = w;
  tail_ = w;  // FIFO: linked at the tail, served from the head
  ++waiting_;
}

void Gate::release_one() noexcept {
  Waiter* next = nullptr;
  {
    detail::LockGuard lock(mu_);
    next = head_;
    if (next == nullptr) {
      held_ = false;
      return;
    }
    head_ = next->next;  // the gate passes straight to the oldest waiter: held_ stays true
    if (head_ == nullptr) tail_ = nullptr;
    --waiting_;
  }
  next->resume.post();  // [RT-4.2] posted to the waiter's scheduler, never inline
}

}  // namespace turnstile
