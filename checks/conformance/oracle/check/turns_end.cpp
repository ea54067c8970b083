// oracle/check/turns_end.cpp: what the actor-turn checker reports at `end`
// (the model: turns.cpp): the cycles of waits still open and what is
// stuck behind them, calls that waited where the lanes say they must not
// ([TURN-3.2]), and calls and turns that never settled ([TURN-2.1]).
#include <algorithm>

#include "oracle/check/turns.hpp"

namespace turnstile::oracle::detail {

void TurnChecker::at_end(const Event& end) {
  stuck_at_end(end);
  lanes_waited_at_end(end);
  for (auto& [key, c] : calls_) {
    const std::string scope = "act:" + c.act;
    if (c.refused != 0) continue;
    if (c.start == 0) {  // [TURN-2.1] every call starts (a refused await does not cancel it)
      if (stuck_.count(&c) != 0 || waited_.count(&c) != 0) continue;  // part of a reported hang
      r_.unsettled.push_back({{c.reentry ? "TURN-5.2" : "TURN-2.1", {c.line, end.line},
                               "call " + q(c.id) + " on activation " + q(c.act) +
                                   " never started its turn before `end`", false, cause_of(&c)},
                              "", scope});
    } else if (c.end == 0) {  // [TURN-2.1] every started turn ends
      r_.unsettled.push_back({{c.reentry ? "TURN-5.2" : "TURN-2.1", {c.start, end.line},
                               "turn of call " + q(c.id) + " on activation " + q(c.act) +
                                   " never ended before `end`", false, cause_of(&c)},
                              c.start_fiber, "", true});
      if (c.serial) r_.open_turns.emplace_back(scope, c.start_fiber);
    }
  }
}

// [TURN-3.2] at `end`: a call that never started although an open turn of
// its own activation awaits it, where the lanes say it must not wait for
// that turn: an interleaved call awaited by the serial turn (it starts at
// once), or the next serial call awaited by an interleaved turn while no
// serial turn is open (no serial turn waits for an interleaved one). That
// is a hang the wait-for relation of [TURN-7.1] does not have; the awaiting
// turn, and what is queued behind the call, are its consequences.
void TurnChecker::lanes_waited_at_end(const Event& end) {
  for (auto& [key, c] : calls_) {
    if (c.refused != 0 || c.start != 0 || stuck_.count(&c) != 0) continue;
    const Activation& a = activations_[c.act];
    for (const Await* w : c.awaited_by) {
      const Call* holder = w->waiter;
      if (holder == nullptr || holder->act != c.act || holder->start == 0 || holder->end != 0) continue;
      const bool interleaved_behind_serial = !c.serial && holder->serial;
      const bool serial_behind_interleaved = c.serial && !holder->serial && a.open_serial.empty() &&
                                             !a.queue.empty() && a.queue.front() == &c;
      if (!interleaved_behind_serial && !serial_behind_interleaved) continue;
      const Cause root{"TURN-3.2", {c.line, holder->start, w->line, end.line}};
      r_.unsettled.push_back(
          {{"TURN-3.2", root.lines,
            std::string(c.serial ? "serial" : "interleaved") + " call " + q(c.id) + " on activation " +
                q(c.act) + " never started while " + (holder->serial ? "serial" : "interleaved") +
                " turn " + q(holder->id) + " awaited it: " +
                (c.serial ? "no serial turn waits for an interleaved one"
                          : "an interleaved call starts at once, without waiting for the serial turn"),
            false},
           "", ""});
      waited_.insert(&c);
      consequence_.emplace(holder, root);
      if (c.serial) {
        for (const Call* behind : a.queue)
          if (behind != &c) consequence_.emplace(behind, root);
      }
      break;
    }
  }
}

std::optional<Cause> TurnChecker::cause_of(const Call* c) const {
  const auto it = consequence_.find(c);
  if (it == consequence_.end()) return std::nullopt;
  return it->second;
}

// At `end`: every cycle of waits still open is reported (once: one closed by
// an unrefused await was reported there), and every call that waits for one
// is stuck in that hang: what it leaves unsettled is not reported again.
void TurnChecker::stuck_at_end(const Event& end) {
  // Peel off every unsettled call that cannot reach a cycle (it waits for
  // nothing, or only for calls peeled already); what remains is on a cycle
  // of waits or waits for one.
  std::map<const Call*, std::size_t> out;
  std::map<const Call*, std::vector<const Call*>> waiters;
  std::vector<const Call*> free;
  for (auto& [key, c] : calls_) {
    std::vector<Hop> next;
    successors(&c, next);
    out[&c] = next.size();
    for (const Hop& h : next) waiters[h.node].push_back(&c);
    if (next.empty()) free.push_back(&c);
  }
  while (!free.empty()) {
    const Call* n = free.back();
    free.pop_back();
    for (const Call* w : waiters[n])
      if (--out[w] == 0) free.push_back(w);
  }
  for (const auto& [c, left] : out)
    if (left != 0) stuck_.insert(c);
  // Report each cycle not reported yet: walk from a stuck call along stuck
  // successors until a call repeats.
  std::set<const Call*> walked;
  for (const Call* s : stuck_) {
    if (walked.count(s) != 0) continue;
    std::vector<Hop> trail;
    std::map<const Call*, std::size_t> at;
    Call* n = const_cast<Call*>(s);
    while (at.count(n) == 0 && walked.count(n) == 0) {
      at[n] = trail.size();
      walked.insert(n);
      std::vector<Hop> next;
      successors(n, next);
      const auto it = std::find_if(next.begin(), next.end(),
                                   [&](const Hop& h) { return stuck_.count(h.node) != 0; });
      if (it == next.end()) break;  // cannot happen: a stuck call waits for a stuck call
      trail.push_back(Hop{n, it->via});
      n = it->node;
    }
    if (at.count(n) == 0) continue;  // joined a walk already done
    const std::vector<Hop> cycle(trail.begin() + static_cast<std::ptrdiff_t>(at[n]), trail.end());
    bool known = false;
    for (const auto& r : reported_)
      for (const Hop& h : cycle) known = known || r.count(h.node->line) != 0;
    if (!known) report_cycle(cycle, {end.line}, "it is still open at `end`: a possible hang");
  }
  for (const Call* c : stuck_) {
    if (c->start != 0) r_.stuck_fibers.insert(c->start_fiber);
    for (const Await& a : c->awaits) r_.stuck_fibers.insert(a.fiber);  // (not refused) it waits forever
  }
}

}  // namespace turnstile::oracle::detail
