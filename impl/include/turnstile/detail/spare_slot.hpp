// turnstile/detail/spare_slot.hpp: each thread's spare, the storage a lane item
// is built in when recycled storage is at hand ([LANE-I6], lane_core.hpp).
//
// A lane's drain keeps the storage of the items it completes on the lane's
// spare list; a submission on some thread whose slot is empty takes the whole
// list, under the lock that links its item, into that thread's slot; the
// thread's next items are built there. Storage allocated on a producer and
// freed on a carrier defeats the allocator's per-thread caches; a spare goes
// round between them instead.
// Used by Strand::post, every step (StateLane::try_post builds its items in
// slabs instead: item_slot.hpp, [LANE-7.9]).
//
// Storage a lane's list has no room for goes to the process's depot
// (spare_depot(), [DEPOT-I1]..[DEPOT-I3]); a thread whose slot is still empty
// after its submission's refill takes a chain from it. So a flood's storage, allocated by a
// producer and freed by a carrier, is used again by the next flood instead of
// being given back to the kernel and faulted in again.
//
// Thread safety: each function but spare_depot() touches the calling thread's
// slot only; the depot is thread-safe.
// A slot holds a chain of spares: one lane's list (at most 32 plus a step's
// items) or one depot chain (at most kMaxDepotChain), plus what its own
// refused items gave back, plus
// the last storage of each drain step it ran since its length was last looked
// at (bound_spare_slot()); freed when its thread exits.
#pragma once

#include <cstddef>

#include "turnstile/detail/lane_core.hpp"
#include "turnstile/sync.hpp"

namespace turnstile::detail {

using SpareCore = BasicLaneCore<StdSync>;

// The process's depot [LANE-7.8]: at most kDepotBytes of item storage
// (TURNSTILE_SPARE_DEPOT_BYTES at build time, default 2 MiB; 0 turns it off),
// in at most SpareCore::SpareDepot::kMaxChains chains. Constructed on first use,
// never destroyed: a thread exiting, or a lane destroyed, during static
// destruction still finds it. Every Strand core is given it.
#ifndef TURNSTILE_SPARE_DEPOT_BYTES
#define TURNSTILE_SPARE_DEPOT_BYTES 2097152u  // 2 MiB
#endif
inline constexpr std::size_t kDepotBytes = TURNSTILE_SPARE_DEPOT_BYTES;
SpareCore::SpareDepot& spare_depot() noexcept;

// LaneCore::kSpareBytes of storage, aligned for any fundamental type: this
// thread's spare when it has one, else a new allocation.
void* take_item_storage();
// After a submission that offered this thread's empty chain as the refill:
// when the lane's list was empty too, a chain from the depot [DEPOT-I1]. The
// lane's own list comes first: it costs no second lock and its storage was
// freed most recently.
void refill_from_depot_if_empty() noexcept;
// Storage whose item was refused or never built: back on this thread's chain.
void give_back_item_storage(void* storage) noexcept;
// This thread's chain, for BasicLaneCore::submit's refill; null when it is
// not empty.
SpareCore::Spare** spare_slot_if_empty() noexcept;
// This thread's chain, for BasicLaneCore::drain's leftover: a drain step's last
// storage goes onto it. Call bound_spare_slot() after the step.
SpareCore::Spare** spare_slot() noexcept;
// Keeps this thread's chain bounded [LANE-7.8]: after kSlotCheckSteps drain
// steps, a chain longer than kSlotMaxSpares goes to the depot whole. So a
// carrier that drains many lanes of one item each (every Activation's strand
// step) hands their storage back in chains, instead of freeing on the carrier
// what another thread allocated.
inline constexpr std::size_t kSlotCheckSteps = 64;
inline constexpr std::size_t kSlotMaxSpares = 64;
// The longest chain a thread gives the depot: a long chain goes in pieces, so
// no chain in the depot, and no refill a thread takes, is longer than this
// (a drain's own chains are at most a step's items, a lane's list at most 32
// plus a step's).
inline constexpr std::size_t kMaxDepotChain = 128;
void bound_spare_slot() noexcept;

}  // namespace turnstile::detail
