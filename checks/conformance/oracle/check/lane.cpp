// oracle/check/lane.cpp: the state-lane rules of spec/trace-format.md section 5,
// checked per lane. A fiber is on lane L from a `lane.turn_start` of L it
// emitted until the matching `lane.turn_end` (the oracle derives it; the
// runtime does not report it). This file: dispatch, where fibers and contexts
// come from, and what is left open at `end`; lane_items.cpp: the events
// of one item.
//
// State is what is open: an item is kept from its submission until it is
// settled (refused; a post whose turn ended; a run whose awaiter resumed after
// its turn ended; a dropped post, or a dropped run whose awaiter resumed),
// then among the last kSettledWindow settled items, then forgotten. Safe
// because nothing more is expected of a settled item: at `end` it reports
// nothing, and no queue or open turn names it; only an event that
// repeats one of its events (a second submission, answer, start, end or
// resumption: [LANE-8.1]) names it again, and such an event gets its exact
// message while the item is in the window (older: see spec/trace-format.md §4).
//
// Where a wrong refusal comes from decides its rule: a `reentrant` refusal of
// a fiber not on the lane is [LANE-8.5] when that fiber was started from a
// turn of the lane (a long-running operation coming back), [LANE-8.6] when it
// runs inside a context captured in a turn of the lane (a callback invoked
// outside the turn), else [LANE-8.7].
#include "oracle/check/lane.hpp"

#include <algorithm>
#include <optional>

