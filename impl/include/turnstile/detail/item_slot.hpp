// turnstile/detail/item_slot.hpp: each thread's slab of try_post item storage
// ([LANE-7.9], item_slab.hpp).
//
// StateLane::try_post builds an item whose callable fits (the whole item in
// kMaxItemSlotBytes) in a slot of this thread's slab: the thread's items sit
// side by side, in whole cache lines, in the order it made them. The item's
// complete() (on whichever carrier ran it) or its refusal releases the slot; a
// slab whose thread moved on and whose slots are all released goes back to
// the process's pool of free slabs (at most kFreeSlabBytes of them), where the
// next thread that fills its slab takes it.
//
// Thread safety: take_item_slot() uses the calling thread's slab only;
// release_item_slot() may be called from any thread.
#pragma once

#include <cstddef>

#include "turnstile/detail/item_slab.hpp"
#include "turnstile/detail/spare_slot.hpp"
#include "turnstile/sync.hpp"

namespace turnstile::detail {

// A slab: a page, aligned to its size.
struct ItemSlabStorage {
  static constexpr std::size_t kSlabBytes = 4096;
  static constexpr std::size_t kLine = 64;  // a cache line: no two items share one
  static void* allocate();
  static void deallocate(void* slab) noexcept;
};
using ItemSlabs = BasicItemSlabs<StdSync, ItemSlabStorage>;

// The largest item built in a slab (a callable of up to about 450 bytes);
// larger ones are allocated on their own.
inline constexpr std::size_t kMaxItemSlotBytes = 512;
static_assert(kMaxItemSlotBytes <= ItemSlabs::kMaxSlotBytes);
// The free slabs the process keeps [LANE-7.9]: the depot's bound
// (TURNSTILE_SPARE_DEPOT_BYTES, default 2 MiB, so 512 slabs; 0 keeps none).
inline constexpr std::size_t kFreeSlabBytes = kDepotBytes;

// The process's pool of free slabs: constructed on first use, never destroyed
// (a thread exiting during static destruction still finds it).
ItemSlabs& item_slabs() noexcept;

// Storage for an item of `bytes` (at most kMaxItemSlotBytes, alignment at most
// ItemSlabs::kLine) in this thread's slab.
void* take_item_slot(std::size_t bytes);
// The slot of an item destroyed (completed or refused): from any thread.
void release_item_slot(void* slot) noexcept;

}  // namespace turnstile::detail
