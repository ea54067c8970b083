// oracle/check/turns_waits.cpp: the awaits of the actor-turn checker and the
// wait-for relation of [TURN-7.1] (the model: turns.cpp): an await that
// closes a cycle and was not refused is a possible hang, a refusal of one that
// closes none is a false refusal; and the position of each fiber (the turn an
// await is attributed to).
#include <algorithm>

#include "oracle/check/turns.hpp"

namespace turnstile::oracle::detail {

// Positions: which turn code on a fiber is part of, to attribute its awaits.
void TurnChecker::spawn(const Event& e) {
  if (!e.flag("structured")) return;  // a handoff is part of no turn
  const std::string& child = e.str("child");
  if (const auto p = position_.find(child); p != position_.end() && !p->second.empty()) return;
  if (inherited_.count(child) != 0) return;  // FL-3.2/3.4 report it
  Call* in = part_of(e.fiber);  // a Scope child counts as its parent's turn
  inherited_[child] = in;
  if (in != nullptr) in->children.push_back(child);
}

void TurnChecker::leave_lane(const std::string& fiber) {
  auto& pos = position_[fiber];
  const auto it = std::find(pos.rbegin(), pos.rend(), nullptr);
  if (it != pos.rend()) pos.erase(std::next(it).base());
}

// The turn that code on `fiber` is part of now, or null.
TurnChecker::Call* TurnChecker::part_of(const std::string& fiber) const {
  if (const auto p = position_.find(fiber); p != position_.end() && !p->second.empty())
    return p->second.back();  // null inside a lane turn
  const auto i = inherited_.find(fiber);
  return i == inherited_.end() ? nullptr : i->second;
}

// ------------------------------------------------------------------ awaits
void TurnChecker::await(const Event& e, Call& c, bool refused) {
  if (const auto p = position_.find(e.fiber);
      p != position_.end() && std::find(p->second.begin(), p->second.end(), nullptr) != p->second.end()) {
    // [LANE-8.10] a lane turn runs to its end without waiting: an await in
    // it would let readers outside see its changes half made.
    r_.add("LANE-8.10", {e.line},
           "fiber " + q(e.fiber) + " began to await call " + q(c.id) + " on activation " + q(c.act) +
               " inside a lane turn; a lane turn runs to its end without waiting");
  }
  Call* waiter = part_of(e.fiber);
  AwaitNote& note = last_await_[e.fiber];  // for the refusal that may answer it
  note.line = e.line;
  note.waiter = waiter == nullptr ? 0 : waiter->line;
  if (waiter != nullptr) {
    note.waiter_id = waiter->id;
    note.waiter_act = waiter->act;
    note.waiter_start = waiter->start;
  }
  // A refused await never waits: it is judged at its refusal. An await of a
  // call already settled waits for nothing.
  if (!refused && std::find(c.awaiters.begin(), c.awaiters.end(), e.fiber) == c.awaiters.end())
    c.awaiters.push_back(e.fiber);  // (a late `turn.await_abandoned` of it is legal)
  if (refused || c.end != 0 || c.refused != 0) return;
  Await& a = c.awaits.emplace_back();
  a.fiber = e.fiber;
  a.waiter = waiter;
  a.target = &c;
  a.line = e.line;
  if (waiter == nullptr) return;  // no turn waits (its fiber may still be stuck at `end`)
  std::vector<Hop> path;
  const bool closes = find_path(&c, waiter, path);
  a.edge = true;
  waiter->waits.push_back(&a);
  c.awaited_by.push_back(&a);
  if (!closes) return;
  path.insert(path.begin(), Hop{waiter, &a});
  report_cycle(path, {}, "the await at line " + std::to_string(e.line) +
                             " closes it and was not refused: a possible hang");
}

void TurnChecker::await_refused(const Event& e, Call& c, std::optional<std::size_t> paired) {
  if (!paired) {  // [TURN-7.1] an answer to no await
    r_.add("TURN-7.1", {c.line, e.line},
           "refusal of an await of call " + q(c.id) + " on activation " + q(c.act) + " by fiber " +
               q(e.fiber) + ", which began no await of it");
    return;
  }
  const auto found = last_await_.find(e.fiber);
  if (found == last_await_.end() || found->second.line != *paired) return;  // its await named a call never made: reported there
  const AwaitNote& note = found->second;
  // Answered: the await never waits (it was read before its refusal was
  // known only when it could not wait, so it holds no edge).
  const auto a = std::find_if(c.awaits.begin(), c.awaits.end(), [&](const Await& w) { return w.line == note.line; });
  if (a != c.awaits.end() && !a->edge) c.awaits.erase(a);
  const std::string what = "the await of call " + q(c.id) + " on activation " + q(c.act) +
                           " by fiber " + q(e.fiber) + " was refused";
  std::vector<std::size_t> lines = {c.line, note.line, e.line};
  if (note.waiter == 0) {  // [TURN-7.1] no turn waits: nothing can wait for it
    r_.add("TURN-7.1", lines, what + " but that fiber is part of no turn, so the await closes no "
                                     "cycle of waits (a false refusal)");
    return;
  }
  // A waiter forgotten (settled) waits for nothing, so closes no cycle.
  const auto w = by_line_.find(note.waiter);
  std::vector<Hop> path;
  if (c.end != 0 || c.refused != 0 || w == by_line_.end() || !find_path(&c, w->second, path)) {
    lines.push_back(note.waiter_start);
    r_.add("TURN-7.1", lines, what + " but turn " + q(note.waiter_id) + " of " + q(note.waiter_act) +
                                  " awaiting it closes no cycle of waits (a false refusal)");
  }
}

// An await abandoned (the optional `turn.await_abandoned`): the fiber gave up
// waiting for call `c` (a request timeout, a cancellation) and goes on. The
// call is not cancelled: it must still start and end ([TURN-2.1]). From this
// line the await waits no more: its turn may end ([TURN-1.1]) and no cycle
// runs through it. A cycle it closed was reported at the await, as a possible
// hang; the abandon is how the runtime left it, so the turn's end after it is
// no second root (spec/trace-format.md section 1.3).
void TurnChecker::await_abandoned(const Event& e, Call& c) {
  const auto a = std::find_if(c.awaits.begin(), c.awaits.end(), [&](const Await& w) { return w.fiber == e.fiber; });
  if (a == c.awaits.end()) {
    // The call settled first (a result that came after the waiter's timeout
    // had fired): that fiber's await was over at the `turn.end`; nothing to end.
    if ((c.end != 0 || c.refused != 0) &&
        std::find(c.awaiters.begin(), c.awaiters.end(), e.fiber) != c.awaiters.end())
      return;
    // [TURN-1.1] an abandon answers an await of its own fiber; one that answers
    // none would hide a turn that ends while it still waits.
    r_.add("TURN-1.1", {c.line, e.line},
           "await of call " + q(c.id) + " on activation " + q(c.act) + " abandoned by fiber " + q(e.fiber) +
               (c.end != 0 || c.refused != 0 ? ", which never awaited it" : ", which was not awaiting it"));
    return;
  }
  if (a->edge) {
    auto& out = a->waiter->waits;
    out.erase(std::remove(out.begin(), out.end(), &*a), out.end());
    auto& in = c.awaited_by;
    in.erase(std::remove(in.begin(), in.end(), &*a), in.end());
  }
  c.awaits.erase(a);
}

// The calls `n` waits for now, and how.
void TurnChecker::successors(Call* n, std::vector<Hop>& out) const {
  if (n->refused != 0 || n->end != 0) return;  // settled: waits for nothing
  if (n->start == 0) {
    if (!n->serial) return;  // a queued interleaved call waits for no turn [TURN-3.2]
    const auto a = activations_.find(n->act);
    if (a == activations_.end() || a->second.open_serial.empty()) return;
    Call* holder = a->second.open_serial.back();
    if (holder != n) out.push_back(Hop{holder, nullptr});
    return;
  }
  for (const Await* w : n->waits) out.push_back(Hop{w->target, w});
}

// Depth first from `from` to `goal` (iterative: a trace may hold long
// chains of waits); on success `path` holds the hops from `from` to the last
// node before `goal` (each hop: the node and how it waits for the next).
bool TurnChecker::find_path(Call* from, const Call* goal, std::vector<Hop>& path) const {
  if (from == goal) return true;
  struct Frame {
    Call* node;
    std::vector<Hop> next;
    std::size_t at = 0;
  };
  std::set<const Call*> seen = {from};
  std::vector<Frame> stack(1, Frame{from, {}});
  successors(from, stack.back().next);
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.at == f.next.size()) {
      stack.pop_back();
      continue;
    }
    const Hop h = f.next[f.at++];
    if (h.node == goal || seen.insert(h.node).second) {
      if (h.node == goal) {
        for (const Frame& g : stack) path.push_back(Hop{g.node, g.next[g.at - 1].via});
        return true;
      }
      Frame child{h.node, {}};
      successors(h.node, child.next);
      stack.push_back(std::move(child));
    }
  }
  return false;
}

