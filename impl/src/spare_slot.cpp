// spare_slot.cpp: each thread's spare slot ([LANE-I6]).
#include "turnstile/detail/spare_slot.hpp"

#include <new>

namespace turnstile::detail {

namespace {
// A chain of spares: refilled, when empty, with a lane's whole spare list by
// the calling thread's accepted submission, or with the last storage of a drain
// step this thread ran; emptied one by one by its next items. Touched by its
// own thread only, so no synchronisation: the hand-over from the drain happens
// under the lane's mutex ([LANE-I6]). At most a lane's list (32) long.
struct SpareSlot {
  SpareCore::Spare* spare = nullptr;  // the chain's first spare
  SpareSlot() = default;
  SpareSlot(const SpareSlot&) = delete;
  SpareSlot& operator=(const SpareSlot&) = delete;
  ~SpareSlot() { SpareCore::release_all(spare); }  // at thread exit
};
thread_local SpareSlot spare_slot;
}  // namespace

void* take_item_storage() {
  SpareCore::Spare*& chain = spare_slot.spare;
  if (chain != nullptr) return SpareCore::take_storage(chain);
  return ::operator new(SpareCore::kSpareBytes);
}

void give_back_item_storage(void* storage) noexcept {
  SpareCore::push_storage(spare_slot.spare, storage);  // it came from this chain or is one more
}

SpareCore::Spare** spare_slot_if_empty() noexcept {
  return spare_slot.spare == nullptr ? &spare_slot.spare : nullptr;
}

}  // namespace turnstile::detail
