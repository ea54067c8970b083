// turnstile/detail/wait_graph.hpp: the wait-for relation between turns, the one
// algorithm behind the await check of [TURN-7.1] (product: StdSync, instantiated
// in detail/turn_call.hpp and used by CallWait in call_wait.cpp) and
// model/wait_graph_model.cpp (RelacySync).
//
// Nodes are calls (one per `Activation::call`, serial or interleaved). A node
// is queued until its turn starts, running until its result settles, then
// settled. Two kinds of "waits for" connect them:
//   - an edge `from -> to`: code that `from`'s turn waits on (its own body, or
//     a Scope child it joins) is awaiting call `to` ([TURN-7.1]);
//   - a queued serial node waits for the serial turn that holds its
//     activation's serial lane (Lane::holder): it starts only after that turn,
//     and every serial turn between, have settled ([TURN-2.2], [TURN-3.1]).
// A running node waits for the targets of its edges; a settled node and a
// queued interleaved node wait for nothing.
//
// begin_wait(edge) walks the relation from `edge.to`; if the walk reaches
// `edge.from`, the await would wait for itself: it is refused and the cycle is
// returned (every hop, for the error message). Otherwise the edge is inserted.
//
// Invariants (cited where maintained):
//   [WAIT-I1] the check and the insertion of an edge are one critical section
//             of mu_: of two awaits that would together close a cycle, the
//             second to take mu_ sees the first's edge and is refused. The
//             relation stays acyclic, so a refusal is never needed later.
//   [WAIT-I2] a lane's holder is set by its serial turn as it starts (before
//             the turn can insert an edge under mu_) and cleared as it settles,
//             before the node can be freed; a settle that may overlap a walk
//             (walkers_ not zero) then takes mu_ once, so it returns only after
//             every walk that could have read the node has released mu_. A
//             walker that reads a holder reads a live node, and sees it as
//             holder if it has any edge. The common settle, with no walk in
//             progress, takes no lock: it is one store and one load of the
//             walker count (seq_cst, the two halves of a Dekker pair with
//             begin_wait's increment and holder load).
//   [WAIT-I3] an edge is inserted and removed under mu_ by its awaiter, and
//             lives in the awaiter's frame until removed; its target is kept
//             alive by that awaiter: every node a walker reaches is alive.
//   [WAIT-I4] a refusal is a real cycle: every hop was a wait in progress at
//             the moment of the check (no false positive).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "turnstile/detail/thread_annotations.hpp"

namespace turnstile::detail {

template <class Sync>
class BasicWaitGraph {
 public:
  class Node;

  // One activation's serial lane.
  class Lane {
   public:
    Lane() = default;
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;

   private:
    friend class BasicWaitGraph;
    // The serial turn running now, or null [WAIT-I2]. release store at start,
    // pairs with the walk's load in visit(); cleared by settled() with a
    // seq_cst store (see there).
    typename Sync::template atomic<Node*> holder_{nullptr};
  };

  enum class State : std::uint8_t { queued, running, settled };

  // One wait in progress, `from` awaiting `to`. Lives in the awaiting frame.
  class Edge {
   public:
    Edge(Node* from, Node* to) noexcept : from_(from), to_(to) {}
    Edge(const Edge&) = delete;
    Edge& operator=(const Edge&) = delete;
    Node* from() const noexcept { return from_; }
    Node* to() const noexcept { return to_; }

   private:
    friend class BasicWaitGraph;
    Node* const from_;
    Node* const to_;
    typename Sync::template var<Edge*> next_{};  // guarded by mu_
  };

  class Node {
   public:
    Node(Lane* lane, bool serial) noexcept : lane_(lane), serial_(serial) {}
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    bool serial() const noexcept { return serial_; }

   private:
    friend class BasicWaitGraph;
    Lane* const lane_;
    const bool serial_;
    // release stores in started()/settled(), pair with the acquire load in
    // visit(). Mutable: nodes are shared as const markers.
    mutable typename Sync::template atomic<State> state_{State::queued};
    mutable typename Sync::template var<Edge*> edges_{};  // guarded by mu_ [WAIT-I3]
  };

  // One hop of a refused cycle: `node`, and whether the next hop is the turn it
  // is queued behind (true) or the call it awaits (false).
  struct Hop {
    const Node* node;
    bool queued_behind;
  };

  BasicWaitGraph() = default;
  BasicWaitGraph(const BasicWaitGraph&) = delete;
  BasicWaitGraph& operator=(const BasicWaitGraph&) = delete;

  // The node's turn starts. A serial node becomes its lane's holder.
  void started(const Node& n) noexcept {
    n.state_.store(State::running, std::memory_order_release);
    // [WAIT-I2] release: pairs with the walk's load in visit().
    if (n.serial_) n.lane_->holder_.store(const_cast<Node*>(&n), std::memory_order_release);
  }

