// turnstile/detail/lane_core.hpp: the state lane's queue and state word, the one
// algorithm behind StateLane (product: StdSync) and model/lane_model.cpp
// (RelacySync).
//
// The core is a FIFO of intrusive items plus two flags, all guarded by one
// mutex. The mutex is held only to link or unlink an item, never while a turn
// runs, so a turn never holds a lock the state it owns depends on.
//
// Invariants (cited where maintained):
//   [LANE-I1] running_ is true from the submission that found the lane idle
//             until the drain that finds the queue empty; exactly one drain runs
//             while it is true, so at most one turn runs at a time.
//   [LANE-I2] items are linked at the tail and taken from the head under mu_:
//             they run in the order their submissions took the mutex, so a
//             submission that happens-before another runs before it (FIFO).
//   [LANE-I3] closed_ is set under mu_; a submission that sees it is refused,
//             one that does not is linked and will run: nothing accepted is
//             lost, nothing is accepted after close.
//   [LANE-I4] drained is reported once, by whoever observes closed_ && idle &&
//             empty first (close() itself, or the drain that empties the queue).
//   [LANE-I5] an item's completion (its awaiter's resumption) happens after the
//             turn's marker is released.
//   [LANE-I6] a spare (the storage of a completed item, kept for a later
//             submission) is on the lane's spare list, under mu_, or on one
//             thread's own chain; never both, and never while an item in it is
//             linked or running. The drain keeps an item's storage only after
//             complete() returned it, and hands it to the list under its own
//             next lock, while the drain still owns the lane [LANE-I1]; a
//             submission whose thread has no spare takes the whole list (the
//             list is emptied) under the lock that links its item, without
//             reading the spares themselves, so no cache miss on storage the
//             drain wrote lengthens the critical section. Storage the list
//             has no room for goes to the process's depot when the lane has
//             one (spare_depot.hpp, [DEPOT-I1]), else is freed; so does the
//             list of a lane being destroyed.
//   [LANE-I7] the drain takes the whole queue in one critical section (head_
//             and tail_ cleared together): the batch is the drain's alone, so
//             its items' next_ links are not written again and it runs them
//             without the lock. What the step's budget leaves of it goes back
//             to the front of the queue, ahead of every later submission
//             (FIFO, [LANE-I2]).
#pragma once

#include <cstddef>
#include <mutex>
#include <new>

#include "turnstile/detail/spare_depot.hpp"
#include "turnstile/detail/thread_annotations.hpp"

namespace turnstile::detail {

template <class Sync>
class BasicLaneCore {
 public:
  // The storage of a completed item, kept for a later submission [LANE-I6]:
  // kSpareBytes from ::operator new(kSpareBytes), aligned for any fundamental
  // type. Spares form chains (the lane's list, a thread's own chain).
  // make_spare() builds one in such storage; take_storage() pops a chain's
  // first spare and gives its storage back for the next item; push_storage()
  // puts storage on a chain; next_of() and cut_after() walk and split one;
  // release_all() frees a chain.
  static constexpr std::size_t kSpareBytes = 128;
  class Spare {
   private:
    friend class BasicLaneCore;
    typename Sync::template var<Spare*> next_{};
  };
  static Spare* make_spare(void* storage) noexcept { return ::new (storage) Spare; }
  // The spare after `spare` on its chain (a chain is walked by its owner only);
  // cut_after() ends the chain at `spare` and returns the rest.
  static Spare* next_of(Spare* spare) noexcept { return spare->next_.load(); }
  static Spare* cut_after(Spare* spare) noexcept {
    Spare* rest = spare->next_.load();
    spare->next_.store(nullptr);
    return rest;
  }
  // Precondition: chain != nullptr.
  static void* take_storage(Spare*& chain) noexcept {
    Spare* first = chain;
    chain = first->next_.load();
    first->~Spare();
    return first;
  }
  static void push_storage(Spare*& chain, void* storage) noexcept {
    Spare* spare = make_spare(storage);
    spare->next_.store(chain);
    chain = spare;
  }
  static void release_all(Spare*& chain) noexcept {
    while (chain != nullptr) ::operator delete(take_storage(chain));
  }

  class Item {
   public:
    virtual void run_turn() noexcept = 0;  // the turn: runs with the marker held
    // After the marker is released [LANE-I5]. Returns the item's storage as a
    // spare (the item destroyed itself and built it with make_spare) or null.
    virtual Spare* complete() noexcept = 0;

   protected:
    ~Item() = default;

   private:
    friend class BasicLaneCore;
    typename Sync::template var<Item*> next_{};
  };

  // Where storage the list has no room for goes [LANE-I6]: a depot that
  // outlives every lane given it (the product's is never destroyed).
  using SpareDepot = BasicSpareDepot<Sync, BasicLaneCore>;
  static constexpr std::size_t kMaxSpares = 32;