namespace {
std::string describe(const TurnCall& c, bool as_turn) {
  return (as_turn ? "turn " : "call ") + q(c.id) + (as_turn ? " of " : " into ") + q(c.act) +
         (c.serial ? "" : " (interleaved)");
}
}  // namespace

// Reports the cycle `hops` (each hop waits for the next, the last for the
// first) under TURN-7.1 with the lines of every hop, once per set of calls.
void TurnChecker::report_cycle(const std::vector<Hop>& hops, std::vector<std::size_t> lines,
                               const std::string& why) {
  std::set<std::size_t> nodes;
  for (const Hop& h : hops) nodes.insert(h.node->line);
  if (!reported_.insert(nodes).second) return;
  std::string msg = "a cycle of waits: ";
  for (std::size_t i = 0; i < hops.size(); ++i) {
    const Call& n = *hops[i].node;
    const Call& next = *hops[(i + 1) % hops.size()].node;
    lines.push_back(n.start != 0 ? n.start : n.line);
    if (hops[i].via != nullptr) lines.push_back(hops[i].via->line);
    msg += i == 0 ? describe(n, true) + " " : std::string(", which ");
    msg += hops[i].via != nullptr ? "awaits " + describe(next, false)
                                  : "is queued behind " + describe(next, true);
  }
  r_.add("TURN-7.1", lines, msg + "; " + why);
  r_.violations.back().hang = true;  // a cycle of waits never ends (section 4, "Attribution", A4)
}

}  // namespace turnstile::oracle::detail
