// strand.cpp: Strand over the lane core.
#include "turnstile/strand.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "turnstile/detail/spare_slot.hpp"

namespace turnstile {

namespace {
using Core = detail::BasicLaneCore<StdSync>;

// One posted step, as an item of the lane core, built in this thread's spare
// and its storage recycled by the drain ([LANE-I6], detail/spare_slot.hpp): on
// a strand with steps queued, no allocation per step.
class StrandStep final : public Core::Item {
 public:
  explicit StrandStep(Runnable& r) : runnable_(r) {}
  void run_turn() noexcept override { runnable_.run(); }
  Core::Spare* complete() noexcept override {
    void* storage = this;
    this->~StrandStep();
    return Core::make_spare(storage);  // kept or freed by the drain
  }

 private:
  Runnable& runnable_;
};

struct NoMarker {
  void enter(Core::Item*) noexcept {}
  void exit() noexcept {}
};

constexpr std::size_t kStepsPerDrain = 64;
}  // namespace

// Its core gives the storage its list has no room for to the depot [LANE-7.8].
Strand::Strand(Scheduler& underlying) : underlying_(underlying), core_(&detail::spare_depot()) {}

Strand::~Strand() {
  if (!core_.is_idle()) {
    std::fputs("turnstile: a Strand was destroyed with steps queued or running [TURN-6.1]\n",
               stderr);
    std::abort();
  }
}

void Strand::post(Runnable& item) {
  static_assert(sizeof(StrandStep) <= Core::kSpareBytes);
  void* storage = detail::take_item_storage();
  auto* const step = new (storage) StrandStep(item);  // cannot throw
  Core::Spare** const slot = detail::spare_slot_if_empty();
  if (core_.submit(step, slot) == Core::Submit::accepted_start_drain) {
    keep_alive_ = shared_from_this();  // the drain holds the strand while it runs
    underlying_.post(drainer_);
  }
  if (slot != nullptr) detail::refill_from_depot_if_empty();  // the strand had none [LANE-7.8]
  // clang-analyzer false positive: from submit() on, `step` is owned by core_'s
  // queue, and the drain recycles or frees its storage after its complete();
  // submit() never refuses it (a Strand never closes its core). The analyzer
  // does not follow the item into the queue.
  // NOLINTNEXTLINE(clang-analyzer-cplusplus.NewDeleteLeaks)
}

void Strand::Drainer::run() noexcept {
  std::shared_ptr<Strand> keep = std::move(strand_->keep_alive_);
  NoMarker none;
  // [LANE-I6] the step's last storage goes to this carrier's chain, kept bounded
  const Core::Drain status = strand_->core_.drain(none, kStepsPerDrain, detail::spare_slot());
  detail::bound_spare_slot();  // [LANE-7.8]
  if (status == Core::Drain::more) {
    strand_->keep_alive_ = std::move(keep);
    strand_->underlying_.post(*this);  // [TURN-6.1] one step at a time, repost for fairness
  }
  // `keep` may be the last reference: the strand is destroyed here, idle.
}

}  // namespace turnstile
