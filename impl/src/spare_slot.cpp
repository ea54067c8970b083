// spare_slot.cpp: each thread's spare slot ([LANE-I6]).
#include "turnstile/detail/spare_slot.hpp"

#include <cstddef>
#include <new>

#include "turnstile/detail/never_destroyed.hpp"

namespace turnstile::detail {

namespace {
// A chain of spares: refilled, when empty, with a lane's whole spare list by
// the calling thread's accepted submission, or, when the lane had none, with a
// chain from the depot; grown by the last storage of each drain step this
// thread runs (given whole to the depot when long, bound_spare_slot());
// emptied one by one by its next items. Touched by its
// own thread only, so no synchronisation: the hand-over from the drain happens
// under the lane's mutex ([LANE-I6]), from the depot under the depot's
// ([DEPOT-I1]). At most a lane's list (32 plus a step's items) or a depot
// chain, plus kSlotMaxSpares + kSlotCheckSteps, long.
struct SpareSlot {
  SpareCore::Spare* spare = nullptr;  // the chain's first spare
  std::size_t steps = 0;              // drain steps since the chain's length was looked at
  SpareSlot() = default;
  SpareSlot(const SpareSlot&) = delete;
  SpareSlot& operator=(const SpareSlot&) = delete;
  ~SpareSlot() { SpareCore::release_all(spare); }  // at thread exit
};
thread_local SpareSlot tl_slot;
}  // namespace

SpareCore::SpareDepot& spare_depot() noexcept {
  // Never destroyed (see the header).
  static NeverDestroyed<SpareCore::SpareDepot> holder(
      [] { return SpareCore::SpareDepot(kDepotBytes / SpareCore::kSpareBytes); });
  return holder.value;
}

void* take_item_storage() {
  SpareCore::Spare*& chain = tl_slot.spare;
  if (chain != nullptr) return SpareCore::take_storage(chain);
  return ::operator new(SpareCore::kSpareBytes);
}

void refill_from_depot_if_empty() noexcept {
  SpareCore::Spare*& chain = tl_slot.spare;
  if (chain == nullptr) chain = spare_depot().take();  // [DEPOT-I1] now this thread's alone
}

void give_back_item_storage(void* storage) noexcept {
  SpareCore::push_storage(tl_slot.spare, storage);  // it came from this chain or is one more
}

SpareCore::Spare** spare_slot() noexcept { return &tl_slot.spare; }

void bound_spare_slot() noexcept {
  // Each step adds at most one spare (its last item's), so the chain grows by
  // at most kSlotCheckSteps between looks: it stays under kSlotMaxSpares plus
  // that plus what one refill brought (a lane's list or a depot chain).
  if (++tl_slot.steps < kSlotCheckSteps) return;
  tl_slot.steps = 0;
  std::size_t count = 0;
  for (SpareCore::Spare* s = tl_slot.spare; s != nullptr && count <= kSlotMaxSpares;
       s = SpareCore::next_of(s))
    ++count;
  if (count <= kSlotMaxSpares) return;
  // Given in pieces of at most kMaxDepotChain, so chains do not grow from one
  // round to the next (take L, add 64, give L + 64) and a refill stays short.
  while (tl_slot.spare != nullptr) {
    SpareCore::Spare* piece = tl_slot.spare;
    SpareCore::Spare* last = piece;
    std::size_t n = 1;
    for (; n < kMaxDepotChain && SpareCore::next_of(last) != nullptr; ++n) last = SpareCore::next_of(last);
    tl_slot.spare = SpareCore::cut_after(last);
    spare_depot().give(piece, n);  // [DEPOT-I1] whole; freed when it does not fit
  }
}

SpareCore::Spare** spare_slot_if_empty() noexcept {
  return tl_slot.spare == nullptr ? &tl_slot.spare : nullptr;
}

}  // namespace turnstile::detail
