// model/wait_graph_model.cpp: Relacy model of the wait-for relation behind the
// await check of [TURN-7.1]: turnstile::detail::BasicWaitGraph<RelacySync>, the
// product's own template (impl/include/turnstile/detail/wait_graph.hpp), the
// graph that call_wait.cpp's CallWait consults before a turn awaits a call.
//
// spec: [TURN-7.1]
//   TURN-7.1: an await that would close a cycle of waits (a turn waiting, through
//   the calls it awaits and the serial turns those calls are queued behind, for
//   itself) is refused at once instead of hanging; an await that closes no cycle
//   is never refused.
// Invariants exercised: [WAIT-I1]..[WAIT-I4] of detail/wait_graph.hpp.
//
// How the product is modelled (detail/activation_impl.hpp run_turn, call_wait.cpp
// CallWait):
//  - A call's node is a CallNode: the product's TurnMarker is a Node plus the
//    method and activation names, which describe_cycle() reads for every hop of a
//    refused cycle after begin_wait() has returned, outside the graph's mutex.
//    Here the names are one Sync::var<int>, written when the node is made (every
//    call here is made before the threads start) and read, for every hop of a
//    refused cycle, by the refused thread: a hop freed meanwhile would be an
//    access to freed memory.
//  - A serial turn starts with started(node) (it becomes its lane's holder) and
//    settles with settled(node); the next serial turn of the lane may start only
//    after that (the turn chain's hand-off, modelled by the same thread running
//    the next turn, or by the node being started in before()).
//  - An await is CallWait: an Edge(awaiter, target) and begin_wait(); on success
//    the edge stays until end_wait() (the product's edge lives in the awaiting
//    frame). Edges whose wait a thread ends itself are heap objects, freed right
//    after end_wait(): a walker that follows one afterwards reads freed memory
//    [WAIT-I3]. Edges kept until after() are members of the suite.
//  - Nodes that settle and are dropped during a run (a lane's holder) are heap
//    objects freed right after settled(), as early as the product can drop them:
//    a walker that reads one afterwards reads freed memory [WAIT-I2]. The other
//    nodes are members of the suite and outlive the threads.
//  - "Hang": two successful awaits whose edges are in the graph at the same time
//    and close a cycle. Where the edges stay until after() this is "both
//    begin_wait()s returned true". Where a thread ends its wait itself, each
//    thread, after a successful begin_wait, sets a seq_cst flag and then reads the
//    other's: reading it set means both edges were in the graph when the later of
//    the two was checked, so that check should have refused it (see Overlap).
//  - The graph is a member of the suite (the product's is one process-wide
//    static, wait_graph()).
//
// Harness data shared between model threads is a Sync::var or an rl::atomic,
// except the `began` results: plain bools, each written by one thread and read in
// after(), once every thread has finished.
//
// Search size: every free() in a Relacy execution is a two-way choice (the block
// is reused at once or kept), so the vectors that find_path() grows for each
// walk multiply the tree; the harness keeps its own frees few (members instead of
// heap objects, a reserved cycle buffer). See model/README.md for the searches.
#include "relacy_sync.hpp"

#include "product_headers_begin.hpp"
#include "turnstile/detail/wait_graph.hpp"
#include "product_headers_end.hpp"

#include "model_main.hpp"

// Relacy prints every atomic's values in its histories; the node state is an enum
// class (found by argument-dependent lookup in its namespace).
namespace turnstile::detail {
inline std::ostream& operator<<(std::ostream& o, BasicWaitGraph<RelacySync>::State s) {
  using State = BasicWaitGraph<RelacySync>::State;
  return o << (s == State::queued ? "queued" : s == State::running ? "running" : "settled");
}
}  // namespace turnstile::detail

