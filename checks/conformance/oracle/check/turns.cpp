// oracle/check/turns.cpp: the actor-turn rules of spec/trace-format.md section
// 5, checked per activation, and the wait-for relation of [TURN-7.1] across
// activations. This file: calls, turns and what is kept;
// turns_waits.cpp: positions, awaits and cycles; turns_end.cpp:
// what is left at `end`; turns_stream.cpp: the read-ahead for refusals.
//
// A call is queued from its `turn.call` to its `turn.start`, running until its
// `turn.end`, then settled. A call is never refused at the call: a
// `turn.refused` (format 1 keeps it parseable) is itself a TURN-7.1 violation,
// and settles the call.
//
// The wait-for relation is rebuilt from the trace ([TURN-7.1]):
//   - a `turn.await` on fiber F is attributed to the innermost turn F is part
//     of: the innermost actor turn F itself opened (`turn.start` .. `turn.end`),
//     nothing inside a lane turn F opened (a lane turn starts with no actor
//     turn), else, for a structured child (`fiber.spawn` with structured: true),
//     what its parent was part of at the spawn. Handoffs (structured: false)
//     and root fibers are part of no turn. That turn waits for the awaited call
//     from the `turn.await` until the call's `turn.end` (an edge);
//   - a queued serial call waits for the serial turn open on its activation
//     (the holder); a running call waits for the calls it awaits; queued
//     interleaved, settled and refused calls wait for nothing.
// An await that is not refused and closes a cycle of that relation is a
// possible hang; a `turn.await_refused` whose await closes no cycle is a false
// refusal. Which awaits are refused is read ahead: a refusal answers the await
// that is its fiber's previous event (the awaiting fiber emits nothing between
// the two), so StreamingTurns holds the checker's events back from such an
// await, which may still become a wait edge, until its fiber's next event says
// whether it was refused: a refused await never becomes an edge, so two awaits
// racing to close one cycle are judged as the runtime judged them (the one
// refused is the one that would have closed it), whatever the order their
// `turn.await` lines were written in.
//
// A `turn.reentry` is a serial call ([TURN-5.2]); a violation of TURN-2.x or
// TURN-3.1 involving one is reported as TURN-5.2.
//
// Also: a turn lasts until its result settles, so it does not end while its
// body still awaits a call ([TURN-1.1]; an await its fiber abandoned, the
// optional `turn.await_abandoned`, waits no more); an interleaved call waits for no
// serial turn and no serial call waits for an interleaved turn ([TURN-3.2],
// judged at `end` on what never started); a turn is reported slow at most once
// and only once started ([TURN-4.2]); the counters a runtime reports in
// `turn.counters` match the calls, starts, ends and slow reports of the trace
// ([TURN-2.3]); every call of a method on an activation has the same mode
// ([TURN-3.3]); and no await begins inside a lane turn ([LANE-8.10]).
//
// State is what is open: a call is kept from its `turn.call` until it is
// settled (its turn ended, or it was refused), then among the last
// kSettledWindow settled calls, then forgotten (as lane items are). An await
// is kept while its call is not settled and it was not refused (it may be an
// edge, or leave its fiber stuck at `end`), and is dropped when the call ends.
// Nothing open names a settled call: queues, open turns and positions drop it
// when it ends, a live edge into it ends with it, and when it is forgotten its
// own edges out (a turn that ended while still awaiting: [TURN-1.1], already
// reported) are dropped and the structured children spawned in its turn are
// part of no turn any more (a settled turn waits for nothing, so no cycle
// changes). Only an event that repeats one of its events names it again, and
// gets its exact message while it is in the window. Also kept, bounded by
// fibers, activations and methods rather than by events: each fiber's
// position and its last await (for the refusal that may answer it), the turn
// a structured child was spawned in, the tasks started per activation (format
// 1 has no event for a task's end), each method's mode, each activation's
// counters, and the calls of each cycle reported (one entry per violation).
#include "oracle/check/turns.hpp"

#include <algorithm>

