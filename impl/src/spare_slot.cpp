// spare_slot.cpp: each thread's spare slot ([LANE-I6]).
#include "turnstile/detail/spare_slot.hpp"

#include <new>
#include <utility>

namespace turnstile::detail {

namespace {
// Filled by the calling thread's accepted submissions, emptied by its next
// item; touched by its own thread only, so no synchronisation: the spare's
// hand-over from the drain happens under the lane's mutex ([LANE-I6]).
struct SpareSlot {
  SpareCore::Spare* spare = nullptr;
  SpareSlot() = default;
  SpareSlot(const SpareSlot&) = delete;
  SpareSlot& operator=(const SpareSlot&) = delete;
  ~SpareSlot() { SpareCore::release(std::exchange(spare, nullptr)); }  // at thread exit
};
thread_local SpareSlot spare_slot;
}  // namespace

void* take_item_storage() {
  SpareCore::Spare* spare = std::exchange(spare_slot.spare, nullptr);
  if (spare != nullptr) return SpareCore::storage_of(spare);
  return ::operator new(SpareCore::kSpareBytes);
}

void give_back_item_storage(void* storage) noexcept {
  if (spare_slot.spare == nullptr) {
    spare_slot.spare = SpareCore::make_spare(storage);
  } else {
    ::operator delete(storage);
  }
}

SpareCore::Spare** spare_slot_if_empty() noexcept {
  return spare_slot.spare == nullptr ? &spare_slot.spare : nullptr;
}

}  // namespace turnstile::detail
