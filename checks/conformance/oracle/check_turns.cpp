// oracle/check_turns.cpp: the actor-turn rules of spec/trace-format.md section
// 5, checked per activation, and the wait-for relation of [TURN-7.1] across
// activations.
//
// A call is queued from its `turn.call` to its `turn.start`, running until its
// `turn.end`, then settled. A call is never refused at the call: a
// `turn.refused` (format 1 keeps it parseable) is itself a TURN-7.1 violation.
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
// body still awaits a call ([TURN-1.1]); an interleaved call waits for no
// serial turn and no serial call waits for an interleaved turn ([TURN-3.2],
// judged at `end` on what never started); a turn is reported slow at most once
// and only once started ([TURN-4.2]); the counters a runtime reports in
// `turn.counters` match the calls, starts, ends and slow reports of the trace
// ([TURN-2.3]); every call of a method on an activation has the same mode
// ([TURN-3.3]); and no await begins inside a lane turn ([LANE-8.10]).
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "oracle/check_internal.hpp"

namespace turnstile::oracle::detail {

namespace {

struct Call;

// One `turn.await`: `waiter` (a turn, or null) awaits call `target`.
struct Await {
  std::string fiber;
  Call* waiter = nullptr;
  Call* target = nullptr;
  std::size_t line = 0;
  bool edge = false;  // a live edge of the wait-for relation
};

struct Call {
  std::string act, id, fiber, start_fiber;
  bool serial = true;
  bool reentry = false;
  std::size_t line = 0, refused = 0, start = 0, end = 0, slow = 0;
  std::vector<Await*> waits;       // live edges out of this call's turn
  std::vector<Await*> awaited_by;  // live edges into this call
};

struct Activation {
  std::deque<Call*> queue;  // serial calls not yet started or refused, in call order
  std::vector<Call*> open_serial;
  std::vector<Call*> open_interleaved;
  // [TURN-2.3] what the trace says the activation's counters are
  std::int64_t running = 0, completed = 0, slow = 0;
};

// One hop of a cycle: `node` waits for the next hop's node, behind it in its
// activation's queue (`via` null) or awaiting it (`via`).
struct Hop {
  Call* node;
  const Await* via;
};

// Each `turn.await_refused` paired with the `turn.await` it answers (filled by
// StreamingTurns before the checker sees either).
struct Refusals {
  std::map<std::size_t, std::size_t> of_await;   // await line -> refusal line
  std::map<std::size_t, std::size_t> of_refusal; // refusal line -> await line
};

class TurnChecker {
 public:
  TurnChecker(Report& report, const Refusals& refusals) : r_(report), refusals_(refusals) {}

  std::size_t retained() const {
    std::size_t n = calls_.size() + activations_.size() + awaits_.size() + position_.size() +
                    inherited_.size() + reported_.size();
    for (const auto& [act, tasks] : tasks_) n += tasks.size();
    return n;
  }

  // Whether the `turn.await` `e` would become a wait edge unless refused: it
  // is made from a turn, of a call made and not settled.
  bool may_wait(const Event& e) const {
    const auto it = calls_.find(e.str("act") + '\n' + e.str("call"));
    return it != calls_.end() && it->second.end == 0 && it->second.refused == 0 &&
           part_of(e.fiber) != nullptr;
  }

  void on_event(const Event& e) {
    if (e.ev == "fiber.spawn") return spawn(e);
    if (e.ev == "lane.turn_start") return position_[e.fiber].push_back(nullptr);  // no actor turn
    if (e.ev == "lane.turn_end") return leave_lane(e.fiber);
    if (e.ev.rfind("turn.", 0) != 0) return;
    const std::string& act = e.str("act");
    if (e.ev == "turn.counters") return counters(e, act);
    if (e.ev == "turn.task_start") {
      tasks_[act].push_back(e.str("task"));
      return;
    }
    const std::string& id = e.str("call");
    const std::string key = act + '\n' + id;
    if (e.ev == "turn.call" || e.ev == "turn.reentry") return call(e, act, id, key);
    const auto it = calls_.find(key);
    if (it == calls_.end()) {  // [TURN-2.1] nothing happens to a call never made
      r_.add("TURN-2.1", {e.line}, e.ev + " of call " + q(id) + " on activation " + q(act) +
                                       ", which was never made");
      return;
    }
    Call& c = it->second;
    if (e.ev == "turn.refused") return refused(e, c);
    if (e.ev == "turn.start") return start(e, c);
    if (e.ev == "turn.end") return end(e, c);
    if (e.ev == "turn.await") return await(e, c);
    if (e.ev == "turn.await_refused") return await_refused(e, c);
    if (e.ev == "turn.slow") return slow(e, c);
  }