namespace {

using Sync = turnstile::RelacySync;
using Graph = turnstile::detail::BasicWaitGraph<Sync>;
using Lane = Graph::Lane;
using Node = Graph::Node;
using Edge = Graph::Edge;
using Hop = Graph::Hop;

// A call: the product's TurnMarker (Node + names).
struct CallNode : Node {
  CallNode(Lane* lane, bool serial, int id) : Node(lane, serial), name(id) {}
  Sync::var<int> name;  // the method/activation names: written once, at the call
};

// The refused cycle's buffer, with room for the longest cycle here (7 hops), so
// that filling it frees no block: every free doubles Relacy's search (a freed
// block is either reused at once or kept), and this buffer's growth is not what
// the model is about. The walk's own `seen` vector in find_path() still grows.
std::vector<Hop> cycle_buffer() {
  std::vector<Hop> v;
  v.reserve(8);
  return v;
}

// One await whose edge lives in a heap frame, as CallWait's: returns the edge if
// the wait began, or null and the refused cycle.
Edge* await_call(Graph& g, Node* from, Node* to, std::vector<Hop>& cycle) {
  auto* e = new Edge(from, to);
  if (g.begin_wait(*e, cycle)) return e;
  delete e;
  return nullptr;
}

void end_await(Graph& g, Edge* e) {
  g.end_wait(*e);
  delete e;  // the awaiting frame ends: nothing may reach the edge any more [WAIT-I3]
}

// An await of a call that waits for no turn (never refused), ended at once.
void await_and_end(Graph& g, Node* from, Node* to, std::vector<Hop>& cycle) {
  Edge* e = await_call(g, from, to, cycle);
  RL_ASSERT(e != nullptr);
  end_await(g, e);
}

// A lane's holder settles and is freed at once; `next`, the next serial call
// on its lane, starts (it takes the lane over).
void hand_over(Graph& g, CallNode* holder, CallNode& next) {
  g.settled(*holder);
  delete holder;  // the settled holder is dropped at once
  g.started(next);
}

// A refused await: the cycle is exactly the expected hops [WAIT-I4] (each hop a
// wait in progress, queued_behind marking "the next hop is the turn it is queued
// behind"), and then, as describe_cycle() does, every hop's names are read.
void check_refusal(const std::vector<Hop>& cycle, std::initializer_list<Hop> expected) {
  RL_ASSERT(cycle.size() == expected.size());
  if (cycle.size() != expected.size()) return;
  std::size_t i = 0;
  for (const Hop& h : expected) {
    RL_ASSERT(cycle[i].node == h.node);
    RL_ASSERT(cycle[i].queued_behind == h.queued_behind);
    ++i;
  }
  for (const Hop& h : cycle) RL_ASSERT(static_cast<const CallNode*>(h.node)->name.load() > 0);
}

// An await that may close a cycle: whether it began; if it was refused, its
// cycle is exactly the expected hops (check_refusal).
bool begin_or_refused(Graph& g, Edge& e, std::vector<Hop>& cycle, std::initializer_list<Hop> expected) {
  const bool began = g.begin_wait(e, cycle);
  if (!began) check_refusal(cycle, expected);
  return began;
}

// Two awaits that close a cycle together, one per thread: from[i] -> to[i], each
// from a running turn to a call queued behind the other's turn, kept until
// after(). Exactly one is refused, and its cycle is its own two hops, then the
// other's.
struct TwoWayCycle {
  CallNode* from[2];
  CallNode* to[2];
  Edge edge[2];
  bool began[2] = {false, false};  // each written by its own thread, read in after()

  TwoWayCycle(CallNode& from0, CallNode& to0, CallNode& from1, CallNode& to1)
      : from{&from0, &from1}, to{&to0, &to1}, edge{{&from0, &to0}, {&from1, &to1}} {}

  // Thread i's await.
  void await(Graph& g, unsigned i, std::vector<Hop>& cycle) {
    const unsigned j = 1 - i;
    began[i] = begin_or_refused(g, edge[i], cycle,
                                {{from[i], false}, {to[i], true}, {from[j], false}, {to[j], true}});
  }

  // In after(): exactly one was refused; the one that began is ended.
  void end(Graph& g) {
    RL_ASSERT(began[0] != began[1]);  // exactly one refused
    if (began[0]) g.end_wait(edge[0]);
    if (began[1]) g.end_wait(edge[1]);
  }
};

// Two awaits that would close a cycle together, each ended by its own thread:
// they must never be in the graph at the same time [WAIT-I1]. A thread whose
// await began sets its flag, reads the other's, clears its flag, then ends the
// wait. All seq_cst. If thread i reads j's flag set, then j's edge was inserted
// before i's edge was removed and i's before j's was removed (a load cannot read
// a store it happens before, nor one overwritten by a store that happens before
// it; the graph's mutex orders the inserts and removals), so both were in the
// graph when the later one was checked: that check missed a cycle.
struct Overlap {
  Sync::atomic<int> active[2];
  void begun(int i) {
    active[i].store(1);
    RL_ASSERT(active[1 - i].load() == 0);  // two waits of one cycle at once: a hang
    active[i].store(0);
  }
};

// ---------------------------------------------------------------------------
// two-activations: activations A and B, one serial lane each. Turn TA holds A,
// TB holds B (each started by its own thread); CA is a serial call queued on A,
// CB one queued on B.
//  thread 0: TA starts, awaits CB;
//  thread 1: TB starts, awaits CA.
// TA -> CB -(queued behind)-> TB -> CA -(queued behind)-> TA: the two awaits
// close a cycle. The edges stay until after().
// Checks: exactly one await is refused (both begun is the hang [TURN-7.1]
// forbids, both refused a false refusal), and its cycle is every hop of it.
struct TwoActivations : rl::test_suite<TwoActivations, 2> {
  static constexpr const char* kChecks =
      "TA awaits CB while TB awaits CA (each call queued behind the other's turn): exactly one "
      "await refused, naming every hop";
  Graph g;
  Lane la, lb;
  CallNode ta{&la, true, 1}, tb{&lb, true, 2}, ca{&la, true, 3}, cb{&lb, true, 4};
  TwoWayCycle awaits{ta, cb, tb, ca};  // TA -> CB, TB -> CA

