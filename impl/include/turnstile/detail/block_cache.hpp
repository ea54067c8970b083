// turnstile/detail/block_cache.hpp: where coroutine frames, call records,
// serial chain links, lane run() records and an activation's strand, state
// snapshot and watchdog timer entry come from: a cache of small blocks per
// thread and size class, handed between threads in whole chains through one
// depot per class ([RT-1.7]).
//
// Why (issue 28, impl/bench/README.md "The block cache"): a call's records and
// frames are allocated on the caller's carrier and freed on whichever carrier
// ran the turn. With glibc, a free of another thread's block takes that
// thread's arena lock: `perf` of 1,000 activations created and called on two
// carriers put 27% of the time in free(), 13.6% waiting for arena locks and
// 19% in the kernel's futex. Here a block freed on any thread goes onto that
// thread's cache; a full cache moves to the class's depot in one lock; a
// thread whose cache ran dry takes a chain back in one lock. No block is
// freed and allocated again while the process stays within the bounds.
//
// Guarantees
//  - allocate_block(n) returns storage of at least n bytes aligned for any
//    fundamental type (as ::operator new(n)); free_block(p, n) takes it back,
//    with the same n, on any thread.
//  - Size classes 64, 128, 256, 512 and 1024 bytes; a larger request is
//    ::operator new / ::operator delete.
//  - Bounded: a thread keeps at most kBlockCacheMax blocks per class (a full
//    cache goes to the depot whole); each class's depot keeps at most
//    kBlockDepotBytes; past that a chain is freed. A thread's caches go to the
//    depots when it exits.
//  - Under AddressSanitizer (the asan-ubsan presets) every call goes straight
//    to ::operator new / ::operator delete, so a use of a freed frame is still
//    reported at once. TURNSTILE_BLOCK_CACHE=off in the environment does the
//    same at run time (for valgrind, or to measure without the caches).
//
// Thread safety: any thread may call both functions at once; a thread's
// caches are touched by that thread only, the depots are BasicSpareDepot
// (spare_depot.hpp, [DEPOT-I1]..[DEPOT-I3], model/spare_depot_model.cpp):
// a chain given by one thread and taken by another is ordered by the depot's
// mutex.
// Where a continuation resumes: nothing here suspends or resumes.
#pragma once

#include <cstddef>
#include <new>

namespace turnstile::detail {

inline constexpr std::size_t kBlockClasses = 5;        // 64 << 0 .. 64 << 4
inline constexpr std::size_t kLargestCachedBlock = 1024;
inline constexpr std::size_t kBlockCacheMax = 64;       // blocks per thread and class
inline constexpr std::size_t kBlockDepotBytes = 1048576u;  // 1 MiB per class

void* allocate_block(std::size_t size);
void free_block(void* block, std::size_t size) noexcept;

// A standard allocator over allocate_block/free_block, for records made with
// std::allocate_shared (a call's record, a lane run()'s record, [RT-1.7]). Types aligned beyond
// __STDCPP_DEFAULT_NEW_ALIGNMENT__ use the aligned global operators instead.
template <class T>
struct BlockAllocator {
  using value_type = T;
  BlockAllocator() noexcept = default;
  template <class U>
  // cppcheck-suppress noExplicitConstructor ; rebinding: std::allocate_shared converts implicitly
  BlockAllocator(const BlockAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding
  T* allocate(std::size_t n) {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)}));
    } else {
      return static_cast<T*>(allocate_block(n * sizeof(T)));
    }
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if constexpr (alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
      ::operator delete(p, n * sizeof(T), std::align_val_t{alignof(T)});
    } else {
      free_block(p, n * sizeof(T));
    }
  }
  template <class U>
  bool operator==(const BlockAllocator<U>&) const noexcept { return true; }
};

}  // namespace turnstile::detail
