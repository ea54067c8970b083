// impl/bench/alloc_counter.cpp: replaced global operator new/delete that count
// allocations per thread (see bench_support.hpp). Linked into each benchmark
// binary, never into the library.
#include "bench_support.hpp"

#include <cstdlib>
#include <new>

namespace {
// Constant-initialised and trivially destructible: safe to touch from operator
// new at any point of a thread's life, including before main and at exit.
thread_local std::uint64_t tls_allocations = 0;

void* counted_alloc(std::size_t n) noexcept {
  ++tls_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* counted_aligned_alloc(std::size_t n, std::align_val_t al) noexcept {
  ++tls_allocations;
  void* p = nullptr;
  std::size_t a = static_cast<std::size_t>(al);
  if (a < sizeof(void*)) a = sizeof(void*);
  return posix_memalign(&p, a, n == 0 ? 1 : n) == 0 ? p : nullptr;
}
}  // namespace

namespace turnstile_bench {
std::uint64_t thread_allocations() noexcept { return tls_allocations; }
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