  void thread(unsigned idx) {
    std::vector<Hop> cycle = cycle_buffer();
    g.started(idx == 0 ? ta : tb);
    awaits.await(g, idx, cycle);
  }

  void after() { awaits.end(g); }
};

// ---------------------------------------------------------------------------
// three-activations: A, B, C; thread i's turn Ti starts and awaits the serial
// call queued on the next activation: TA -> CB, TB -> CC, TC -> CA. Any two of
// the awaits close no cycle, all three do. The edges stay until after().
// Checks: exactly one refused (the last to be checked), its cycle is the six hops.
struct ThreeActivations : rl::test_suite<ThreeActivations, 3> {
  static constexpr const char* kChecks =
      "TA->CB, TB->CC, TC->CA on three threads: exactly one refused, naming the six hops";
  Graph g;
  Lane lane[3];
  CallNode turn[3] = {{&lane[0], true, 1}, {&lane[1], true, 2}, {&lane[2], true, 3}};
  CallNode queued[3] = {{&lane[0], true, 11}, {&lane[1], true, 12}, {&lane[2], true, 13}};
  Edge edge[3] = {{&turn[0], &queued[1]}, {&turn[1], &queued[2]}, {&turn[2], &queued[0]}};
  bool began[3] = {false, false, false};

  void thread(unsigned idx) {
    const unsigned i = idx, j = (idx + 1) % 3, k = (idx + 2) % 3;
    g.started(turn[i]);
    std::vector<Hop> cycle = cycle_buffer();
    began[i] = begin_or_refused(g, edge[i], cycle,
                                {{&turn[i], false},
                                 {&queued[j], true},
                                 {&turn[j], false},
                                 {&queued[k], true},
                                 {&turn[k], false},
                                 {&queued[i], true}});
  }

  void after() {
    RL_ASSERT(int{began[0]} + int{began[1]} + int{began[2]} == 2);  // exactly one refused
    for (int i = 0; i < 3; ++i)
      if (began[i]) g.end_wait(edge[i]);
  }
};

// ---------------------------------------------------------------------------
// lane-handoff: a cycle that closes through the turn that took a lane over.
// TA holds A (started in before()), CA is queued on A. B's lane passes from TB
// to TB2 (serial calls on B, TB2 called before CB); CB is queued on B.
//  thread 0: TA awaits CB;
//  thread 1: TB settles and is freed, TB2 starts (the chain's hand-off) and
//            awaits CA.
// TA -> CB -(queued behind)-> TB2 -> CA -(queued behind)-> TA. Thread 0's walk
// may go through TB as it settles and is freed, or find B's lane between holders.
// The edges stay until after().
// Checks: exactly one refused, with every hop, whichever holder thread 0 saw;
// no access to the freed TB [WAIT-I2].
struct LaneHandoff : rl::test_suite<LaneHandoff, 2> {
  static constexpr const char* kChecks =
      "a cycle closing through the turn that took a lane over while the other await walks it: "
      "exactly one refused, naming every hop; the freed former holder is never read";
  Graph g;
  Lane la, lb;
  CallNode ta{&la, true, 1}, ca{&la, true, 2}, tb2{&lb, true, 4}, cb{&lb, true, 5};
  CallNode* tb = nullptr;  // freed by thread 1
  TwoWayCycle awaits{ta, cb, tb2, ca};  // TA -> CB, TB2 -> CA

  void before() {
    tb = new CallNode(&lb, true, 3);
    g.started(ta);
    g.started(*tb);
  }

  void thread(unsigned idx) {
    std::vector<Hop> cycle = cycle_buffer();
    if (idx == 1) hand_over(g, tb, tb2);
    awaits.await(g, idx, cycle);
  }

