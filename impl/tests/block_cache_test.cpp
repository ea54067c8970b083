// The block cache behind coroutine frames and call records
// (detail/block_cache.hpp, [RT-1.7]): a block goes back to the cache of the
// thread that frees it; a full cache moves whole to its class's depot, where a
// thread whose cache ran dry takes it. Threads here run one after another
// (std::thread + join): no window needs holding, and nothing sleeps.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "turnstile/detail/block_cache.hpp"

namespace {

using namespace turnstile;
using namespace turnstile::detail;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kBlockCacheAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kBlockCacheAsan = true;
#else
constexpr bool kBlockCacheAsan = false;
#endif
#else
constexpr bool kBlockCacheAsan = false;
#endif
// Off under ASan, or with TURNSTILE_BLOCK_CACHE=off ([RT-1.7]).
bool block_cache_off() {
  const char* v = std::getenv("TURNSTILE_BLOCK_CACHE");  // NOLINT(concurrency-mt-unsafe)
  return kBlockCacheAsan || (v != nullptr && std::string_view(v) == "off");
}

// spec: [RT-1.7]
TEST(BlockCache, ABlockFreedOnAThreadIsThatThreadsNextBlockOfItsClass) {
  if (block_cache_off()) GTEST_SKIP() << "the cache is off (AddressSanitizer or TURNSTILE_BLOCK_CACHE=off) [RT-1.7]";
  std::thread([] {  // a fresh thread: its caches start empty
    void* a = allocate_block(200);
    free_block(a, 200);
    void* b = allocate_block(129);  // same class (256 bytes)
    EXPECT_EQ(b, a);
    free_block(b, 129);
  }).join();
}

// spec: [RT-1.7]
TEST(BlockCache, AFullCacheMovesToTheDepotAndAnotherThreadTakesItBack) {
  if (block_cache_off()) GTEST_SKIP() << "the cache is off (AddressSanitizer or TURNSTILE_BLOCK_CACHE=off) [RT-1.7]";
  constexpr std::size_t kSize = 1000;  // the 1,024-byte class
  std::set<std::uintptr_t> freed_by_producer;
  std::thread([&] {
    // One more than a cache keeps: the 65th free moves the whole cache.
    std::vector<void*> blocks;
    for (std::size_t i = 0; i < kBlockCacheMax + 1; ++i) blocks.push_back(allocate_block(kSize));
    for (void* p : blocks) {
      freed_by_producer.insert(reinterpret_cast<std::uintptr_t>(p));
      free_block(p, kSize);
    }
  }).join();
  std::thread([&] {
    // A fresh thread's cache is empty: it takes the newest chain of the
    // depot, the one the first thread gave, and uses it whole before it
    // allocates.
    std::vector<void*> got;
    for (std::size_t i = 0; i < kBlockCacheMax + 1; ++i) got.push_back(allocate_block(kSize));
    std::size_t reused = 0;
    for (void* p : got) reused += freed_by_producer.count(reinterpret_cast<std::uintptr_t>(p));
    EXPECT_EQ(reused, kBlockCacheMax + 1);
    for (void* p : got) free_block(p, kSize);
  }).join();
}

// spec: [RT-1.7]
TEST(BlockCache, ALargerRequestAndANullFreeBypassTheCache) {
  void* big = allocate_block(kLargestCachedBlock + 1);
  ASSERT_NE(big, nullptr);
  static_cast<char*>(big)[kLargestCachedBlock] = 1;  // its whole size is usable
  free_block(big, kLargestCachedBlock + 1);
  free_block(nullptr, 64);  // ignored
}

// Records made with the cache's allocator (a call's record is) are ordinary
// shared objects: destroyed once, on whichever thread drops the last owner.
struct CachedRecord {
  int* destroyed;
  explicit CachedRecord(int* d) : destroyed(d) {}
  ~CachedRecord() { ++*destroyed; }
};
// spec: [RT-1.7]
TEST(BlockCache, ASharedRecordMadeWithTheBlockAllocatorIsDestroyedOnceOnAnotherThread) {
  int destroyed = 0;
  auto record = std::allocate_shared<CachedRecord>(BlockAllocator<CachedRecord>{}, &destroyed);
  std::thread([r = std::move(record)]() mutable { r.reset(); }).join();
  EXPECT_EQ(destroyed, 1);
}

// Frames: a task whose frame was freed on another thread runs again in
// recycled storage, and nothing it computes changes.
Task<int> cached_add(int a, int b) { co_return a + b; }
// spec: [RT-1.7]
TEST(BlockCache, TasksStartedOnOneCarrierAndFinishedOnAnotherKeepTheirResults) {
  ThreadPool pool(2);
  long sum = 0;
  for (int round = 0; round < 200; ++round) {
    sum += sync_wait(pool, cached_add(round, 1));
  }
  EXPECT_EQ(sum, 200L * 199 / 2 + 200);
}

}  // namespace
