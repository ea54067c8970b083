// turnstile/detail/turn_chain.hpp: the serial chain of an activation, the one
// algorithm behind Activation's serial lane (product: StdSync) and
// model/turn_chain_model.cpp (RelacySync).
//
// Turns chain, they do not queue ([TURN-2.1]): each serial call attaches a link
// to the tail at the moment the call is made and remembers the link before it.
// Its turn starts when that predecessor link has settled, and it settles its
// own link when its result settles. Nothing is stored between turns but the
// tail pointer; "queued" is a counter, not a structure ([TURN-2.3]).
//
// Invariants (cited where maintained):
//   [CHAIN-I1] attach() swaps the tail with one atomic exchange: links form
//              one sequence, in the tail's modification order (arrival order);
//              each link is some attach()'s `prev` exactly once.
//   [CHAIN-I2] a link is settled exactly once, after its turn has finished;
//              its successor's turn starts only after that (the hand-off goes
//              through the link's completion word, [COMP-I2]/[COMP-I4]), so
//              serial turns never overlap and start in arrival order.
//   [CHAIN-I3] a link lives while its own turn or its successor holds it
//              (reference count); the last holder frees it, after every
//              holder's use of it (acq_rel on the count).
//
// `LinkPayload` is data carried in each link, default-constructed by attach()
// and destroyed with the link. The product has none (NoLinkPayload: empty and
// [[no_unique_address]], so the link's layout and cost are unchanged).
// model/turn_chain_model.cpp gives each link a plain Sync::var that its turn
// and its successor both touch before they let go, so that a free not ordered
// after a holder's use is reported as a data race.
//
// `Alloc` is a standard allocator (rebound to Link) whose allocate and
// deallocate may be called from any thread. The default, std::allocator, is
// the global operator new and delete (the model's, so Relacy sees every
// allocation and free). The product passes BlockAllocator (detail/turn_call.hpp):
// the block cache of the calling thread ([RT-1.7]), so a link allocated on the
// caller's carrier and freed on the turn's costs no malloc.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "turnstile/detail/completion_core.hpp"

namespace turnstile::detail {

// The product's link payload: nothing.
struct NoLinkPayload {};

template <class Sync, class LinkPayload = NoLinkPayload, class Alloc = std::allocator<std::byte>>
class BasicTurnChain {
 public:
  class Link;
  using LinkAlloc = typename std::allocator_traits<Alloc>::template rebind_alloc<Link>;

  class Link {
   public:
    BasicCompletion<Sync> settled;
    [[no_unique_address]] LinkPayload payload;  // empty in the product (see above)

    static void release(Link* l) noexcept {
      // [CHAIN-I3] acq_rel: the release half publishes this holder's use of the
      // link; the acquire half (on the last drop) pairs with the other holder's
      // release, so every holder's use happens-before the free.
      if (l != nullptr && l->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        LinkAlloc alloc;
        std::allocator_traits<LinkAlloc>::destroy(alloc, l);
        std::allocator_traits<LinkAlloc>::deallocate(alloc, l, 1);
      }
    }

   private:
    // Born with both references attach() hands out (the caller's and the
    // tail's), written before the link is published: no read-modify-write.
    typename Sync::template atomic<std::uint32_t> refs_{2};
  };

  BasicTurnChain() = default;
  BasicTurnChain(const BasicTurnChain&) = delete;
  BasicTurnChain& operator=(const BasicTurnChain&) = delete;
  // No attach() runs any more: relaxed (the last attach happens-before this).
  ~BasicTurnChain() { Link::release(tail_.load(std::memory_order_relaxed)); }

  // Makes a new link the tail; returns it (one reference, for the caller's
  // turn) and its predecessor through `prev` (one reference, or null when the
  // chain was empty). Lock-free: one exchange. [CHAIN-I1]
  Link* attach(Link*& prev) {
    // Two references: one for the caller, one held as the tail.
    LinkAlloc alloc;
    Link* mine = std::allocator_traits<LinkAlloc>::allocate(alloc, 1);
    std::allocator_traits<LinkAlloc>::construct(alloc, mine);  // constructs no-throw
    // [CHAIN-I1] acq_rel: the release half publishes `mine`'s construction to
    // the attach() that takes it as its prev; the acquire half pairs with the
    // release of the exchange that made `prev` the tail. The tail's reference
    // passes to the caller.
    prev = tail_.exchange(mine, std::memory_order_acq_rel);
    return mine;
  }

  // Settles `mine` (its turn has finished) and drops the caller's reference:
  // the successor, if any, is notified through the completion word. [CHAIN-I2]
  static void settle(Link* mine) noexcept {
    mine->settled.set();
    Link::release(mine);
  }

 private:
  typename Sync::template atomic<Link*> tail_{nullptr};  // holds one reference [CHAIN-I1]
};

}  // namespace turnstile::detail
