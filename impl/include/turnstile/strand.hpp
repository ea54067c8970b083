// turnstile/strand.hpp: Strand, a scheduler that runs its steps one at a time
// on top of another scheduler.
//
// Every item posted to a Strand runs on the underlying scheduler, but never two
// at once, and in the order posted ([TURN-6.1]). Fibers whose scheduler is a
// Strand therefore interleave only at their suspension points: between two
// awaits nothing else of that strand runs. An Activation runs all its turns on
// its own Strand, which is what makes "between two awaits nothing else touches
// this actor's state" true on a multi-carrier pool.
//
// The queue is the state lane's own core (detail::BasicLaneCore), so the strand
// inherits its model-checked exclusion and FIFO ([LANE-I1], [LANE-I2]).
//
// Ownership: create it with std::make_shared. While a drain runs, it holds a
// reference to the strand, so the owner may drop its reference as soon as the
// last awaited result arrives, even while the drain is still finishing.
//
// Thread safety: post() from any thread. Precondition: owned by a shared_ptr.
#pragma once

#include <memory>

#include "turnstile/detail/lane_core.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/sync.hpp"

namespace turnstile {

class Strand final : public Scheduler, public std::enable_shared_from_this<Strand> {
 public:
  explicit Strand(Scheduler& underlying);
  ~Strand() override;

  void post(Runnable& item) override;
  // Time is the underlying scheduler's: its clock, its timer queue; a due
  // timer armed here is posted to this strand [RT-8.1] [RT-8.2].
  Clock::time_point now() const override { return underlying_.now(); }
  Clock::time_point coarse_now() const override { return underlying_.coarse_now(); }
  Clock::duration coarse_error() const override { return underlying_.coarse_error(); }
  void arm_timer(std::shared_ptr<detail::TimerEntry> entry) override {
    underlying_.arm_timer(std::move(entry));
  }
  Scheduler& underlying() const noexcept { return underlying_; }

 private:
  class Drainer final : public Runnable {
   public:
    explicit Drainer(Strand* s) : strand_(s) {}
    void run() noexcept override;

   private:
    Strand* strand_;
  };

  Scheduler& underlying_;
  detail::BasicLaneCore<StdSync> core_;
  Drainer drainer_{this};
  // Set by the post() that starts a drain, moved out by that drain: only the
  // one running drain touches it ([LANE-I1]); ordered by the scheduler's queue.
  std::shared_ptr<Strand> keep_alive_;
};

}  // namespace turnstile