  // `depot` null: storage the list has no room for is freed. `max_spares`:
  // the list's bound (the product's is kMaxSpares; the model's is small).
  explicit BasicLaneCore(SpareDepot* depot = nullptr, std::size_t max_spares = kMaxSpares)
      : depot_(depot), max_spares_(max_spares) {}
  BasicLaneCore(const BasicLaneCore&) = delete;
  BasicLaneCore& operator=(const BasicLaneCore&) = delete;
  ~BasicLaneCore() {
    Spare* spares = spares_.load();  // no other thread calls a lane being destroyed
    give_or_release(depot_, spares, spare_count_.load());
  }

  enum class Submit { refused_closed, accepted, accepted_start_drain };
  enum class Drain { idle, more, drained };

  // Links `item` at the tail unless the lane is closed. accepted_start_drain
  // tells the caller to start (post) the drain. With `refill` (pointing to the
  // caller's own empty chain), an accepted submission also takes the lane's
  // whole spare list into it [LANE-I6].
  Submit submit(Item* item, Spare** refill = nullptr) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    if (closed_.load()) return Submit::refused_closed;  // [LANE-I3]
    item->next_.store(nullptr);
    Item* tail = tail_.load();
    if (tail != nullptr) tail->next_.store(item); else head_.store(item);
    tail_.store(item);  // [LANE-I2] FIFO by the order submissions take mu_
    if (refill != nullptr) {
      *refill = spares_.load();
      spares_.store(nullptr);  // [LANE-I6] off the list before it is handed out
      spare_count_.store(0);
    }
    if (running_.load()) return Submit::accepted;
    running_.store(true);  // [LANE-I1] this submission starts the only drain
    return Submit::accepted_start_drain;
  }

