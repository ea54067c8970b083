// turnstile/detail/spare_slot.hpp: each thread's spare, the storage a lane item
// is built in when recycled storage is at hand ([LANE-I6], lane_core.hpp).
//
// A lane's drain keeps the storage of the items it completes on the lane's
// spare list; a submission on some thread whose slot is empty takes the whole
// list, under the lock that links its item, into that thread's slot; the
// thread's next items are built there. Storage allocated on a producer and
// freed on a carrier defeats the allocator's per-thread caches; a spare goes
// round between them instead.
// Used by StateLane::try_post (items of callables that fit) and Strand::post
// (every step), for every BasicLaneCore<StdSync>.
//
// Thread safety: each function touches the calling thread's slot only.
// A slot holds a chain of spares (at most one lane's list, 32, plus what its
// own refused items gave back), freed when its thread exits.
#pragma once

#include "turnstile/detail/lane_core.hpp"
#include "turnstile/sync.hpp"

namespace turnstile::detail {

using SpareCore = BasicLaneCore<StdSync>;

// LaneCore::kSpareBytes of storage, aligned for any fundamental type: this
// thread's spare when it has one, else a new allocation.
void* take_item_storage();
// Storage whose item was refused or never built: back on this thread's chain.
void give_back_item_storage(void* storage) noexcept;
// This thread's chain, for BasicLaneCore::submit's refill and drain's
// leftover; null when it is not empty.
SpareCore::Spare** spare_slot_if_empty() noexcept;

}  // namespace turnstile::detail
