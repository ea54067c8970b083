// impl/bench/alloc_counter.cpp: replaced global operator new/delete that count
// allocations per thread (see bench_support.hpp). Linked into each benchmark
// binary, never into the library.
#include "bench_support.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <new>

namespace {
// Per-thread counts, summed by process_allocations(). A slot is claimed by a
// thread on its first allocation and never given back (a thread that ends keeps
// its count in the total); slots past the table's end share the last one.
// Only the owning thread writes its slot (a relaxed load and store, no
// read-modify-write, so counting costs about what a plain increment does);
// readers sum them with relaxed loads.
constexpr int kSlots = 256;
std::array<std::atomic<std::uint64_t>, kSlots> slots{};
std::atomic<int> slots_used{0};

// Constant-initialised and trivially destructible: safe to touch from operator
// new at any point of a thread's life, including before main and at exit.
thread_local std::uint64_t tls_allocations = 0;
thread_local std::atomic<std::uint64_t>* tls_slot = nullptr;

void count() noexcept {
  ++tls_allocations;
  if (tls_slot == nullptr) {
    const int i = slots_used.fetch_add(1, std::memory_order_relaxed);
    tls_slot = &slots[static_cast<std::size_t>(i < kSlots ? i : kSlots - 1)];
    if (i >= kSlots - 1) {  // shared: a read-modify-write from here on
      tls_slot->fetch_add(1, std::memory_order_relaxed);
      return;
    }
  } else if (tls_slot == &slots[kSlots - 1]) {
    tls_slot->fetch_add(1, std::memory_order_relaxed);
    return;
  }
  tls_slot->store(tls_slot->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

void* counted_alloc(std::size_t n) noexcept {
  count();
  return std::malloc(n == 0 ? 1 : n);
}
void* counted_aligned_alloc(std::size_t n, std::align_val_t al) noexcept {
  count();
  void* p = nullptr;
  std::size_t a = static_cast<std::size_t>(al);
  if (a < sizeof(void*)) a = sizeof(void*);
  return posix_memalign(&p, a, n == 0 ? 1 : n) == 0 ? p : nullptr;
}
}  // namespace

namespace turnstile_bench {
std::uint64_t thread_allocations() noexcept { return tls_allocations; }
std::uint64_t process_allocations() noexcept {
  std::uint64_t total = 0;
  for (const auto& s : slots) total += s.load(std::memory_order_relaxed);
  return total;
}
}  // namespace turnstile_bench

void* operator new(std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned_alloc(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned_alloc(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned_alloc(n, a);
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