  void after() { awaits.end(g); }
};

// ---------------------------------------------------------------------------
// no-false-refusal: awaits that close no cycle, walked while the graph changes.
// TA holds A, TB holds B (each started by its thread); CB is the next serial call
// on B; IA is an interleaved call into A, queued: it waits for no turn
// [TURN-3.2].
//  thread 0: TA starts and awaits CB (kept until after());
//  thread 1: TB starts, awaits IA, ends that wait, settles and is freed; CB
//            starts (it takes B's lane over) and awaits IA.
// Thread 0's walk from CB meets CB queued behind TB (running, maybe awaiting IA,
// maybe settling), B's lane between holders, CB queued but already its lane's
// holder, or CB running, maybe awaiting IA: none reaches TA. TB -> IA would close
// a cycle if IA waited for TA; it does not.
// Checks: no await is refused [WAIT-I4]; no access to the freed TB [WAIT-I2].
struct NoFalseRefusal : rl::test_suite<NoFalseRefusal, 2> {
  static constexpr const char* kChecks =
      "awaits closing no cycle (an interleaved call waits for no turn; the callee takes its lane "
      "over) walked while the lane changes hands: none refused; the freed holder is never read";
  Graph g;
  Lane la, lb;
  CallNode ta{&la, true, 1}, cb{&lb, true, 3}, ia{&la, false, 4};
  CallNode* tb = nullptr;  // freed by thread 1
  Edge ta_cb{&ta, &cb}, cb_ia{&cb, &ia};

  void before() { tb = new CallNode(&lb, true, 2); }

  void thread(unsigned idx) {
    std::vector<Hop> cycle = cycle_buffer();
    if (idx == 0) {
      g.started(ta);
      RL_ASSERT(g.begin_wait(ta_cb, cycle));  // no cycle: a refusal is false
    } else {
      g.started(*tb);
      await_and_end(g, tb, &ia, cycle);
      hand_over(g, tb, cb);
      RL_ASSERT(g.begin_wait(cb_ia, cycle));
    }
  }

  void after() {
    g.end_wait(ta_cb);
    g.end_wait(cb_ia);
  }
};

// ---------------------------------------------------------------------------
// settle-vs-walk: walks through a lane holder that settles and is freed, and
// through a queued call that starts, while they happen.
// A's lane: H holds it (started in before()), Q is the next serial call on A.
// W and V are turns of two other activations; U is a running interleaved call of
// a fourth.
//  thread 0: W starts and awaits Q (kept until after());
//  thread 1: A's turns: H awaits U, ends that wait, settles and is freed; Q
//            starts and awaits W (kept until after());
//  thread 2: V starts, awaits Q (kept until after()).
// W's and V's walks from Q meet Q queued behind H (awaiting U or not), A's lane
// between holders, Q queued but its lane's holder, or Q running with or without
// its edge to W. W -> Q and Q -> W close a cycle once Q runs.
// Checks: exactly one of W -> Q and Q -> W is refused, with its two hops; H -> U
// and V -> Q are never refused [WAIT-I4]; no walker reads the freed H [WAIT-I2].
struct SettleVsWalk : rl::test_suite<SettleVsWalk, 3> {
  static constexpr const char* kChecks =
      "two walkers through a lane holder that settles and is freed and a queued call that "
      "starts: the freed holder is never read, no false refusal, W<->Q refused exactly once";
  Graph g;
  Lane la, lw, lv, lu;
  CallNode q{&la, true, 2}, w{&lw, true, 3}, v{&lv, true, 4}, u{&lu, false, 5};
  CallNode* h = nullptr;  // freed by thread 1
  Edge w_q{&w, &q}, q_w{&q, &w}, v_q{&v, &q};
  bool began_w = false, began_q = false;

  void before() {
    h = new CallNode(&la, true, 1);
    g.started(*h);
    g.started(u);
  }

  void thread(unsigned idx) {
    std::vector<Hop> cycle = cycle_buffer();
    if (idx == 0) {
      g.started(w);
      began_w = begin_or_refused(g, w_q, cycle, {{&w, false}, {&q, false}});
    } else if (idx == 1) {
      await_and_end(g, h, &u, cycle);
      hand_over(g, h, q);
      began_q = begin_or_refused(g, q_w, cycle, {{&q, false}, {&w, false}});
    } else {
      g.started(v);
      RL_ASSERT(g.begin_wait(v_q, cycle));  // nothing waits for V
    }
  }