namespace turnstile::oracle::detail {

std::size_t LaneChecker::retained() const {
  std::size_t n = settled_.size() + pending_.size() + spawned_in_.size() + ctx_lanes_.size() + installs_.size() +
                  capture_for_.size() + ctx_item_.size() + tainted_.size() + tainted_ctx_.size();
  for (const auto& [fiber, lanes] : fiber_turns_) n += lanes.empty() ? 0 : 1;
  for (const auto& [name, lane] : lanes_) n += lane.items.size() + lane.queue.size() + lane.open.size();
  return n;
}

LaneChecker::Lane& LaneChecker::lane_named(const std::string& name) {
  if (last_lane_ != nullptr && last_lane_->name == name) return *last_lane_;
  const auto [it, fresh] = lanes_.try_emplace(name);
  if (fresh) it->second.name = name;
  last_lane_ = &it->second;
  return it->second;
}

void LaneChecker::on_event(const Event& e) {
  if (!e.fiber.empty()) origins(e);
  if (!is_lane_event(e.kind)) return;
  Lane& lane = lane_named(e.str("lane"));
  const std::size_t n = e.line;
  switch (e.kind) {
    case EventKind::kLaneCloseRequested:
      if (lane.close_requested == 0) lane.close_requested = n;
      return;
    case EventKind::kLaneDrained: return drained(lane, n);
    case EventKind::kLaneCloseReturned: return close_returned(lane, e);
    case EventKind::kLaneSubmit: return submit(lane, e, e.str("item"));
    default: break;
  }
  const std::string& id = e.str("item");
  const auto it = lane.items.find(id);
  if (it == lane.items.end()) {  // [LANE-8.1] nothing happens to an item never submitted
    r_.add("LANE-8.1", {n}, e.ev + " of item " + q(id) + " on lane " + q(lane.name) +
                                ", which was never submitted");
    return;
  }
  Item& item = it->second;
  switch (e.kind) {
    case EventKind::kLaneAccepted:
    case EventKind::kLaneRefused: answer(lane, e, id, item); break;
    case EventKind::kLaneTurnStart: turn_start(lane, e, id, item); break;
    case EventKind::kLaneTurnEnd: turn_end(lane, e, id, item); break;
    case EventKind::kLaneResumed: resumed(lane, e, id, item); break;
    case EventKind::kLaneDropped: dropped(lane, e, id, item); break;
    default: break;
  }
  settle(lane, id, item);
}

void LaneChecker::at_end(const Event& end) {
  for (auto& [name, lane] : lanes_) {
    const std::string scope = "lane:" + name;
    for (auto& [id, item] : lane.items) {
      if (item.answer == 0) {
        if (item.run && item.submitter_on_lane) {
          // [LANE-8.4] a reentrant run left waiting: its fiber waits on itself.
          std::vector<std::size_t> lines{item.submit, end.line};
          for (const auto& other : lane.open) {
            if (lane.items[other].start_fiber == item.fiber) lines.push_back(lane.items[other].start);
          }
          r_.add("LANE-8.4", lines, "reentrant run of item " + q(id) + " on lane " + q(name) +
                                        " was never answered: a possible hang (it must be refused)");
          r_.stuck_fibers.insert(item.fiber);
        } else {
          r_.unsettled.push_back({{"LANE-8.1", {item.submit, end.line},
                                   "submission of item " + q(id) + " on lane " + q(name) +
                                       " was never accepted or refused before `end`", false, item.late},
                                  item.fiber, ""});
        }
        continue;
      }
      if (item.reentrant && item.start == 0 && item.drop == 0 && on_lane(item.fiber, name)) {
        // [LANE-8.4] the hang an accepted reentrant run makes: queued behind the
        // turn that submitted it, which never ended (it waits for the run).
        std::vector<std::size_t> lines{item.submit, item.answer, end.line};
        for (const auto& other : lane.open) {
          if (lane.items[other].start_fiber == item.fiber) lines.push_back(lane.items[other].start);
        }
        r_.add("LANE-8.4", lines, "reentrant run of item " + q(id) + " on lane " + q(name) +
                                      " was accepted and queued behind the turn that submitted it, which never "
                                      "ended: a possible hang (it must be refused)", item.reentrant);
        r_.stuck_fibers.insert(item.fiber);
        continue;
      }
      if (!item.accepted || item.flagged) continue;
      if (item.run && item.end != 0 && item.resumed == 0 && !item.submitter_in_turn) {
        // [LANE-8.9] waiting for a lane's completion returns: the awaiter of
        // a run whose turn ended resumes.
        r_.unsettled.push_back({{"LANE-8.9", {item.submit, item.end, end.line},
                                 "the turn of item " + q(id) + " on lane " + q(name) +
                                     " ended but its awaiter on fiber " + q(item.fiber) +
                                     " never resumed before `end`: a possible hang", false},
                                item.fiber, ""});
      }
      if (item.start == 0) {  // [LANE-8.1] accepted but never ran
        r_.unsettled.push_back({{"LANE-8.1", {item.answer, end.line},
                                 "accepted item " + q(id) + " on lane " + q(name) +
                                     " never started its turn before `end`", false},
                                "", scope});
      } else if (item.end == 0) {
        r_.unsettled.push_back({{"LANE-8.1", {item.start, end.line},
                                 "turn of item " + q(id) + " on lane " + q(name) +
                                     " never ended before `end`", false},
                                item.start_fiber, "", true});
      }
    }
    for (const auto& id : lane.open) r_.open_turns.emplace_back(scope, lane.items[id].start_fiber);
    if (lane.close_requested != 0 && lane.drained == 0) never_drained(lane, end);
  }
}

bool LaneChecker::on_lane(const std::string& fiber, const std::string& lane) const {
  const auto it = fiber_turns_.find(fiber);
  if (it == fiber_turns_.end()) return false;
  return std::find(it->second.begin(), it->second.end(), lane) != it->second.end();
}

bool LaneChecker::in_turn(const std::string& fiber) const {
  const auto it = fiber_turns_.find(fiber);
  return it != fiber_turns_.end() && !it->second.empty();
}

std::set<std::string> LaneChecker::lanes_of(const std::string& fiber) const {
  const auto it = fiber_turns_.find(fiber);
  if (it == fiber_turns_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

// Moves a settled item to the window of settled items, forgetting the oldest.
void LaneChecker::settle(Lane& lane, const std::string& id, Item& item) {
  if (item.settled || item.answer == 0) return;
  // (A dropped item has no turn to wait for: it is settled once its awaiter, if any, resumed.)
  if (item.accepted && ((item.end == 0 && item.drop == 0) || (item.run && item.resumed == 0))) return;
  item.settled = true;
  settled_.emplace_back(&lane, id);
  if (settled_.size() <= kSettledWindow) return;
  auto& items = settled_.front().first->items;
  if (const auto old = items.find(settled_.front().second); old != items.end() && !old->second.ctx.empty())
    ctx_item_.erase(old->second.ctx);
  items.erase(settled_.front().second);
  settled_.pop_front();
}

// [LANE-7.6] a close whose drain never came: what was left open. When an
// accepted item never finished, the hang of the close follows from it.
void LaneChecker::never_drained(Lane& lane, const Event& end) {
  std::vector<std::size_t> lines{lane.close_requested, end.line};
  std::string open;
  std::optional<Cause> cause;
  std::vector<std::pair<const std::string*, const Item*>> left;  // by id: items are unordered
  for (const auto& [id, item] : lane.items) {
    if (item.accepted && item.end == 0 && !item.flagged) left.emplace_back(&id, &item);
  }
  std::sort(left.begin(), left.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
  for (const auto& [id_p, item_p] : left) {
    const std::string& id = *id_p;
    const Item& item = *item_p;
    const std::size_t at = item.start != 0 ? item.start : item.answer;
    lines.push_back(at);
    open += (open.empty() ? "" : ", ") + q(id) + (item.start != 0 ? " (turn never ended)" : " (never started)");
    if (!cause) cause = Cause{"LANE-8.1", {at, end.line}};
  }
  r_.unsettled.push_back({{"LANE-7.6", lines,
                           "lane " + q(lane.name) + " was asked to close but never drained before `end`" +
                               (open.empty() ? std::string(" although every accepted item had run")
                                             : "; left open: accepted item " + open),
                           false, cause},
                          "", "lane:" + lane.name});
}

// Where each fiber and context comes from, for [LANE-8.5] and [LANE-8.6], and
// [LANE-8.8]: a submission is answered before its fiber does anything else.
void LaneChecker::origins(const Event& e) {
  if (const auto c = capture_for_.find(e.fiber); c != capture_for_.end()) {
    if (e.kind == EventKind::kFlCapture) {  // [FL-3.9] the context captured for the item's turn
      const auto it = c->second.first->items.find(c->second.second);
      if (it != c->second.first->items.end() && it->second.start == 0) {
        it->second.ctx = e.str("ctx");
        it->second.ctx_line = e.line;
        ctx_item_[e.str("ctx")] = {c->second.second, e.line};
      }
    }
    capture_for_.erase(c);
  }
  const auto p = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& s) { return s.fiber == e.fiber; });
  if (p != pending_.end()) {
    const bool answer = (e.kind == EventKind::kLaneAccepted || e.kind == EventKind::kLaneRefused) &&
                        e.str("lane") == p->lane && e.str("item") == p->item;
    // A turn of the item itself before its answer is a late `lane.accepted`:
    // reported as [LANE-5.2] by turn_start (section 4, "Attribution").
    const bool own_turn = e.kind == EventKind::kLaneTurnStart && e.str("lane") == p->lane && e.str("item") == p->item;
    if (!answer && !own_turn) {  // [LANE-8.8] registered before the call returns
      r_.add("LANE-8.8", {p->line, e.line},
             "submission of item " + q(p->item) + " on lane " + q(p->lane) +
                 " was not accepted or refused before its fiber " + q(e.fiber) +
                 " went on (" + e.ev + "); a submission takes effect at the call");
    }
    if (p != pending_.end() - 1) std::swap(*p, pending_.back());  // (their order does not matter)
    pending_.pop_back();
  }
  if (!tainted_.empty() || !tainted_ctx_.empty()) taint(e);
  switch (e.kind) {
    case EventKind::kFiberSpawn: {  // [LANE-8.5] started from a turn: remember which lanes
      std::set<std::string> from = lanes_of(e.fiber);
      if (const auto up = spawned_in_.find(e.fiber); up != spawned_in_.end())
        from.insert(up->second.begin(), up->second.end());
      if (!from.empty()) spawned_in_[e.str("child")] = std::move(from);
      break;
    }
    case EventKind::kFlCapture: {  // [LANE-8.6] a context captured in a turn
      std::set<std::string> in = lanes_of(e.fiber);
      if (in.empty()) ctx_lanes_.erase(e.str("ctx"));
      else ctx_lanes_[e.str("ctx")] = std::move(in);
      break;
    }
    case EventKind::kFlInstall: {
      const auto c = ctx_lanes_.find(e.str("ctx"));
      installs_[e.fiber].push_back(
          Install{e.str("ctx"), c == ctx_lanes_.end() ? std::set<std::string>{} : c->second, e.line});
      break;
    }
    case EventKind::kFlUninstall: {
      const auto found = installs_.find(e.fiber);
      if (found == installs_.end()) break;
      auto& stack = found->second;
      const auto it = std::find_if(stack.rbegin(), stack.rend(),
                                   [&](const Install& f) { return f.ctx == e.str("ctx"); });
      if (it != stack.rend()) stack.erase(std::next(it).base(), stack.end());
      if (stack.empty()) installs_.erase(found);
      break;
    }
    default: break;
  }
}

// The rule a `reentrant` refusal of `fiber`, not on `lane`, breaks.
const char* LaneChecker::off_lane_rule(const std::string& fiber, const std::string& lane) const {
  if (const auto s = spawned_in_.find(fiber); s != spawned_in_.end() && s->second.count(lane) != 0)
    return "LANE-8.5";  // [LANE-8.5] a long-running operation started in a turn
  if (const auto i = installs_.find(fiber); i != installs_.end()) {
    for (const auto& frame : i->second)
      if (frame.lanes.count(lane) != 0) return "LANE-8.6";  // [LANE-8.6] a callback outside the turn
  }
  return "LANE-8.7";
}

std::unique_ptr<Checker> make_lane_checker(Report& report) { return std::make_unique<LaneChecker>(report); }

}  // namespace turnstile::oracle::detail
