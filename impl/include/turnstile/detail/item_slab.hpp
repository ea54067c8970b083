// turnstile/detail/item_slab.hpp: the slabs a thread's try_post items are
// built in, one algorithm behind detail::item_slabs() (product: StdSync,
// item_slab.cpp) and model/item_slab_model.cpp (RelacySync).
//
// Why (issue 28, impl/bench/README.md "try_post items in slabs"): an item built
// in a spare of its own (a 128-byte block, recycled one by one through chains,
// [LANE-I6]) cost its producer a cache miss to find the next spare (the chain's
// link lives in storage the drain just wrote, on another core) and spread a
// flood over as many scattered blocks as items. A slab is kSlabBytes of
// storage, aligned to its size, that one thread fills with its items front to
// back, each in whole cache lines; the drain only reads an item and counts it
// released. Items then sit side by side in the order they were made, nothing
// is read to find the next slot, and storage goes back a slab at a time.
//
// A slab is a header line, then slots. Its owner (the thread whose Cursor
// holds it) takes slots front to back, counting them privately; each slot is
// released once by whoever is done with its item (release(), from the slot's
// address: a slab is aligned to its size). When the owner moves on (the slab
// is full, or the thread exits: seal()) it gives up its claim. The slab is
// free once it is sealed and every slot it handed out is released; whichever
// of those comes last puts it on the pool's free list, or frees it when the
// list is full. A Cursor whose slab is full takes a free slab, or allocates.
//
// Invariants (cited where maintained):
//   [SLAB-I1] live_ counts the claims on a slab: kOwnerClaim while its owner
//             takes slots, minus one per released slot, minus what the owner
//             did not take when it seals (kOwnerClaim - taken). It reaches zero
//             exactly once, at the last of the seal and the releases, and only
//             that call recycles the slab. Every decrement is acq_rel: each
//             release publishes its item's last reads and writes of the slot,
//             and the last decrement acquires all of them before the slab is
//             reused.
//   [SLAB-I2] A slot is handed out once per life of its slab: only the owner
//             takes slots, past those it took, and a slab is reused only after
//             [SLAB-I1] reached zero, through the free list, under mu_, to one
//             thread.
//   [SLAB-I3] Bounded: the free list keeps at most max_free slabs; a slab
//             that does not fit is freed, after mu_ is released. mu_ is held
//             for a few pointer moves only: nothing is allocated or freed
//             under it.
//
// Thread safety: a Cursor is its thread's alone; release() and the pool's
// members may be called from any thread at once.
// Ordering: an item's construction (owner) happens before its run (the
// lane's queue, under the lane's mutex); its run and destruction happen before
// its release's decrement, which [SLAB-I1] orders before the slab's reuse.
// Where a continuation resumes: nothing here suspends or resumes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

#include "turnstile/detail/thread_annotations.hpp"

namespace turnstile::detail {

// Storage: allocate() returns kSlabBytes aligned to kSlabBytes, deallocate()
// frees it (the product's is ::operator new with that alignment; the model's
// is tracked by Relacy and builds its slots' checked payloads); kLine is the
// slot granularity and the header's size (the product's a cache line; the
// model's larger, as Relacy's atomics are).
template <class Sync, class Storage>
class BasicItemSlabs {
 private:
  struct Slab;

 public:
  static constexpr std::size_t kSlabBytes = Storage::kSlabBytes;
  static constexpr std::size_t kLine = Storage::kLine;  // slots are whole lines, the first is the header
  static constexpr std::size_t kMaxSlotBytes = kSlabBytes - kLine;
  static_assert((kSlabBytes & (kSlabBytes - 1)) == 0 && (kLine & (kLine - 1)) == 0 && kSlabBytes >= 2 * kLine);

  explicit BasicItemSlabs(std::size_t max_free) : max_free_(max_free) {}
  BasicItemSlabs(const BasicItemSlabs&) = delete;
  BasicItemSlabs& operator=(const BasicItemSlabs&) = delete;
  ~BasicItemSlabs() { release_free_slabs(); }  // no other thread uses a pool being destroyed

  // How many free slabs the pool keeps now.
  std::size_t free_slabs() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    return free_count_.load();
  }

  // Frees every free slab the pool keeps (slabs in use are untouched): gives
  // the memory back, or lets a test start from an empty pool.
  void release_free_slabs() noexcept {
    Slab* slab = nullptr;
    {
      BasicLockGuard<typename Sync::mutex> lock(mu_);
      slab = free_.load();
      free_.store(nullptr);
      free_count_.store(0);
    }
    while (slab != nullptr) {  // [SLAB-I3] outside the lock
      Slab* next = slab->next_.load();
      discard(slab);
      slab = next;
    }
  }