  void at_end(const Event& end) {
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

 private:
  // [TURN-3.2] at `end`: a call that never started although an open turn of
  // its own activation awaits it, where the lanes say it must not wait for
  // that turn: an interleaved call awaited by the serial turn (it starts at
  // once), or the next serial call awaited by an interleaved turn while no
  // serial turn is open (no serial turn waits for an interleaved one). That
  // is a hang the wait-for relation of [TURN-7.1] does not have; the awaiting
  // turn, and what is queued behind the call, are its consequences.
  void lanes_waited_at_end(const Event& end) {
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

  std::optional<Cause> cause_of(const Call* c) const {
    const auto it = consequence_.find(c);
    if (it == consequence_.end()) return std::nullopt;
    return it->second;
  }

  // [TURN-4.2] a turn is reported slow at most once, and only once it started.
  // (A report may follow its `turn.end`: check_slow_turns() decides under the
  // activation's lock and reports after releasing it.)
  void slow(const Event& e, Call& c) {
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
  void counters(const Event& e, const std::string& act) {
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

  // ------------------------------------------------------------- positions
  void spawn(const Event& e) {
    if (!e.flag("structured")) return;  // a handoff is part of no turn
    const std::string& child = e.str("child");
    if (position_.count(child) != 0 || inherited_.count(child) != 0) return;  // FL-3.2/3.4 report it
    inherited_[child] = part_of(e.fiber);  // a Scope child counts as its parent's turn
  }

  void leave_lane(const std::string& fiber) {
    auto& pos = position_[fiber];
    const auto it = std::find(pos.rbegin(), pos.rend(), nullptr);
    if (it != pos.rend()) pos.erase(std::next(it).base());
    if (pos.empty()) position_.erase(fiber);
  }

  // The turn that code on `fiber` is part of now, or null.
  Call* part_of(const std::string& fiber) const {
    if (const auto p = position_.find(fiber); p != position_.end() && !p->second.empty())
      return p->second.back();  // null inside a lane turn
    const auto i = inherited_.find(fiber);
    return i == inherited_.end() ? nullptr : i->second;
  }

  // ----------------------------------------------------------------- calls
  void call(const Event& e, const std::string& act, const std::string& id, const std::string& key) {
    const bool reentry = e.ev == "turn.reentry";
    if (calls_.count(key) != 0) {  // [TURN-2.1] a call id is one call
      r_.add(reentry ? "TURN-5.2" : "TURN-2.1", {calls_[key].line, e.line},
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
      if (std::find(started.begin(), started.end(), e.str("task")) == started.end()) {
        r_.add("TURN-5.2", {e.line}, "turn re-entry " + q(id) + " on activation " + q(act) +
                                         " from task " + q(e.str("task")) + ", which was never started");
      }
    }
    if (c.serial) activations_[act].queue.push_back(&c);  // [TURN-7.1] a call always queues
  }

  void refused(const Event& e, Call& c) {
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

  void start(const Event& e, Call& c) {
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

  void end(const Event& e, Call& c) {
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
    auto& pos = position_[c.start_fiber];
    pos.erase(std::remove(pos.begin(), pos.end(), &c), pos.end());
    if (pos.empty()) position_.erase(c.start_fiber);  // state for what is open only
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
  }

  void dequeue(const Call& c) {
    auto& queue = activations_[c.act].queue;
    queue.erase(std::remove(queue.begin(), queue.end(), &c), queue.end());
  }

  // ---------------------------------------------------------------- awaits
  void await(const Event& e, Call& c) {
    if (const auto p = position_.find(e.fiber);
        p != position_.end() && std::find(p->second.begin(), p->second.end(), nullptr) != p->second.end()) {
      // [LANE-8.10] a lane turn runs to its end without waiting: an await in
      // it would let readers outside see its changes half made.
      r_.add("LANE-8.10", {e.line},
             "fiber " + q(e.fiber) + " began to await call " + q(c.id) + " on activation " + q(c.act) +
                 " inside a lane turn; a lane turn runs to its end without waiting");
    }
    Await& a = awaits_[e.line];
    a.fiber = e.fiber;
    a.waiter = part_of(e.fiber);
    a.target = &c;
    a.line = e.line;
    // A refused await never waits: it is judged at its refusal. An await with
    // no turn behind it, or of a call already settled, adds no wait of a turn.
    if (refusals_.of_await.count(e.line) != 0) return;
    if (a.waiter == nullptr || c.end != 0 || c.refused != 0) return;
    std::vector<Hop> path;
    const bool closes = find_path(&c, a.waiter, path);
    a.edge = true;
    a.waiter->waits.push_back(&a);
    c.awaited_by.push_back(&a);
    if (!closes) return;
    path.insert(path.begin(), Hop{a.waiter, &a});
    report_cycle(path, {}, "the await at line " + std::to_string(e.line) +
                               " closes it and was not refused: a possible hang");
  }

  void await_refused(const Event& e, Call& c) {
    const auto paired = refusals_.of_refusal.find(e.line);
    if (paired == refusals_.of_refusal.end()) {  // [TURN-7.1] an answer to no await
      r_.add("TURN-7.1", {c.line, e.line},
             "refusal of an await of call " + q(c.id) + " on activation " + q(c.act) + " by fiber " +
                 q(e.fiber) + ", which began no await of it");
      return;
    }
    const auto found = awaits_.find(paired->second);
    if (found == awaits_.end()) return;  // its await named a call never made: reported there
    const Await& a = found->second;
    const std::string what = "the await of call " + q(c.id) + " on activation " + q(c.act) +
                             " by fiber " + q(e.fiber) + " was refused";
    std::vector<std::size_t> lines = {c.line, a.line, e.line};
    if (a.waiter == nullptr) {  // [TURN-7.1] no turn waits: nothing can wait for it
      r_.add("TURN-7.1", lines, what + " but that fiber is part of no turn, so the await closes no "
                                       "cycle of waits (a false refusal)");
      return;
    }
    std::vector<Hop> path;
    if (c.end != 0 || c.refused != 0 || !find_path(&c, a.waiter, path)) {
      lines.push_back(a.waiter->start);
      r_.add("TURN-7.1", lines, what + " but turn " + q(a.waiter->id) + " of " + q(a.waiter->act) +
                                    " awaiting it closes no cycle of waits (a false refusal)");
    }
  }

  // The calls `n` waits for now, and how.
  void successors(Call* n, std::vector<Hop>& out) const {
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
  bool find_path(Call* from, const Call* goal, std::vector<Hop>& path) const {
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

  static std::string describe(const Call& c, bool as_turn) {
    return (as_turn ? "turn " : "call ") + q(c.id) + (as_turn ? " of " : " into ") + q(c.act) +
           (c.serial ? "" : " (interleaved)");
  }

  // Reports the cycle `hops` (each hop waits for the next, the last for the
  // first) under TURN-7.1 with the lines of every hop, once per set of calls.
  void report_cycle(const std::vector<Hop>& hops, std::vector<std::size_t> lines, const std::string& why) {
    std::set<const Call*> nodes;
    for (const Hop& h : hops) nodes.insert(h.node);
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
  }

  // At `end`: every cycle of waits still open is reported (once: one closed by
  // an unrefused await was reported there), and every call that waits for one
  // is stuck in that hang: what it leaves unsettled is not reported again.
  void stuck_at_end(const Event& end) {
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
        for (const Hop& h : cycle) known = known || r.count(h.node) != 0;
      if (!known) report_cycle(cycle, {end.line}, "it is still open at `end`: a possible hang");
    }
    for (const Call* c : stuck_)
      if (c->start != 0) r_.stuck_fibers.insert(c->start_fiber);
    for (const auto& [line, a] : awaits_)  // a fiber awaiting a stuck call waits forever
      if (a.target->end == 0 && stuck_.count(a.target) != 0 && refusals_.of_await.count(line) == 0)
        r_.stuck_fibers.insert(a.fiber);
  }

  Report& r_;
  const Refusals& refusals_;
  std::map<std::string, Call> calls_;  // "act\ncall" (std::map keeps pointers stable)
  std::map<std::string, Activation> activations_;
  std::map<std::string, std::pair<bool, std::size_t>> modes_;  // "act\nmethod" -> serial?, first call
  std::map<std::size_t, Await> awaits_;  // by the line of their `turn.await`
  // Per fiber, the turns it opened, innermost last: a call, or null for a lane turn.
  std::unordered_map<std::string, std::vector<Call*>> position_;  // never iterated in order
  std::map<std::string, Call*> inherited_;  // structured children: the parent's turn at the spawn
  std::map<std::string, std::vector<std::string>> tasks_;  // started tasks per activation
  std::set<std::set<const Call*>> reported_;  // cycles already reported
  std::set<const Call*> stuck_;               // at `end`: calls in or behind an open cycle
  std::set<const Call*> waited_;              // at `end`: calls reported under TURN-3.2
  std::map<const Call*, Cause> consequence_;  // at `end`: what follows from a TURN-3.2 violation
};

// Feeds TurnChecker in one pass. A `turn.await` that may become a wait edge
// is *pending* until its fiber's next event, which is its `turn.await_refused`
// or shows it was not refused, or the awaited call's `turn.end` (which answers
// the await: a refusal after it answers nothing); from a pending await on, the events TurnChecker
// reads are held back (in order) and replayed once no earlier await is
// pending. Held: what arrives while such an await is in flight (its fiber
// blocked in it), so the buffer is bounded by what is open.
class StreamingTurns : public Checker {
 public:
  explicit StreamingTurns(Report& report) : checker_(report, refusals_) {}

  std::size_t retained() const override {
    return checker_.retained() + held_.size() + last_await_.size() + refusals_.of_await.size();
  }

  void on_event(const Event& e) override {
    const auto last = last_await_.empty() ? last_await_.end() : last_await_.find(e.fiber);
    if (last != last_await_.end()) {  // this fiber's previous event was a `turn.await`
      if (e.ev == "turn.await_refused" && last->second.key == e.str("act") + '\n' + e.str("call")) {
        refusals_.of_await[last->second.line] = e.line;
        refusals_.of_refusal[e.line] = last->second.line;
      }
      pending_.erase(last->second.line);
      last_await_.erase(last);
    }
    if (e.ev == "turn.await") last_await_[e.fiber] = {e.line, e.str("act") + '\n' + e.str("call")};
    if (!last_await_.empty() && e.ev == "turn.end") {  // the awaits of the call are answered: none is refused now
      const std::string key = e.str("act") + '\n' + e.str("call");
      for (auto it = last_await_.begin(); it != last_await_.end();) {
        if (it->second.key != key) { ++it; continue; }
        pending_.erase(it->second.line);
        it = last_await_.erase(it);
      }
    }
    if (reads(e)) {
      if (e.ev == "turn.await" && (!held_.empty() || checker_.may_wait(e))) pending_.insert(e.line);
      if (held_.empty() && pending_.count(e.line) == 0) checker_.on_event(e);
      else held_.push_back(e);
    }
    replay();
  }

  void at_end(const Event& end) override {
    pending_.clear();  // nothing follows: an await still pending was not refused
    replay();
    checker_.at_end(end);
  }

 private:
  static bool reads(const Event& e) {
    return e.ev == "fiber.spawn" || e.ev == "lane.turn_start" || e.ev == "lane.turn_end" ||
           e.ev.rfind("turn.", 0) == 0;
  }

  void replay() {
    while (!held_.empty() && pending_.count(held_.front().line) == 0) {
      checker_.on_event(held_.front());
      held_.pop_front();
    }
  }

  struct Await {
    std::size_t line;
    std::string key;  // act\ncall
  };
  Refusals refusals_;
  TurnChecker checker_;
  std::map<std::string, Await> last_await_;  // fibers whose last event is a `turn.await`
  std::set<std::size_t> pending_;            // lines of pending awaits
  std::deque<Event> held_;
};

}  // namespace

std::unique_ptr<Checker> make_turn_checker(Report& report) { return std::make_unique<StreamingTurns>(report); }

}  // namespace turnstile::oracle::detail
