// spare_slot.cpp: each thread's spare slot ([LANE-I6]).
#include "turnstile/detail/spare_slot.hpp"

#include <new>

namespace turnstile::detail {

namespace {
// A chain of spares: refilled, when empty, with a lane's whole spare list by
// the calling thread's accepted submission, with the last storage of a drain
// step this thread ran, or, when the lane had none, with a chain from the
// depot; emptied one by one by its next items. Touched by its
// own thread only, so no synchronisation: the hand-over from the drain happens
// under the lane's mutex ([LANE-I6]), from the depot under the depot's
// ([DEPOT-I1]). At most a lane's list (32 plus a step's items) or a depot
// chain (a step's items) long.
struct SpareSlot {
  SpareCore::Spare* spare = nullptr;  // the chain's first spare
  SpareSlot() = default;
  SpareSlot(const SpareSlot&) = delete;
  SpareSlot& operator=(const SpareSlot&) = delete;
  ~SpareSlot() { SpareCore::release_all(spare); }  // at thread exit
};
thread_local SpareSlot spare_slot;
}  // namespace

SpareCore::SpareDepot& spare_depot() noexcept {
  // Never destroyed (see the header): built on first use inside a union whose
  // destructor does not destroy it.
  union NeverDestroyed {
    SpareCore::SpareDepot depot;
    NeverDestroyed() : depot(kDepotBytes / SpareCore::kSpareBytes) {}
    ~NeverDestroyed() {}  // NOLINT(modernize-use-equals-default): must not destroy `depot`
  };
  static NeverDestroyed holder;
  return holder.depot;
}

void* take_item_storage() {
  SpareCore::Spare*& chain = spare_slot.spare;
  if (chain != nullptr) return SpareCore::take_storage(chain);
  return ::operator new(SpareCore::kSpareBytes);
}

void refill_from_depot_if_empty() noexcept {
  SpareCore::Spare*& chain = spare_slot.spare;
  if (chain == nullptr) chain = spare_depot().take();  // [DEPOT-I1] now this thread's alone
}

void give_back_item_storage(void* storage) noexcept {
  SpareCore::push_storage(spare_slot.spare, storage);  // it came from this chain or is one more
}

SpareCore::Spare** spare_slot_if_empty() noexcept {
  return spare_slot.spare == nullptr ? &spare_slot.spare : nullptr;
}

}  // namespace turnstile::detail
