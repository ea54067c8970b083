// turnstile/detail/completion_core.hpp: the lock-free completion word shared by
// Event, Promise<T> and the join of Scope.
//
// BasicCompletion<Sync> is a one-shot latch with an intrusive waiter list. Its
// whole state is one word, `state_`:
//   nullptr      not set, nobody waiting
//   set_marker() set (terminal until reset())
//   otherwise    not set; head of a LIFO stack of waiting nodes
//
// Invariants (cited where maintained):
//   [COMP-I1] a node is published with a release CAS after its `next_` is
//             written, and set() takes the whole stack with an acquire exchange,
//             so set() never reads a `next_` it is not ordered after.
//   [COMP-I2] set() swaps the marker in with one atomic exchange: a node pushed
//             before the exchange is in the list it takes; a push that comes
//             after sees the marker and does not wait. No waiter is lost.
//   [COMP-I3] each published node is notified exactly once, by the set() that
//             took it, in the order the nodes were published (FIFO).
//   [COMP-I4] whatever the setter wrote before set() happens-before whatever a
//             waiter reads after it learns the latch is set (release part of the
//             exchange; acquire on the fast-path load and in the CAS failure).
//
// Where a continuation resumes: never here. notify() is called on the setting
// thread inside set(); every product notify posts the waiter to its scheduler
// ([RT-4.2]), so no waiter runs inside the call that completes the latch.
//
// This template is instantiated by the product with StdSync and by
// model/completion_model.cpp with RelacySync.
#pragma once

#include <atomic>

namespace turnstile::detail {

template <class Sync>
class BasicCompletion {
 public:
  // An intrusive waiting node. It lives wherever the waiter lives (in product
  // code, inside the suspended coroutine's awaiter), so waiting never allocates.
  class Waiter {
   public:
    virtual void notify() noexcept = 0;

   protected:
    ~Waiter() = default;

   private:
    friend class BasicCompletion;
    typename Sync::template var<Waiter*> next_{};
  };

  BasicCompletion() = default;
  explicit BasicCompletion(bool initially_set) {
    if (initially_set) state_.store(set_marker(), std::memory_order_relaxed);
  }
  BasicCompletion(const BasicCompletion&) = delete;
  BasicCompletion& operator=(const BasicCompletion&) = delete;

  // True once set(). The acquire pairs with the release of set()'s exchange, so
  // a caller that sees true may read what the setter wrote [COMP-I4].
  bool is_set() const noexcept {
    return state_.load(std::memory_order_acquire) == set_marker();
  }

  // Publishes `w` as a waiter. Returns false, without publishing, when the latch
  // is already set: the caller then continues at once (and may read what the
  // setter wrote, [COMP-I4]). Returns true when `w` will be notified exactly
  // once by set() [COMP-I3].
  bool try_add_waiter(Waiter* w) noexcept {
    void* old = state_.load(std::memory_order_acquire);  // pairs with set()'s exchange
    for (;;) {
      if (old == set_marker()) return false;
      w->next_.store(static_cast<Waiter*>(old));
      constexpr auto publish = std::memory_order_release;  // [COMP-I1] pairs with set()'s acquire
      if (state_.compare_exchange_weak(old, w, publish,
                                       std::memory_order_acquire /* pairs with set() */))
        return true;
    }
  }

  // Sets the latch and notifies every published waiter, oldest first. Setting an
  // already-set latch does nothing. notify() runs on this thread, inside this
  // call; product waiters only post themselves from it (see header comment).
  void set() noexcept {
    // [COMP-I2] one exchange takes the whole stack. acq_rel: release publishes
    // the setter's writes [COMP-I4]; acquire pairs with the publishing CAS [COMP-I1].
    void* old = state_.exchange(set_marker(), std::memory_order_acq_rel);
    if (old == set_marker() || old == nullptr) return;
    // Reverse the LIFO stack so waiters are notified in publication order [COMP-I3].
    Waiter* fifo = nullptr;
    auto* w = static_cast<Waiter*>(old);
    while (w != nullptr) {
      Waiter* next = w->next_.load();
      w->next_.store(fifo);
      fifo = w;
      w = next;
    }
    while (fifo != nullptr) {
      Waiter* next = fifo->next_.load();  // read before notify: the node may die in it
      fifo->notify();
      fifo = next;
    }
  }

  // Re-arms a set latch. Precondition: nobody is waiting (it is set, so the
  // stack is empty). Returns false if the latch was not set.
  bool reset() noexcept {
    void* expected = set_marker();
    return state_.compare_exchange_strong(expected, nullptr, std::memory_order_relaxed,
                                          std::memory_order_relaxed);
  }

 private:
  void* set_marker() const noexcept { return const_cast<BasicCompletion*>(this); }

  typename Sync::template atomic<void*> state_{nullptr};
};

}  // namespace turnstile::detail
