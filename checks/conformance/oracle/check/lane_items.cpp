// oracle/check/lane_items.cpp: the events of one lane item (submission,
// answer, turn start and end, resumption) and the drain of its lane, checked
// against the lane's state (oracle/check/lane.hpp; the model and what is kept:
// lane.cpp).
#include <algorithm>
#include <string_view>

#include "oracle/check/lane.hpp"

namespace turnstile::oracle::detail {

void LaneChecker::submit(Lane& lane, const Event& e, const std::string& id) {
  const std::string& name = lane.name;
  if (lane.items.count(id) != 0) {  // [LANE-8.1] an item is one submission
    r_.add("LANE-8.1", {lane.items[id].submit, e.line},
           "item " + q(id) + " on lane " + q(name) + " was submitted twice");
    return;
  }
  Item& item = lane.items[id];
  item.submit = e.line;
  item.run = e.str("op") == "run";
  item.fiber = e.fiber;
  item.submitter_on_lane = on_lane(e.fiber, name);
  item.submitter_in_turn = in_turn(e.fiber);
  if (!item.submitter_on_lane) {
    item.off_lane_rule = off_lane_rule(e.fiber, name);
    if (std::string_view(item.off_lane_rule) == "LANE-8.5")
      item.origin = " (it was started from a turn of that lane and must enter it normally)";
    else if (std::string_view(item.off_lane_rule) == "LANE-8.6")
      item.origin = " (it runs in a context captured in a turn of that lane: a callback outside the turn)";
  }
  pending_.push_back(Pending{e.fiber, name, id, e.line});  // (origins() took this fiber's previous one)
}

void LaneChecker::answer(Lane& lane, const Event& e, const std::string& id, Item& item) {
  const std::string& name = lane.name;
  const std::size_t n = e.line;
  if (item.answer != 0) {
    r_.add("LANE-8.1", {item.answer, n},
           "item " + q(id) + " on lane " + q(name) + " was answered twice");
    return;
  }
  item.answer = n;
  const bool closed_before_submit = lane.close_requested != 0 && lane.close_requested < item.submit;
  const std::string scope = "lane";  // for repeats (A5): every lane of a trace is one implementation
  if (e.kind == EventKind::kLaneAccepted) {
    item.accepted = true;
    if (item.start == 0) {
      lane.queue.push_back(id);  // (a late answer: its turn already started, see turn_start)
      capture_for_[e.fiber] = {&lane, id};  // [FL-3.9] the lane's capture for the turn, if any, is next
    }
    if (item.run && item.submitter_on_lane) {  // [LANE-5.3]
      r_.add("LANE-5.3", {item.submit, n},
             "run of item " + q(id) + " was submitted from a turn of lane " + q(name) +
                 " by fiber " + q(item.fiber) + " and accepted; it must be refused as reentrant",
             std::nullopt, scope);
      item.flagged = true;
      item.reentrant = Cause{"LANE-5.3", {item.submit, n}};
    }
    if (closed_before_submit) {  // [LANE-7.4]
      r_.add("LANE-7.4", {lane.close_requested, item.submit, n},
             "item " + q(id) + " was submitted after lane " + q(name) +
                 " was asked to close and accepted; it must be refused with `closed`",
             std::nullopt, scope);
      item.flagged = true;
      item.closed = Cause{"LANE-7.4", {lane.close_requested, item.submit, n}};
    }
    return;
  }
  if (e.str("reason") == "closed") {
    if (lane.close_requested == 0) {  // [LANE-7.4] `closed` only after a close request
      r_.add("LANE-7.4", {item.submit, n},
             "item " + q(id) + " was refused with `closed` but lane " + q(name) +
                 " was never asked to close before", std::nullopt, scope);
    }
    return;
  }
  // reason == "reentrant"
  if (!item.run) {
    if (item.submitter_on_lane) {  // [LANE-7.7] posting from one's own turn is legal
      r_.add("LANE-7.7", {item.submit, n},
             "post of item " + q(id) + " from a turn of lane " + q(name) +
                 " was refused as reentrant; it must be accepted and queued behind", std::nullopt, scope);
    } else {  // [LANE-8.7] (or 8.5/8.6 by where the fiber comes from)
      r_.add(item.off_lane_rule, {item.submit, n},
             "post of item " + q(id) + " from fiber " + q(item.fiber) + ", not on lane " +
                 q(name) + ", was refused as reentrant" + item.origin, std::nullopt, scope);
    }
  } else if (!item.submitter_on_lane) {  // [LANE-8.7] no false reentrancy ([LANE-8.5], [LANE-8.6])
    r_.add(item.off_lane_rule, {item.submit, n},
           "run of item " + q(id) + " from fiber " + q(item.fiber) + ", not on lane " + q(name) +
               ", was refused as reentrant" + item.origin, std::nullopt, scope);
  }
  if (closed_before_submit && !item.run) {
    // [LANE-7.4] after a close request, refusals say `closed` (a run from the
    // lane's own turn may say either).
    r_.add("LANE-7.4", {lane.close_requested, n},
           "item " + q(id) + " was submitted after lane " + q(name) +
               " was asked to close; it must be refused with `closed`", std::nullopt, scope);
  }
}

void LaneChecker::turn_start(Lane& lane, const Event& e, const std::string& id, Item& item) {
  const std::string& name = lane.name;
  const std::size_t n = e.line;
  const std::string scope = "lane";  // for repeats (A5): every lane of a trace is one implementation
  if (item.answer == 0 && item.start == 0) {
    // [LANE-5.2] a turn that starts before its item's `lane.accepted`: the
    // acceptance was written late (after the lane's lock was released,
    // porting.md section 2), so the trace misorders it. One root; the item is
    // taken as accepted here, and its late answer, its end and its awaiter's
    // resumption are read as usual (section 4, "Attribution").
    r_.add("LANE-5.2", {item.submit, n},
           "turn of item " + q(id) + " started on lane " + q(name) +
               " before its lane.accepted: the acceptance was emitted after the lane had taken the item "
               "(emit it inside the lane's critical section)",
           std::nullopt, scope);
    item.late = Cause{"LANE-5.2", {item.submit, n}};
  } else if (!item.accepted || item.start != 0 || item.drop != 0) {  // [LANE-8.1] exactly once, never unaccepted
    r_.add("LANE-8.1", {item.start != 0 ? item.start : item.drop != 0 ? item.drop : item.submit, n},
           item.start != 0  ? "turn of item " + q(id) + " on lane " + q(name) + " started twice"
           : item.drop != 0 ? "turn of item " + q(id) + " on lane " + q(name) +
                                  " started after the item was reported dropped"
                            : "turn of item " + q(id) + " on lane " + q(name) +
                                  " started but the item was never accepted");
    return;
  }
  item.start = n;
  item.start_fiber = e.fiber;
  // An accepted reentrant run started inside the turn that submitted it (run
  // inline, as asio's dispatch does): what follows on the trace, the overlap,
  // the jump ahead of the queue and its awaiter resumed inside that turn, is
  // that [LANE-5.3]'s (section 4.1 A6).
  const bool inline_reentry = item.reentrant && !lane.open.empty() &&
                              lane.items[lane.open.back()].start_fiber == item.fiber;
  if (inline_reentry) item.inline_of = item.reentrant;
  if (!lane.open.empty()) {  // [LANE-5.1] one turn at a time
    const Item& other = lane.items[lane.open.back()];
    r_.add("LANE-5.1", {other.start, n},
           "turn of item " + q(id) + " started on lane " + q(name) + " while the turn of item " +
               q(lane.open.back()) + " was still open", item.inline_of, scope);
  }
  if (lane.drained != 0) {  // [LANE-7.6] nothing runs after the drain (one accepted after the close: [LANE-7.4]'s)
    r_.add("LANE-7.6", {lane.drained, n},
           "turn of item " + q(id) + " started after lane " + q(name) + " was drained", item.closed, scope);
  }
  const auto pos = std::find(lane.queue.begin(), lane.queue.end(), id);
  if (pos != lane.queue.end() && pos != lane.queue.begin()) {  // [LANE-5.2] FIFO
    const Item& first = lane.items[lane.queue.front()];
    r_.add("LANE-5.2", {first.answer, item.answer, n},
           "turn of item " + q(id) + " started on lane " + q(name) + " before item " +
               q(lane.queue.front()) + ", which was accepted earlier", item.inline_of, scope);
  }
  if (pos != lane.queue.end()) lane.queue.erase(pos);
  lane.open.push_back(id);
  fiber_turns_[e.fiber].push_back(name);
  foreign_context(lane, e, id, item);
}

void LaneChecker::turn_end(Lane& lane, const Event& e, const std::string& id, Item& item) {
  const std::string& name = lane.name;
  const auto pos = std::find(lane.open.begin(), lane.open.end(), id);
  if (pos == lane.open.end()) {  // [LANE-8.1] ends once, after its start
    r_.add("LANE-8.1", {item.end != 0 ? item.end : item.submit, e.line},
           item.end != 0 ? "turn of item " + q(id) + " on lane " + q(name) + " ended twice"
                         : "turn of item " + q(id) + " on lane " + q(name) +
                               " ended without having started");
    return;
  }
  lane.open.erase(pos);
  item.end = e.line;
  if (const auto t = tainted_.find(item.start_fiber);
      t != tainted_.end() && t->second.violation == item.foreign_ctx && t->second.until_ctx.empty()) {
    r_.violations[t->second.violation].spans[t->second.span].last = e.line;  // [FL-3.9] the span its turn ran in
    tainted_.erase(t);
  }
  item.outcome = e.str("outcome");
  auto& turns = fiber_turns_[item.start_fiber];
  const auto mine = std::find(turns.rbegin(), turns.rend(), name);
  if (mine != turns.rend()) turns.erase(std::next(mine).base());
}

void LaneChecker::resumed(const Lane& lane, const Event& e, const std::string& id, Item& item) {
  const std::string& name = lane.name;
  const std::size_t n = e.line;
  if (!item.accepted || !item.run || item.resumed != 0) {
    r_.add("LANE-8.1", {item.submit, n},
           "lane.resumed of item " + q(id) + " on lane " + q(name) +
               (item.resumed != 0 ? ", which was already resumed"
                                  : ", which is not an accepted run"));
    return;
  }
  item.resumed = n;
  if (item.drop != 0) {  // resumed without a turn: what the drop's [LANE-8.1] lost (A6)
    r_.add("LANE-8.1", {item.drop, n},
           "the awaiter of item " + q(id) + " on lane " + q(name) + " resumed with `" + e.str("outcome") +
               "` after the item was dropped, without its turn",
           item.dropped, "lane");
    return;
  }
  if (item.end == 0) {  // [LANE-5.6] resumption only after the marker is released
    r_.add("LANE-5.6", {item.start != 0 ? item.start : item.answer, n},
           "the awaiter of item " + q(id) + " on lane " + q(name) +
               " resumed before the item's turn ended", std::nullopt, "lane");
    return;
  }
  if (on_lane(e.fiber, name)) {  // [LANE-5.6] never inline, inside someone's turn
    r_.add("LANE-5.6", {item.end, n},
           "the awaiter of item " + q(id) + " resumed on fiber " + q(e.fiber) +
               " while that fiber was inside a turn of lane " + q(name), item.inline_of, "lane");
  } else if (const auto in = lanes_of(e.fiber); !in.empty()) {
    // [LANE-8.10] a lane turn never suspends: readers outside would see its
    // changes half made.
    r_.add("LANE-8.10", {item.end, n},
           "fiber " + q(e.fiber) + " resumed from awaiting item " + q(id) + " on lane " + q(name) +
               " inside a turn of lane " + q(*in.begin()) + "; a lane turn runs to its end without waiting");
  }
  if (e.str("outcome") != item.outcome) {  // [LANE-7.5] the awaiter gets the turn's outcome
    r_.add("LANE-7.5", {item.end, n},
           "the turn of item " + q(id) + " on lane " + q(name) + " ended with `" + item.outcome +
               "` but its awaiter resumed with `" + e.str("outcome") + "`");
  }
}

// An accepted item the library discarded before its turn (the optional
// `lane.dropped`: a queue's clear(), a mutex's cancel(), a pool's shutdownNow()):
// accepted work lost, one [LANE-8.1] root at its acceptance and the drop. It
// leaves the queue, so the drain does not wait for it; what follows from it
// (its awaiter resumed without a turn, its body's ops that left no outcome)
// names this root (spec/trace-format.md section 4.1, A6).
void LaneChecker::dropped(Lane& lane, const Event& e, const std::string& id, Item& item) {
  const std::string& name = lane.name;
  const std::size_t n = e.line;
  if (!item.accepted || item.start != 0 || item.drop != 0) {  // [LANE-8.1] only a queued item can be dropped
    r_.add("LANE-8.1", {item.drop != 0 ? item.drop : item.start != 0 ? item.start : item.submit, n},
           "lane.dropped of item " + q(id) + " on lane " + q(name) +
               (item.drop != 0    ? ", which was already dropped"
                : item.start != 0 ? ", whose turn had started (a running turn is not dropped)"
                                  : ", which was never accepted"));
    return;
  }
  item.drop = n;
  const std::string& why = e.str("reason");
  r_.add("LANE-8.1", {item.answer, n},
         "accepted item " + q(id) + " on lane " + q(name) + " was dropped" + (why.empty() ? "" : " (" + why + ")") +
             " before its turn started: accepted work is lost (every accepted item runs its turn)",
         std::nullopt, "lane");
  item.dropped = Cause{"LANE-8.1", {item.answer, n}};
  item.flagged = true;
  const auto pos = std::find(lane.queue.begin(), lane.queue.end(), id);
  if (pos != lane.queue.end()) lane.queue.erase(pos);
}

void LaneChecker::drained(Lane& lane, std::size_t n) {
  const std::string& name = lane.name;
  if (lane.close_requested == 0) {  // [LANE-7.6] drained only after a close request
    r_.add("LANE-7.6", {n}, "lane " + q(name) + " reported drained without a close request", std::nullopt,
           "lane");
  }
  std::vector<std::size_t> lines{n};
  std::string pending;
  // Every item left was accepted after the close request: the drain that
  // forgot it follows from that acceptance ([LANE-7.4]); else a root.
  std::optional<Cause> cause;
  bool all_closed = true;
  const auto note = [&](const std::string& id, std::size_t line) {
    const Item& it = lane.items[id];
    lines.push_back(line);
    pending = id;
    if (!it.closed) all_closed = false;
    else if (!cause) cause = it.closed;
  };
  for (const auto& id : lane.queue) note(id, lane.items[id].answer);
  for (const auto& id : lane.open) note(id, lane.items[id].start);
  if (!pending.empty()) {  // [LANE-7.6] everything accepted has run
    r_.add("LANE-7.6", lines, "lane " + q(name) + " reported drained while accepted item " +
                                  q(pending) + " had not finished its turn",
           all_closed ? cause : std::nullopt, "lane");
  }
  if (lane.drained == 0) lane.drained = n;
}

// The closer's side of the drain: `lane.close_returned` (optional, on the
// fiber whose await of close() resumed) comes after the lane's `lane.drained`.
void LaneChecker::close_returned(const Lane& lane, const Event& e) {
  const std::size_t n = e.line;
  const std::string& name = lane.name;
  if (lane.close_requested == 0) {  // [LANE-7.6] a close returns only after it was requested
    r_.add("LANE-7.6", {n}, "close() of lane " + q(name) + " returned on fiber " + q(e.fiber) +
                                " without a close request", std::nullopt, "lane");
    return;
  }
  if (lane.drained != 0) return;  // [LANE-7.6] close() completes once everything accepted has run
  std::vector<std::size_t> lines{lane.close_requested, n};
  const std::string* pending = nullptr;  // the first accepted item still to finish, for the message
  for (const auto& id : lane.open) { lines.push_back(lane.items.at(id).start); if (!pending) pending = &id; }
  for (const auto& id : lane.queue) { lines.push_back(lane.items.at(id).answer); if (!pending) pending = &id; }
  std::sort(lines.begin(), lines.end());
  r_.add("LANE-7.6", lines, "close() of lane " + q(name) + " returned on fiber " + q(e.fiber) +
                               " before the lane drained" +
                               (pending == nullptr ? std::string()
                                                   : " (accepted item " + q(*pending) + " had not finished its turn)"),
         std::nullopt, "lane");
}

}  // namespace turnstile::oracle::detail