  // Stops accepting. Returns true when this call finds the lane already idle
  // and empty, i.e. it is the one that reports drained [LANE-I4].
  bool close() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    if (closed_.load()) return false;  // idempotent: only the first close reports
    closed_.store(true);               // [LANE-I3]
    return !running_.load();
  }

  bool is_closed() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    return closed_.load();
  }

  bool is_idle() {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    return !running_.load();
  }

  // Runs up to `budget` turns, one at a time, in FIFO order. `Marker` has
  // enter(Item*)/exit() around each turn. Returns more (budget used up with
  // items still queued; post the drain again), idle (queue empty, lane
  // stopped) or drained (queue empty and closed: report close completion).
  //
  // The drain takes the whole queue in one lock and runs it without locking
  // again until its last item [LANE-I7]; the part of it the budget leaves goes
  // back to the front of the queue. The next batch is taken (or the lane marked
  // idle) *before* the batch's last item completes, so by the time an awaiter
  // resumes, the drain no longer needs the lane unless more work is queued:
  // awaiting the last run() and then destroying the lane is safe.
  //
  // A spare returned by complete() is kept only when the drain goes on with a
  // next item: it joins the list under the drain's next lock. The last item of
  // a step completes after the drain let go of the lane, so its storage is
  // never kept by the lane [LANE-I6]: it goes to the head of `leftover` (the
  // draining thread's own chain, which its owner keeps bounded), or is freed
  // when the caller passes none.
  template <class Marker>
  Drain drain(Marker& marker, std::size_t budget, Spare** leftover = nullptr) {
    Drain status = Drain::more;
    Kept kept{.depot = depot_};  // completed storage, not yet listed: owned by this drain
    Batch batch = take_or_stop(status, kept);
    for (std::size_t n = 1; batch.head != nullptr; ++n) {
      Item* item = batch.head;
      marker.enter(item);
      item->run_turn();
      marker.exit();
      if (item == batch.tail) {
        batch = n < budget ? take_or_stop(status, kept) : stop_if_empty(status, kept);
      } else {
        batch.head = item->next_.load();  // [LANE-I7] the batch is this drain's alone
        if (n >= budget) batch = put_back(batch, kept);  // status stays more
      }
      Spare* spare = item->complete();  // [LANE-I5] after the marker is released
      if (spare == nullptr) continue;
      if (batch.head != nullptr) {
        kept.push(spare);  // [LANE-I6] listed by the drain's next lock
      } else if (leftover != nullptr) {  // the lane may be gone: never touch it
        spare->next_.store(*leftover);   // [LANE-I6] onto the draining thread's chain
        *leftover = spare;
      } else {
        release_all(spare);
      }
    }
    return status;
  }

 private:
  // Items taken off the queue by the drain, head to tail [LANE-I7].
  struct Batch {
    Item* head = nullptr;
    Item* tail = nullptr;
  };
  // A chain of `count` spares, to the depot when there is one [LANE-I6]
  // [DEPOT-I2], else freed. Never under mu_ [DEPOT-I3].
  static void give_or_release(SpareDepot* depot, Spare* chain, std::size_t count) noexcept {
    if (depot != nullptr) depot->give(chain, count); else release_all(chain);
  }

  // The drain's completed storage, a chain to list in one splice [LANE-I6].
  // `depot` is copied from the lane when the drain starts: the drain never
  // touches the lane after its last item completes.
  struct Kept {
    SpareDepot* depot = nullptr;
    Spare* head = nullptr;
    Spare* tail = nullptr;
    std::size_t count = 0;
    void push(Spare* spare) noexcept {
      spare->next_.store(head);
      head = spare;
      if (tail == nullptr) tail = spare;
      ++count;
    }
    void release() noexcept {  // no room on the lane's list: outside the lock
      give_or_release(depot, head, count);
      head = nullptr;
      tail = nullptr;
      count = 0;
    }
  };

  // Under mu_: splices the drain's kept storage onto the list when the list has
  // room (at most max_spares_ + one step's items); otherwise leaves it for the
  // caller to free after unlocking [LANE-I6].
  void list_spares(Kept& kept) TURNSTILE_REQUIRES(mu_) {
    if (kept.head == nullptr || spare_count_.load() >= max_spares_) return;
    kept.tail->next_.store(spares_.load());
    spares_.store(kept.head);
    spare_count_.store(spare_count_.load() + kept.count);
    kept = Kept{.depot = kept.depot};
  }

  // Takes the whole queue [LANE-I7]; when it is empty, stops the drain and sets
  // `status` to idle or drained.
  Batch take_or_stop(Drain& status, Kept& kept) {
    Batch batch;
    {
      BasicLockGuard<typename Sync::mutex> lock(mu_);
      list_spares(kept);
      batch.head = head_.load();
      if (batch.head == nullptr) {
        running_.store(false);                                   // [LANE-I1] the only drain stops
        status = closed_.load() ? Drain::drained : Drain::idle;  // [LANE-I4]
      } else {
        batch.tail = tail_.load();
        head_.store(nullptr);  // [LANE-I7] later submissions link behind the batch
        tail_.store(nullptr);
      }
    }
    kept.release();
    return batch;
  }

  // At the end of a step's budget with the batch finished: leaves a queued head
  // for the next step (status stays more) or, when the queue is empty, stops
  // the drain as take_or_stop does, so the last item's awaiter never finds the
  // lane running.
  Batch stop_if_empty(Drain& status, Kept& kept) {
    {
      BasicLockGuard<typename Sync::mutex> lock(mu_);
      list_spares(kept);
      if (head_.load() == nullptr) {
        running_.store(false);                                   // [LANE-I1]
        status = closed_.load() ? Drain::drained : Drain::idle;  // [LANE-I4]
      }
    }
    kept.release();
    return Batch{};
  }

  // At the end of a step's budget within a batch: its rest goes back to the
  // front of the queue, ahead of everything submitted since it was taken, so
  // FIFO holds [LANE-I7] [LANE-I2]. The lane stays running (status more).
  Batch put_back(Batch rest, Kept& kept) {
    {
      BasicLockGuard<typename Sync::mutex> lock(mu_);
      list_spares(kept);
      Item* queued = head_.load();
      rest.tail->next_.store(queued);
      head_.store(rest.head);
      if (queued == nullptr) tail_.store(rest.tail);
    }
    kept.release();
    return Batch{};
  }

  // Written by every submission: first, together (with StdSync 40 + 16 + 2
  // bytes, so a line or two), so that an owner can keep what its drain writes
  // a cache line away from them (StateLane does). What a submission only reads
  // (the bound, the depot) or only a refill writes (the spare list) comes after.
  typename Sync::mutex mu_;
  typename Sync::template var<Item*> head_ TURNSTILE_GUARDED_BY(mu_){};
  typename Sync::template var<Item*> tail_ TURNSTILE_GUARDED_BY(mu_){};
  typename Sync::template var<bool> running_ TURNSTILE_GUARDED_BY(mu_){};
  typename Sync::template var<bool> closed_ TURNSTILE_GUARDED_BY(mu_){};
  // [LANE-I6] spares kept for later submissions: the list is spliced onto
  // only while it holds fewer than max_spares_.
  SpareDepot* const depot_;
  const std::size_t max_spares_;
  typename Sync::template var<Spare*> spares_ TURNSTILE_GUARDED_BY(mu_){};
  typename Sync::template var<std::size_t> spare_count_ TURNSTILE_GUARDED_BY(mu_){};
};

}  // namespace turnstile::detail