  // A thread's slab in use: its owner takes slots from it front to back.
  class Cursor {
   public:
    Cursor() = default;
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;
    ~Cursor() = default;  // the owner calls seal() first (at thread exit)

    // Storage for an item of `bytes` (at most kMaxSlotBytes), in whole lines
    // of this thread's slab; a new slab (free or allocated) when it has no
    // room. Throws what Storage::allocate throws; the cursor is then empty.
    void* take(BasicItemSlabs& pool, std::size_t bytes) {
      if (bytes > kMaxSlotBytes) throw std::length_error("BasicItemSlabs: an item larger than a slab's slots");
      const std::size_t need = (bytes + kLine - 1) & ~(kLine - 1);
      if (slab_ == nullptr || used_ + need > kSlabBytes) {
        seal(pool);
        slab_ = pool.fresh();
        used_ = kLine;
      }
      void* slot = reinterpret_cast<char*>(slab_) + used_;
      used_ += need;  // [SLAB-I2] past every slot handed out of this slab
      ++taken_;
      return slot;
    }

    // Gives up this thread's claim on its slab ([SLAB-I1]); the slab is free
    // once its released slots catch up.
    void seal(BasicItemSlabs& pool) noexcept {
      if (slab_ == nullptr) return;
      const long unclaimed = kOwnerClaim - taken_;
      if (slab_->live_.fetch_sub(unclaimed, std::memory_order_acq_rel) == unclaimed)
        pool.recycle(slab_);  // [SLAB-I1] every slot already released
      slab_ = nullptr;
      taken_ = 0;
    }

   private:
    Slab* slab_ = nullptr;
    std::size_t used_ = 0;
    long taken_ = 0;  // slots handed out of slab_
  };

  // Releases a slot taken from some Cursor of this pool; its item is
  // destroyed and nothing touches the slot after this call.
  void release(void* slot) noexcept {
    // The slab's header: the slot's address less its offset in the slab.
    char* const at = static_cast<char*>(slot);
    const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(at) & (kSlabBytes - 1);
    auto* slab = reinterpret_cast<Slab*>(at - offset);
    if (slab->live_.fetch_sub(1, std::memory_order_acq_rel) == 1)  // [SLAB-I1]
      recycle(slab);  // sealed, and this was its last slot
  }

 private:
  // The owner's claim: more than any slab has slots, so live_ stays positive
  // while the owner takes from it.
  static constexpr long kOwnerClaim = static_cast<long>(kSlabBytes);

  // The header, in the slab's first line.
  struct Slab {
    typename Sync::template atomic<long> live_{0};
    typename Sync::template var<Slab*> next_{};  // on the free list, under mu_
  };
  static_assert(sizeof(Slab) <= kLine);

  // A slab for a Cursor: the newest free one, or new storage.
  Slab* fresh() {
    Slab* slab = take_free();
    if (slab == nullptr) return claimed(::new (Storage::allocate()) Slab);
    return claimed(slab);
  }

  Slab* take_free() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    Slab* slab = free_.load();
    if (slab != nullptr) {  // [SLAB-I2] off the list, to this thread alone
      free_.store(slab->next_.load());
      free_count_.store(free_count_.load() - 1);
    }
    return slab;
  }

  static Slab* claimed(Slab* slab) noexcept {
    // Relaxed: the slab is this thread's alone until its first slot is queued
    // (the lane's mutex publishes it to the drain).
    slab->live_.store(kOwnerClaim, std::memory_order_relaxed);
    return slab;
  }

  void recycle(Slab* slab) noexcept {
    {
      BasicLockGuard<typename Sync::mutex> lock(mu_);
      const std::size_t count = free_count_.load();
      if (count < max_free_) {  // [SLAB-I3]
        slab->next_.store(free_.load());
        free_.store(slab);
        free_count_.store(count + 1);
        return;
      }
    }
    discard(slab);  // [SLAB-I3] outside the lock
  }

  static void discard(Slab* slab) noexcept {
    slab->~Slab();
    Storage::deallocate(slab);
  }

  const std::size_t max_free_;
  typename Sync::mutex mu_;
  typename Sync::template var<Slab*> free_ TURNSTILE_GUARDED_BY(mu_){};
  typename Sync::template var<std::size_t> free_count_ TURNSTILE_GUARDED_BY(mu_){};
};

}  // namespace turnstile::detail
