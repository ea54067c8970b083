// block_cache.cpp: each thread's caches of small blocks, and the per-class
// depots they exchange chains through ([RT-1.7], detail/block_cache.hpp).
#include "turnstile/detail/block_cache.hpp"

#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

#include "turnstile/detail/lane_core.hpp"
#include "turnstile/detail/never_destroyed.hpp"
#include "turnstile/detail/spare_depot.hpp"
#include "turnstile/sync.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TURNSTILE_BLOCK_CACHE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TURNSTILE_BLOCK_CACHE_OFF 1
#endif
#endif

namespace turnstile::detail {

#ifndef TURNSTILE_BLOCK_CACHE_OFF
namespace {

// A free block is a BasicLaneCore spare (a chain node) built in its storage:
// the chain type the depot is modelled with.
using Chains = BasicLaneCore<StdSync>;
using Depot = Chains::SpareDepot;

constexpr std::size_t kSmallestBlock = kLargestCachedBlock >> (kBlockClasses - 1);  // 64
static_assert(kSmallestBlock >= sizeof(Chains::Spare));

// The class of a request of `size` bytes (size <= kLargestCachedBlock).
constexpr std::size_t class_of(std::size_t size) noexcept {
  std::size_t c = 0;
  while ((kSmallestBlock << c) < size) ++c;
  return c;
}
constexpr std::size_t class_bytes(std::size_t c) noexcept { return kSmallestBlock << c; }

// The depot of one class: built on first use, never destroyed (a thread that
// exits during static destruction still gives its caches back).
Depot& depot_of(std::size_t c) noexcept {
  static_assert(kBlockClasses == 5, "one Depot per class in the initialiser below");
  static NeverDestroyed<std::array<Depot, kBlockClasses>> holder([] {
    return std::array<Depot, kBlockClasses>{
        Depot(kBlockDepotBytes / class_bytes(0)), Depot(kBlockDepotBytes / class_bytes(1)),
        Depot(kBlockDepotBytes / class_bytes(2)), Depot(kBlockDepotBytes / class_bytes(3)),
        Depot(kBlockDepotBytes / class_bytes(4))};
  });
  return holder.value[c];
}

// This thread's free blocks of one class: a chain and its length.
struct Cache {
  Chains::Spare* head = nullptr;
  std::size_t count = 0;
};

struct ThreadCaches {
  std::array<Cache, kBlockClasses> caches{};
  bool gone = false;  // destroyed at thread exit: later frees go to ::operator delete
  ThreadCaches() = default;
  ThreadCaches(const ThreadCaches&) = delete;
  ThreadCaches& operator=(const ThreadCaches&) = delete;
  ~ThreadCaches() {  // at thread exit: the chains go to the depots [DEPOT-I1]
    for (std::size_t c = 0; c < kBlockClasses; ++c) {
      depot_of(c).give(caches[c].head, caches[c].count);
      caches[c] = Cache{};
    }
    gone = true;
  }
};
thread_local ThreadCaches tl_caches;

// TURNSTILE_BLOCK_CACHE=off in the environment turns the caches off (for a
// heap checker such as valgrind, or to measure without them in the same
// binary). Read once, by the first allocation or free of any thread (a
// function-local static: its initialisation is thread-safe, and every later
// call reads it after its guard). A block is always allocated at its class's
// full size, so a block's fate never depends on when the setting was read.
bool cache_on() noexcept {
  static const bool on = [] {
    const char* v = std::getenv("TURNSTILE_BLOCK_CACHE");  // NOLINT(concurrency-mt-unsafe): once
    return v == nullptr || std::strcmp(v, "off") != 0;
  }();
  return on;
}

}  // namespace
#endif  // TURNSTILE_BLOCK_CACHE_OFF: under ASan every block is ::operator new's

void* allocate_block(std::size_t size) {
#ifdef TURNSTILE_BLOCK_CACHE_OFF
  return ::operator new(size);
#else
  if (size > kLargestCachedBlock) return ::operator new(size);
  const std::size_t c = class_of(size);
  // Off, or this thread's caches already destroyed (a thread_local destroyed
  // after ours, or a static destructor, starting a task): full size, uncached.
  if (!cache_on() || tl_caches.gone) [[unlikely]] return ::operator new(class_bytes(c));
  Cache& cache = tl_caches.caches[c];
  if (cache.head == nullptr) cache.head = depot_of(c).take(&cache.count);  // [DEPOT-I1] ours now
  if (cache.head == nullptr) return ::operator new(class_bytes(c));
  --cache.count;
  return Chains::take_storage(cache.head);
#endif
}

void free_block(void* block, std::size_t size) noexcept {
#ifdef TURNSTILE_BLOCK_CACHE_OFF
  ::operator delete(block);
  (void)size;
#else
  if (block == nullptr) return;
  if (size > kLargestCachedBlock) {
    ::operator delete(block);
    return;
  }
  if (!cache_on() || tl_caches.gone) [[unlikely]] {  // off, or a thread_local destroyed after ours
    ::operator delete(block);
    return;
  }
  const std::size_t c = class_of(size);
  Cache& cache = tl_caches.caches[c];
  Chains::push_storage(cache.head, block);
  if (++cache.count <= kBlockCacheMax) return;
  depot_of(c).give(cache.head, cache.count);  // whole; freed when it does not fit
  cache = Cache{};
#endif
}

}  // namespace turnstile::detail