  void after() {
    RL_ASSERT(began_w != began_q);  // exactly one refused
    if (began_w) g.end_wait(w_q);
    if (began_q) g.end_wait(q_w);
    g.end_wait(v_q);
  }
};

// ---------------------------------------------------------------------------
// end-wait: inserts and removals on one node's edge list racing with a walk of
// it. X holds lane LX; its turn's two Scope children share X's node, so two
// threads await from X at once. P is a serial call queued on LY, whose holder is
// Y; R is an interleaved call, queued; Q is a serial call queued on LX.
//  thread 0: X awaits P, then ends that wait (the edge is freed);
//  thread 1: X awaits R (kept until after());
//  thread 2: Y awaits Q, then ends that wait (the edge is freed).
// X -> P -(queued behind)-> Y and Y -> Q -(queued behind)-> X: thread 0's and
// thread 2's awaits close a cycle while both are in; thread 2's walk goes
// through X's list while threads 0 and 1 insert into it and remove from it.
// Checks: X -> R is never refused; of X -> P and Y -> Q, a refusal has the four
// hops and both are never in at once (Overlap); after all threads: X -> R is
// still in (probe R -> X refused), and after its end_wait X has no edge left
// (probe R -> X accepted, reading no freed edge); no walker follows a freed edge;
// no leak.
struct EndWait : rl::test_suite<EndWait, 3> {
  static constexpr const char* kChecks =
      "two awaits from one node inserted and removed while a third walks its edge list: no "
      "lost or stale edge, no cycle ever in the graph, every edge removed, nothing leaked";
  Graph g;
  Lane lx, ly, lr;
  CallNode x{&lx, true, 1}, y{&ly, true, 2}, p{&ly, true, 3}, q{&lx, true, 4}, r{&lr, false, 5};
  Edge x_r{&x, &r};
  bool began_x_r = false;
  Overlap overlap;

  void before() {
    g.started(x);
    g.started(y);
  }

  void thread(unsigned idx) {
    std::vector<Hop> cycle = cycle_buffer();
    if (idx == 0) {
      await_then_end(0, x, p, cycle, {{&x, false}, {&p, true}, {&y, false}, {&q, true}});
    } else if (idx == 1) {
      began_x_r = g.begin_wait(x_r, cycle);
      RL_ASSERT(began_x_r);  // R waits for nothing
    } else {
      await_then_end(1, y, q, cycle, {{&y, false}, {&q, true}, {&x, false}, {&p, true}});
    }
  }

  // Thread 0's or thread 2's await (Overlap side i), ended at once; a refusal
  // has the expected hops.
  void await_then_end(int i, CallNode& from, CallNode& to, std::vector<Hop>& cycle,
                      std::initializer_list<Hop> expected) {
    Edge* e = await_call(g, &from, &to, cycle);
    if (e == nullptr) {
      check_refusal(cycle, expected);
      return;
    }
    overlap.begun(i);
    end_await(g, e);
  }

  // An await from `from` to `to` that is ended at once; returns whether it began.
  bool probe(CallNode& from, CallNode& to) {
    std::vector<Hop> cycle = cycle_buffer();
    Edge e(&from, &to);
    const bool began = g.begin_wait(e, cycle);
    if (began) g.end_wait(e);
    return began;
  }

  void after() {
    if (!began_x_r) return;
    RL_ASSERT(!probe(r, x));  // X -> R is still in X's list: no lost edge
    g.end_wait(x_r);
    // X has no edge left: the walk from X finds none to R, and it would read any
    // edge left behind by an end_wait(), each freed by now (access to freed memory).
    RL_ASSERT(probe(r, x));
  }
};

}  // namespace

// Default searches: full where it takes seconds (two-activations: 4.6 M
// executions, ~9 s, since each walk counts itself in walkers_ [WAIT-I2]);
// otherwise a bound and a random sample (ci/model-long runs the deeper ones:
// lane-handoff full is 11.3 M executions, ~27 s). settle-vs-walk and
// end-wait run their random sample first: it finds the planted bugs they are
// meant for (SETTLE_UNLOCKED, UNLINK_AS_HEAD) within a few executions, where the
// bounded tree search needs bound 1 and about a million executions.
TURNSTILE_MODEL_MAIN("wait_graph", {
    suite<TwoActivations, "two-activations">({full_search(), random_search(50000)}),
    suite<ThreeActivations, "three-activations">({bounded(0), random_search(50000)}),
    suite<LaneHandoff, "lane-handoff">({bounded(4), random_search(50000)}),
    suite<NoFalseRefusal, "no-false-refusal">({bounded(2), random_search(50000)}),
    suite<SettleVsWalk, "settle-vs-walk">({random_search(50000), bounded(0)}),
    suite<EndWait, "end-wait">({random_search(50000), bounded(0)}),
})
