// turnstile/detail/spare_depot.hpp: the process's depot of recycled item
// storage, one algorithm behind detail::spare_depot() (product: StdSync) and
// model/spare_depot_model.cpp (RelacySync).
//
// Why (issue 28, impl/bench/README.md "The storage depot"): a lane keeps at
// most 32 spares [LANE-I6]. A producer that runs a time slice ahead of the
// lane's carrier allocates most of a flood's items; the drain then freed all
// but 32 of them, glibc gave the emptied heap back to the kernel (a thread's
// arena is trimmed as soon as its top is free), and the next flood faulted it
// in again: 200 page faults a round, half the time of the 2-producer try_post
// round in the kernel. The depot keeps what a lane's list has no room for, in
// whole chains, and hands a chain back to a thread whose own chain ran out.
// Storage freed on a carrier is then reused by the producer, and the heap is
// neither trimmed nor faulted while the process stays under the bound.
//
// Usage: a lane's drain gives the chain of storage its step completed and its
// list has no room for (BasicLaneCore, Kept); a lane being destroyed gives its
// list; a thread whose chain grew past its bound gives it in pieces of at most
// kMaxDepotChain (spare_slot.cpp, bound_spare_slot); a thread whose chain is
// still empty after its submission's refill from the lane takes one chain
// (spare_slot.cpp, refill_from_depot_if_empty). The block caches of frames and
// call records (block_cache.cpp) use one depot per size class the same way. A
// chain is given and taken whole: one lock per chain, never per item.
//
// Invariants (cited where maintained):
//   [DEPOT-I1] A chain is either kept here or owned by exactly one thread,
//              never both: give() takes over a chain its caller no longer
//              touches; take() unlinks a chain under mu_ before it returns it,
//              so no two takes return the same chain and nothing kept is freed.
//   [DEPOT-I2] Bounded: at most max_spares spares in at most max_chains chains
//              are kept. A chain that does not fit is freed, by the giver,
//              after mu_ is released; nothing given is lost or leaked.
//   [DEPOT-I3] mu_ is held for a few pointer moves only: no chain is walked
//              and nothing is allocated or freed under it.
//
// Thread safety: every member may be called from any thread at once.
// Ordering: a chain's contents (written by the giver before give()) happen
// before the taker's use of them: both sides hold mu_. chains_hint_ is a hint
// read without the lock (relaxed): a stale zero makes take() return null (the
// caller allocates), a stale non-zero costs one lock that finds nothing; it is
// written only under mu_, and never read as proof of anything.
// Where a continuation resumes: nothing here suspends or resumes.
#pragma once

#include <atomic>
#include <cstddef>

#include "turnstile/detail/thread_annotations.hpp"

namespace turnstile::detail {

// Core: the chain's owner type, BasicLaneCore<Sync>: its Spare is the chain
// node and its release_all(Spare*&) frees a chain.
template <class Sync, class Core>
class BasicSpareDepot {
 public:
  using Spare = typename Core::Spare;
  // A drain gives one chain a step (at most 64 spares, kTurnsPerStep), so
  // 2 MiB of 128-byte spares given in steps of 32 need 512 chains. Lanes
  // whose steps run one or two items give chains that short: the chain bound
  // then binds first (512 spares), and each refill takes a short chain.
  static constexpr std::size_t kMaxChains = 512;

  // Allocates the chain table (max_chains entries) once, here.
  explicit BasicSpareDepot(std::size_t max_spares, std::size_t max_chains = kMaxChains)
      : max_spares_(max_spares), max_chains_(max_chains), chains_(new Slot[max_chains]) {}
  BasicSpareDepot(const BasicSpareDepot&) = delete;
  BasicSpareDepot& operator=(const BasicSpareDepot&) = delete;
  // No other thread may call a depot being destroyed.
  ~BasicSpareDepot() {
    for (std::size_t i = 0; i < top_.load(); ++i) {
      Spare* chain = chains_[i].head.load();
      Core::release_all(chain);
    }
    delete[] chains_;
  }

  // Keeps the chain `head` of `count` spares when it fits [DEPOT-I2]; else
  // frees it, after unlocking [DEPOT-I3]. The caller no longer touches it
  // [DEPOT-I1]. A null chain is ignored.
  void give(Spare* head, std::size_t count) noexcept {
    if (head == nullptr) return;
    {
      BasicLockGuard<typename Sync::mutex> lock(mu_);
      const std::size_t top = top_.load();
      const std::size_t kept = spares_.load();
      if (top < max_chains_ && count <= max_spares_ - kept) {  // [DEPOT-I2] both bounds
        chains_[top].head.store(head);
        chains_[top].count.store(count);
        top_.store(top + 1);
        spares_.store(kept + count);
        chains_hint_.store(top + 1, std::memory_order_relaxed);  // read by take()'s hint only
        return;
      }
    }
    Core::release_all(head);  // [DEPOT-I2] [DEPOT-I3] no room: freed outside the lock
  }

  // The newest chain kept, now the caller's alone [DEPOT-I1], or null; with
  // `count`, also its length (0 when null).
  Spare* take(std::size_t* count = nullptr) noexcept {
    if (count != nullptr) *count = 0;
    // relaxed: a hint (see Ordering); the chain itself is read under mu_.
    if (chains_hint_.load(std::memory_order_relaxed) == 0) return nullptr;
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    const std::size_t top = top_.load();
    if (top == 0) return nullptr;
    Slot& slot = chains_[top - 1];
    Spare* head = slot.head.load();
    slot.head.store(nullptr);  // [DEPOT-I1] off the depot before it is handed out
    top_.store(top - 1);
    const std::size_t n = slot.count.load();
    spares_.store(spares_.load() - n);
    if (count != nullptr) *count = n;
    chains_hint_.store(top - 1, std::memory_order_relaxed);
    return head;
  }

  // Spares kept now (tests and statistics).
  std::size_t spares() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    return spares_.load();
  }

 private:
  struct Slot {
    typename Sync::template var<Spare*> head{};
    typename Sync::template var<std::size_t> count{};
  };

  const std::size_t max_spares_;
  const std::size_t max_chains_;
  typename Sync::mutex mu_;
  Slot* const chains_ TURNSTILE_PT_GUARDED_BY(mu_);  // max_chains_ entries, [0, top_) kept
  typename Sync::template var<std::size_t> top_ TURNSTILE_GUARDED_BY(mu_){};     // chains kept
  typename Sync::template var<std::size_t> spares_ TURNSTILE_GUARDED_BY(mu_){};  // spares kept
  // top_'s value, written under mu_, read without it by take() as a hint.
  typename Sync::template atomic<std::size_t> chains_hint_{0};
};

}  // namespace turnstile::detail
