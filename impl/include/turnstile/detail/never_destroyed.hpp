// turnstile/detail/never_destroyed.hpp: a process-wide object built on first
// use and never destroyed, so a thread that exits, or an object destroyed,
// during static destruction still finds it (the spare depot, spare_slot.cpp;
// the block caches' depots, block_cache.cpp).
//
// NeverDestroyed<T> holds `value`, built from `make()` (a prvalue, so T needs
// no copy or move); its destructor does not destroy `value`. Use it as a
// function-local static: its construction is then thread-safe.
#pragma once

namespace turnstile::detail {

template <class T>
union NeverDestroyed {
  template <class Make>
  // NOLINTNEXTLINE(clang-analyzer-cplusplus.NewDeleteLeaks): what `value` owns is kept for the process, by design
  explicit NeverDestroyed(Make make) : value(make()) {}
  ~NeverDestroyed() {}  // NOLINT(modernize-use-equals-default): must not destroy `value`
  NeverDestroyed(const NeverDestroyed&) = delete;
  NeverDestroyed& operator=(const NeverDestroyed&) = delete;

  T value;
};

}  // namespace turnstile::detail
