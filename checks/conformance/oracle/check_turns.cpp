// oracle/check_turns.cpp: the actor-turn rules of spec/trace-format.md section
// 5, checked per activation.
//
// A call is made from the turn its caller fiber was running (the innermost
// open `turn.start` that fiber emitted, if any). The self-call chain of a
// serial call into A walks from that turn to the turn its own call was made
// from, and so on, while those turns are still open; the call is a self-call
// when the chain reaches a serial turn of A ([TURN-7.1]). A `turn.reentry` is
// a serial call ([TURN-5.2]); a violation involving one is reported as TURN-5.2.
#include <algorithm>
#include <deque>
#include <map>

#include "oracle/check_internal.hpp"

namespace turnstile::oracle::detail {

namespace {

struct Call {
  std::string act, id, fiber, start_fiber;
  bool serial = true;
  bool reentry = false;
  bool self_call = false;  // the oracle's verdict at the call: must be refused
  std::size_t line = 0, refused = 0, start = 0, end = 0;
  Call* made_from = nullptr;  // the open turn the call was made from, if any
  std::vector<std::size_t> chain;  // lines of the turns that make it a self-call
};

struct Activation {
  std::deque<Call*> queue;  // serial calls not yet started or refused, in call order
  std::vector<Call*> open_serial;
};

class TurnChecker {
 public:
  explicit TurnChecker(Report& report) : r_(report) {}

  void on_event(const Event& e) {
    if (e.ev.rfind("turn.", 0) != 0) return;
    const std::string& act = e.str("act");
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
  }

  void at_end(const Event& end) {
    for (auto& [key, c] : calls_) {
      const std::string scope = "act:" + c.act;
      if (c.refused != 0) continue;
      if (c.start == 0) {
        if (c.self_call) {  // [TURN-7.1] left waiting, a self-call is a possible hang
          std::vector<std::size_t> lines = c.chain;
          lines.push_back(c.line);
          lines.push_back(end.line);
          r_.add("TURN-7.1", lines, "serial call " + q(c.id) + " into activation " + q(c.act) +
                                        " waits for a turn it is part of and was never refused:"
                                        " a possible hang");
          for (Call* t = c.made_from; t != nullptr && t->end == 0; t = t->made_from) {
            r_.stuck_fibers.insert(t->start_fiber);
          }
          r_.stuck_fibers.insert(c.fiber);
        } else {  // [TURN-2.1] every call not refused starts
          r_.unsettled.push_back({{c.reentry ? "TURN-5.2" : "TURN-2.1", {c.line, end.line},
                                   "call " + q(c.id) + " on activation " + q(c.act) +
                                       " never started its turn before `end`", false},
                                  "", scope});
        }
      } else if (c.end == 0) {  // [TURN-2.1] every started turn ends
        r_.unsettled.push_back({{c.reentry ? "TURN-5.2" : "TURN-2.1", {c.start, end.line},
                                 "turn of call " + q(c.id) + " on activation " + q(c.act) +
                                     " never ended before `end`", false},
                                c.start_fiber, ""});
        if (c.serial) r_.open_turns.emplace_back(scope, c.start_fiber);
      }
    }
  }

 private:
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
    if (reentry) {
      const auto& started = tasks_[act];
      if (std::find(started.begin(), started.end(), e.str("task")) == started.end()) {
        r_.add("TURN-5.2", {e.line}, "turn re-entry " + q(id) + " on activation " + q(act) +
                                         " from task " + q(e.str("task")) + ", which was never started");
      }
    }
    const auto& running = fiber_turns_[e.fiber];
    c.made_from = running.empty() ? nullptr : running.back();
    if (c.serial) {
      // [TURN-7.1] the chain of open turns this call is made from.
      std::vector<std::size_t> chain;
      for (Call* t = c.made_from; t != nullptr && t->end == 0; t = t->made_from) {
        chain.push_back(t->start);
        if (t->act == act && t->serial) {
          c.self_call = true;
          c.chain = chain;
          break;
        }
        if (chain.size() > calls_.size()) break;  // cannot cycle, but stay bounded
      }
      activations_[act].queue.push_back(&c);
    }
  }

  void refused(const Event& e, Call& c) {
    if (c.refused != 0 || c.start != 0) {
      r_.add("TURN-2.1", {c.refused != 0 ? c.refused : c.start, e.line},
             "call " + q(c.id) + " on activation " + q(c.act) + " was answered twice");
      return;
    }
    c.refused = e.line;
    dequeue(c);
    if (!c.self_call) {  // [TURN-7.1] only a self-call is refused
      r_.add("TURN-7.1", {c.line, e.line},
             std::string(c.serial ? "serial" : "interleaved") + " call " + q(c.id) +
                 " on activation " + q(c.act) +
                 " was refused as a self-call but no open serial turn of it made the call");
    }
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
    fiber_turns_[e.fiber].push_back(&c);
    if (!c.serial) return;  // an interleaved turn waits for nothing ([TURN-3.2])
    Activation& a = activations_[c.act];
    if (c.self_call) {  // [TURN-7.1] it had to be refused at the call
      std::vector<std::size_t> lines = c.chain;
      lines.push_back(c.line);
      lines.push_back(e.line);
      r_.add("TURN-7.1", lines, "serial call " + q(c.id) + " into activation " + q(c.act) +
                                    " was made from inside a serial turn of it and was not refused");
    } else {
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
    c.end = e.line;
    auto& turns = fiber_turns_[c.start_fiber];
    turns.erase(std::remove(turns.begin(), turns.end(), &c), turns.end());
    auto& open = activations_[c.act].open_serial;
    open.erase(std::remove(open.begin(), open.end(), &c), open.end());
  }

  void dequeue(const Call& c) {
    auto& queue = activations_[c.act].queue;
    queue.erase(std::remove(queue.begin(), queue.end(), &c), queue.end());
  }

  Report& r_;
  std::map<std::string, Call> calls_;  // "act\ncall" (std::map keeps pointers stable)
  std::map<std::string, Activation> activations_;
  std::map<std::string, std::vector<Call*>> fiber_turns_;  // open turns per fiber
  std::map<std::string, std::vector<std::string>> tasks_;  // started tasks per activation
};

}  // namespace

void check_turns(const Trace& trace, Report& report) {
  TurnChecker checker(report);
  for (const Event& e : trace.events) {
    if (e.ev == "end") checker.at_end(e);
    else checker.on_event(e);
  }
}

}  // namespace turnstile::oracle::detail