namespace turnstile::oracle::detail {

std::size_t TurnChecker::retained() const {
  std::size_t n = calls_.size() + settled_.size() + activations_.size() + last_await_.size() +
                  inherited_.size() + reported_.size();
  for (const auto& [key, c] : calls_) n += c.awaits.size() + c.children.size() + c.awaiters.size();
  for (const auto& [fiber, pos] : position_) n += pos.empty() ? 0 : 1;
  for (const auto& [act, tasks] : tasks_) n += tasks.size();
  return n;
}

bool TurnChecker::may_wait(const Event& e) const {
  const auto it = calls_.find(e.str("act") + '\n' + e.str("call"));
  return it != calls_.end() && it->second.end == 0 && it->second.refused == 0 &&
         part_of(e.fiber) != nullptr;
}

void TurnChecker::on_event(const Event& e) {
  switch (e.kind) {
    case EventKind::kFiberSpawn: return spawn(e);
    case EventKind::kLaneTurnStart: return position_[e.fiber].push_back(nullptr);  // no actor turn
    case EventKind::kLaneTurnEnd: return leave_lane(e.fiber);
    default: break;
  }
  if (!is_turn_event(e.kind)) return;
  // The read-ahead's answers for this line, taken whatever happens below.
  bool refused_await = false;
  std::optional<std::size_t> paired;  // of a refusal: its await's line
  if (e.kind == EventKind::kTurnAwait) {
    refused_await = refusals_.of_await.erase(e.line) != 0;
  } else if (e.kind == EventKind::kTurnAwaitRefused) {
    if (const auto p = refusals_.of_refusal.find(e.line); p != refusals_.of_refusal.end()) {
      paired = p->second;
      refusals_.of_refusal.erase(p);
      refusals_.of_await.erase(*paired);  // read already, when it could not wait
    }
  }
  const std::string& act = e.str("act");
  if (e.kind == EventKind::kTurnCounters) return counters(e, act);
  if (e.kind == EventKind::kTurnTaskStart) {
    tasks_[act].insert(e.str("task"));
    return;
  }
  const std::string& id = e.str("call");
  const std::string key = act + '\n' + id;
  if (e.kind == EventKind::kTurnCall || e.kind == EventKind::kTurnReentry) return call(e, act, id, key);
  const auto it = calls_.find(key);
  if (it == calls_.end()) {  // [TURN-2.1] nothing happens to a call never made
    r_.add("TURN-2.1", {e.line}, e.ev + " of call " + q(id) + " on activation " + q(act) +
                                     ", which was never made");
    return;
  }
  Call& c = it->second;
  switch (e.kind) {
    case EventKind::kTurnRefused: refused(e, c); break;
    case EventKind::kTurnStart: start(e, c); break;
    case EventKind::kTurnEnd: end(e, c); break;
    case EventKind::kTurnAwait: await(e, c, refused_await); break;
    case EventKind::kTurnAwaitRefused: await_refused(e, c, paired); break;
    case EventKind::kTurnAwaitAbandoned: await_abandoned(e, c); break;
    case EventKind::kTurnSlow: slow(e, c); break;
    default: break;
  }
  if (!c.settled && (c.end != 0 || c.refused != 0)) settle(it);
}

// ----------------------------------------------------------- settled window
void TurnChecker::settle(std::map<std::string, Call>::iterator it) {
  it->second.settled = true;
  settled_.push_back(it);
  if (settled_.size() <= kSettledWindow) return;
  forget(settled_.front());
  settled_.pop_front();
}

// Forgets a settled call; nothing open names it (see the top of the file).
void TurnChecker::forget(std::map<std::string, Call>::iterator it) {
  Call& c = it->second;
  const auto drop = [](std::vector<Await*>& list, const Await* a) {
    list.erase(std::remove(list.begin(), list.end(), a), list.end());
  };
  for (Await* a : c.waits) {  // edges out of a turn that ended awaiting: already reported
    drop(a->target->awaited_by, a);
    a->edge = false;
    a->waiter = nullptr;
  }
  for (Await* a : c.awaited_by) drop(a->waiter->waits, a);  // into a refused call
  for (const std::string& child : c.children) {
    const auto in = inherited_.find(child);
    if (in != inherited_.end() && in->second == &c) in->second = nullptr;
  }
  by_line_.erase(c.line);
  calls_.erase(it);
}

// ------------------------------------------------------------------ calls
void TurnChecker::call(const Event& e, const std::string& act, const std::string& id, const std::string& key) {
  const bool reentry = e.kind == EventKind::kTurnReentry;
  if (const auto made = calls_.find(key); made != calls_.end()) {  // [TURN-2.1] a call id is one call
    r_.add(reentry ? "TURN-5.2" : "TURN-2.1", {made->second.line, e.line},
           "call " + q(id) + " on activation " + q(act) + " was made twice");
    return;
  }
  Call& c = calls_[key];
  c.act = act;
  c.id = id;
  c.fiber = e.fiber;
  c.line = e.line;
  c.reentry = reentry;
  c.serial = reentry || e.str("mode") == "serial";  // [TURN-5.2] a re-entry is serial
  by_line_[c.line] = &c;
  if (!reentry) {  // [TURN-3.3] the activation or the method chooses the lane, never the caller
    const auto [it, first] = modes_.try_emplace(act + '\n' + e.str("method"), c.serial, e.line);
    if (!first && it->second.first != c.serial) {
      r_.add("TURN-3.3", {it->second.second, e.line},
             "call " + q(id) + " of method " + q(e.str("method")) + " on activation " + q(act) +
                 " was made " + (c.serial ? "serial" : "interleaved") + " but an earlier call of the "
                 "same method was " + (c.serial ? "interleaved" : "serial") + "; every caller of a "
                 "method gets the same lane");
    }
  }
  if (reentry) {
    const auto& started = tasks_[act];
    if (started.count(e.str("task")) == 0) {
      r_.add("TURN-5.2", {e.line}, "turn re-entry " + q(id) + " on activation " + q(act) +
                                       " from task " + q(e.str("task")) + ", which was never started");
    }
  }
  if (c.serial) activations_[act].queue.push_back(&c);  // [TURN-7.1] a call always queues
}

void TurnChecker::refused(const Event& e, Call& c) {
  if (c.refused != 0 || c.start != 0) {
    r_.add("TURN-2.1", {c.refused != 0 ? c.refused : c.start, e.line},
           "call " + q(c.id) + " on activation " + q(c.act) + " was answered twice");
    return;
  }
  c.refused = e.line;
  dequeue(c);
  // [TURN-7.1] the check belongs to the await: call() always queues.
  r_.add("TURN-7.1", {c.line, e.line},
         std::string(c.serial ? "serial" : "interleaved") + " call " + q(c.id) + " on activation " +
             q(c.act) + " was refused at the call (`turn.refused`); a call always queues, and only "
             "an await that would close a cycle of waits is refused (`turn.await_refused`)");
}

void TurnChecker::start(const Event& e, Call& c) {
  if (c.refused != 0 || c.start != 0) {  // [TURN-2.1] exactly once, never after a refusal
    r_.add("TURN-2.1", {c.refused != 0 ? c.refused : c.start, e.line},
           "turn of call " + q(c.id) + " on activation " + q(c.act) +
               (c.refused != 0 ? " started after the call was refused" : " started twice"));
    return;
  }
  c.start = e.line;
  c.start_fiber = e.fiber;
  position_[e.fiber].push_back(&c);
  Activation& a = activations_[c.act];
  ++a.running;
  if (!c.serial) {  // an interleaved turn waits for nothing ([TURN-3.2])
    a.open_interleaved.push_back(&c);
    return;
  }
  if (!a.open_serial.empty()) {  // [TURN-3.1] one serial turn at a time
    const Call& other = *a.open_serial.back();
    r_.add(c.reentry || other.reentry ? "TURN-5.2" : "TURN-3.1", {other.start, e.line},
           "serial turn of call " + q(c.id) + " on activation " + q(c.act) +
               " started while serial turn " + q(other.id) + " was still open");
  }
  if (!a.queue.empty() && a.queue.front() != &c) {  // [TURN-2.2] in call order
    const Call& first = *a.queue.front();
    r_.add(c.reentry || first.reentry ? "TURN-5.2" : "TURN-2.2", {first.line, c.line, e.line},
           "serial turn of call " + q(c.id) + " on activation " + q(c.act) +
               " started before call " + q(first.id) + ", which was made earlier");
  }
  dequeue(c);
  a.open_serial.push_back(&c);
}

void TurnChecker::end(const Event& e, Call& c) {
  if (c.start == 0 || c.end != 0) {  // [TURN-2.1]
    r_.add("TURN-2.1", {c.end != 0 ? c.end : c.line, e.line},
           "turn of call " + q(c.id) + " on activation " + q(c.act) +
               (c.end != 0 ? " ended twice" : " ended without having started"));
    return;
  }
  if (!c.waits.empty()) {  // [TURN-1.1] a turn lasts until its result settles
    std::vector<std::size_t> lines{c.start, e.line};
    for (const Await* w : c.waits) lines.push_back(w->line);
    r_.add("TURN-1.1", lines,
           "turn of call " + q(c.id) + " on activation " + q(c.act) +
               " ended while its body was still awaiting call " + q(c.waits.front()->target->id) +
               " on " + q(c.waits.front()->target->act) + "; a turn ends when its result settles, "
               "not at its first await");
  }
  c.end = e.line;
  auto& pos = position_[c.start_fiber];  // (an emptied entry is kept for reuse: a fiber in no turn)
  pos.erase(std::remove(pos.begin(), pos.end(), &c), pos.end());
  Activation& act = activations_[c.act];
  --act.running;
  ++act.completed;
  auto& open = act.open_serial;
  open.erase(std::remove(open.begin(), open.end(), &c), open.end());
  auto& inter = act.open_interleaved;
  inter.erase(std::remove(inter.begin(), inter.end(), &c), inter.end());
  // The awaits of this call are over: their waiters resume after this event.
  for (Await* a : c.awaited_by) {
    a->edge = false;
    auto& w = a->waiter->waits;
    w.erase(std::remove(w.begin(), w.end(), a), w.end());
  }
  c.awaited_by.clear();
  c.awaits.clear();  // none waits any more, none can be refused any more
}

void TurnChecker::dequeue(const Call& c) {
  auto& queue = activations_[c.act].queue;
  queue.erase(std::remove(queue.begin(), queue.end(), &c), queue.end());
}

// [TURN-4.2] a turn is reported slow at most once, and only once it started.
// (A report may follow its `turn.end`: check_slow_turns() decides under the
// activation's lock and reports after releasing it.)
void TurnChecker::slow(const Event& e, Call& c) {
  ++activations_[c.act].slow;
  if (c.slow != 0) {
    r_.add("TURN-4.2", {c.slow, e.line},
           "turn of call " + q(c.id) + " on activation " + q(c.act) +
               " was reported slow twice; a slow turn is reported exactly once");
    return;
  }
  c.slow = e.line;
  if (c.start == 0) {
    r_.add("TURN-4.2", {c.line, e.line},
           "call " + q(c.id) + " on activation " + q(c.act) +
               " was reported slow before its turn started");
  }
}

// [TURN-2.3] the counters the runtime reports are the trace's own: queued =
// serial calls made whose turns have not started, running = turns started
// and not settled, completed = turns settled, slow = slow reports.
void TurnChecker::counters(const Event& e, const std::string& act) {
  const Activation& a = activations_[act];
  const std::int64_t queued = static_cast<std::int64_t>(a.queue.size());
  std::string wrong;
  const auto compare = [&](const char* field, std::int64_t derived) {
    if (!e.has(field)) return;
    const Value& reported = e.value(field);  // an integer (validated)
    if (reported != Value(derived))
      wrong += std::string(wrong.empty() ? "" : ", ") + field + " " + show_value(reported) +
               " (the trace says " + std::to_string(derived) + ")";
  };
  compare("queued", queued);
  compare("running", a.running);
  compare("completed", a.completed);
  compare("slow", a.slow);
  if (!wrong.empty()) {
    r_.add("TURN-2.3", {e.line},
           "activation " + q(act) + " reported counters that disagree with its calls and turns: " + wrong);
  }
}

}  // namespace turnstile::oracle::detail