  // The node's result settled. A serial node leaves its lane; once this
  // returns no walker reads it [WAIT-I2]. No lock unless a walk is in progress.
  void settled(const Node& n) {
    n.state_.store(State::settled, std::memory_order_release);
    if (!n.serial_) return;
    // [WAIT-I2] seq_cst, with the load of walkers_ below: pairs with the
    // seq_cst increment of walkers_ and the seq_cst holder load in a walk
    // (begin_wait, visit). Either this load sees that walk's increment, or the
    // walk's holder load comes after this store in the single total order and
    // reads null (or a later holder), never `n`.
    n.lane_->holder_.store(nullptr, std::memory_order_seq_cst);
    if (walkers_.load(std::memory_order_seq_cst) == 0) return;
    // A walk is in progress and may have read `n` as holder: wait until it has
    // released mu_. A walk that takes mu_ after this reads null or a later
    // holder (the lock orders the store above before it).
    BasicLockGuard<typename Sync::mutex> lock(mu_);
  }

  // Inserts `e` unless it would close a cycle; then returns false and fills
  // `cycle` with the hops from e.from() round to it. [WAIT-I1]
  bool begin_wait(Edge& e, std::vector<Hop>& cycle) {
    const Walking walking(walkers_);  // [WAIT-I2] counted before any holder is read
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    if (find_path(e.to_, e.from_, cycle)) {
      cycle.insert(cycle.begin(), Hop{e.from_, false});
      return false;
    }
    e.next_.store(e.from_->edges_.load());
    e.from_->edges_.store(&e);
    return true;
  }

  // Removes `e` (inserted by begin_wait). [WAIT-I3]
  void end_wait(Edge& e) {
    BasicLockGuard<typename Sync::mutex> lock(mu_);
    Edge* prev = nullptr;
    for (Edge* x = e.from_->edges_.load(); x != nullptr; x = x->next_.load()) {
      if (x == &e) {
        if (prev == nullptr) {
          e.from_->edges_.store(e.next_.load());
        } else {
          prev->next_.store(e.next_.load());
        }
        return;
      }
      prev = x;
    }
  }

 private:
  // [WAIT-I2] counts a walk from before its first holder load until after it
  // released mu_. The increment is seq_cst: the other half of settled()'s
  // Dekker pair. The decrement is release: pairs with settled()'s load that
  // reads from it or from a later read-modify-write in its release sequence
  // (every write to walkers_ is one), so every read this walk made of a node
  // happens-before that node's settle returns (and the node is freed).
  class Walking {
   public:
    explicit Walking(typename Sync::template atomic<std::uint32_t>& n) noexcept : n_(n) {
      n_.fetch_add(1, std::memory_order_seq_cst);
    }
    ~Walking() { n_.fetch_sub(1, std::memory_order_release); }
    Walking(const Walking&) = delete;
    Walking& operator=(const Walking&) = delete;

   private:
    typename Sync::template atomic<std::uint32_t>& n_;
  };

  // Depth-first from `start` to `goal` over the waits-for relation, under mu_.
  // On success `path` holds the hops from `start` to the last node before
  // `goal`. The relation is acyclic [WAIT-I1]; `seen` keeps shared sub-graphs
  // (Scope children share their joiner's node) from being walked twice.
  bool find_path(Node* start, const Node* goal, std::vector<Hop>& path) TURNSTILE_REQUIRES(mu_) {
    std::vector<Node*> seen;
    return visit(start, goal, path, seen);
  }

  bool visit(Node* n, const Node* goal, std::vector<Hop>& path, std::vector<Node*>& seen)
      TURNSTILE_REQUIRES(mu_) {
    if (n == goal) return true;
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) return false;
    seen.push_back(n);
    // acquire: pairs with the release stores in started()/settled().
    const State st = n->state_.load(std::memory_order_acquire);
    if (st == State::queued) {
      if (!n->serial_) return false;  // an interleaved call waits for no turn [TURN-3.2]
      // seq_cst: pairs with the release store in started() (it acquires) and
      // with the seq_cst clearing store in settled() [WAIT-I2].
      Node* h = n->lane_->holder_.load(std::memory_order_seq_cst);
      if (h == nullptr || h == n) return false;
      path.push_back(Hop{n, true});
      if (visit(h, goal, path, seen)) return true;
      path.pop_back();
      return false;
    }
    if (st == State::settled) return false;
    for (Edge* e = n->edges_.load(); e != nullptr; e = e->next_.load()) {
      path.push_back(Hop{n, false});
      if (visit(e->to_, goal, path, seen)) return true;
      path.pop_back();
    }
    return false;
  }

  typename Sync::mutex mu_;
  typename Sync::template atomic<std::uint32_t> walkers_{0};  // walks in begin_wait [WAIT-I2]
};

}  // namespace turnstile::detail
