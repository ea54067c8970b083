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
// thread exits; the sealer below gives its slab up at exit.
thread_local ItemSlabs::Cursor tl_cursor;
// Set by the sealer's destructor (trivially destructible, so readable after
// it): an item made later still, by another thread_local's destructor, gets a
// slot whose slab is sealed at once, so nothing is left claimed [SLAB-I1].
thread_local bool tl_exiting = false;
struct Sealer {
  bool armed = false;  // set by this thread's first item: its destructor is then registered
  Sealer() = default;
  Sealer(const Sealer&) = delete;
  Sealer& operator=(const Sealer&) = delete;
  ~Sealer() {
    tl_exiting = true;
    tl_cursor.seal(item_slabs());  // [SLAB-I1] at thread exit
  }
};
thread_local Sealer tl_sealer;
}  // namespace

void* take_item_slot(std::size_t bytes) {
  if (tl_exiting) [[unlikely]] {  // the sealer has run: take, then give the slab up at once
    void* slot = tl_cursor.take(item_slabs(), bytes);
    tl_cursor.seal(item_slabs());  // the slot just taken holds a claim: the slab is not recycled
    // clang-analyzer false positive: it cannot see [SLAB-I1]'s count, so it
    // takes the seal's recycle path, which needs every slot released.
    // NOLINTNEXTLINE(clang-analyzer-cplusplus.NewDelete)
    return slot;
  }
  if (!tl_sealer.armed) [[unlikely]] tl_sealer.armed = true;
  return tl_cursor.take(item_slabs(), bytes);
}

void release_item_slot(void* slot) noexcept { item_slabs().release(slot); }

}  // namespace turnstile::detail
