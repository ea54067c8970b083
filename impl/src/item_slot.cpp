// item_slot.cpp: each thread's slab of try_post item storage ([LANE-7.9]).
#include "turnstile/detail/item_slot.hpp"

#include <new>

#include "turnstile/detail/never_destroyed.hpp"

namespace turnstile::detail {

void* ItemSlabStorage::allocate() { return ::operator new(kSlabBytes, std::align_val_t{kSlabBytes}); }

void ItemSlabStorage::deallocate(void* slab) noexcept {
  ::operator delete(slab, std::align_val_t{kSlabBytes});
}

ItemSlabs& item_slabs() noexcept {
  static NeverDestroyed<ItemSlabs> holder([] { return ItemSlabs(kFreeSlabBytes / ItemSlabs::kSlabBytes); });
  return holder.value;
}

namespace {
// This thread's slab. Trivially destructible, so it stays usable while the
// thread exits: the sealer below gives its slab up at exit, and an item made
// later still (by a thread_local's destructor) gets a slab that is never
// sealed, so never reused (the pool's storage is never freed then either).
thread_local ItemSlabs::Cursor tl_cursor;
struct Sealer {
  bool armed = false;  // set by this thread's first item: its destructor is then registered
  Sealer() = default;
  Sealer(const Sealer&) = delete;
  Sealer& operator=(const Sealer&) = delete;
  ~Sealer() { tl_cursor.seal(item_slabs()); }  // [SLAB-I1] at thread exit
};
thread_local Sealer tl_sealer;
}  // namespace

void* take_item_slot(std::size_t bytes) {
  if (!tl_sealer.armed) [[unlikely]] tl_sealer.armed = true;
  return tl_cursor.take(item_slabs(), bytes);
}

void release_item_slot(void* slot) noexcept { item_slabs().release(slot); }

}  // namespace turnstile::detail
