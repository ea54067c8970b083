// oracle/check_lane.cpp: the state-lane rules of spec/trace-format.md section 5,
// checked per lane. A fiber is on lane L from a `lane.turn_start` of L it
// emitted until the matching `lane.turn_end` (the oracle derives it; the
// runtime does not report it).
//
// State is what is open: an item is kept from its submission until it is
// settled (refused; a post whose turn ended; a run whose awaiter resumed after
// its turn ended), then among the last kSettledWindow settled items, then
// forgotten. Safe because nothing more is expected of a settled item: at `end`
// it reports nothing, and no queue or open turn names it; only an event that
// repeats one of its events (a second submission, answer, start, end or
// resumption: [LANE-8.1]) names it again, and such an event gets its exact
// message while the item is in the window (older: see spec/trace-format.md §5).
//
// Where a wrong refusal comes from decides its rule: a `reentrant` refusal of
// a fiber not on the lane is [LANE-8.5] when that fiber was started from a
// turn of the lane (a long-running operation coming back), [LANE-8.6] when it
// runs inside a context captured in a turn of the lane (a callback invoked
// outside the turn), else [LANE-8.7].
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "oracle/check_internal.hpp"

namespace turnstile::oracle::detail {

namespace {

struct Item {
  std::size_t submit = 0, answer = 0, start = 0, end = 0, resumed = 0;
  std::string op, fiber, start_fiber, outcome, reason;
  bool accepted = false;
  bool submitter_on_lane = false;
  bool submitter_in_turn = false;   // inside a turn of any lane: it cannot await
  const char* off_lane_rule = "LANE-8.7";  // a false reentrancy refusal breaks this
  std::string origin;  // why the submitter might look on the lane, for messages
  bool flagged = false;  // already reported; its later absence is not news
  bool settled = false;  // in settled_ (see the top of the file)
};

struct Lane {
  // Unordered: at_end's reports do not depend on the order it visits items (each
  // is sorted by its first line, a line naming only that item).
  std::unordered_map<std::string, Item> items;
  std::deque<std::string> queue;       // accepted, not started, in acceptance order
  std::vector<std::string> open;       // items whose turn is open
  std::size_t close_requested = 0;     // first close request
  std::size_t drained = 0;             // first drain
};

class LaneChecker : public Checker {
 public:
  explicit LaneChecker(Report& report) : r_(report) {}

  std::size_t retained() const override {
    std::size_t n = fiber_turns_.size() + settled_.size() + pending_.size() + spawned_in_.size() +
                    ctx_lanes_.size() + installs_.size();
    for (const auto& [name, lane] : lanes_) n += lane.items.size() + lane.queue.size() + lane.open.size();
    return n;
  }

  void on_event(const Event& e) override {
    if (!e.fiber.empty()) origins(e);
    if (e.ev.rfind("lane.", 0) != 0) return;
    const std::string& name = e.str("lane");
    Lane& lane = lanes_[name];
    const std::size_t n = e.line;
    if (e.ev == "lane.close_requested") {
      if (lane.close_requested == 0) lane.close_requested = n;
      return;
    }
    if (e.ev == "lane.drained") return drained(name, lane, n);
    const std::string& id = e.str("item");
    if (e.ev == "lane.submit") return submit(name, lane, e, id);
    const auto it = lane.items.find(id);
    if (it == lane.items.end()) {  // [LANE-8.1] nothing happens to an item never submitted
      r_.add("LANE-8.1", {n}, e.ev + " of item " + q(id) + " on lane " + q(name) +
                                  ", which was never submitted");
      return;
    }
    Item& item = it->second;
    if (e.ev == "lane.accepted" || e.ev == "lane.refused") answer(name, lane, e, id, item);
    else if (e.ev == "lane.turn_start") turn_start(name, lane, e, id, item);
    else if (e.ev == "lane.turn_end") turn_end(name, lane, e, id, item);
    else if (e.ev == "lane.resumed") resumed(name, e, id, item);
    settle(name, id, item);
  }

  void at_end(const Event& end) override {
    for (auto& [name, lane] : lanes_) {
      const std::string scope = "lane:" + name;
      for (auto& [id, item] : lane.items) {
        if (item.answer == 0) {
          if (item.op == "run" && item.submitter_on_lane) {
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
                                         " was never accepted or refused before `end`", false},
                                    item.fiber, ""});
          }
          continue;
        }
        if (!item.accepted || item.flagged) continue;
        if (item.op == "run" && item.end != 0 && item.resumed == 0 && !item.submitter_in_turn) {
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
      if (lane.close_requested != 0 && lane.drained == 0) never_drained(name, lane, end);
    }
  }

 private:
  bool on_lane(const std::string& fiber, const std::string& lane) const {
    const auto it = fiber_turns_.find(fiber);
    if (it == fiber_turns_.end()) return false;
    return std::find(it->second.begin(), it->second.end(), lane) != it->second.end();
  }

  // Moves a settled item to the window of settled items, forgetting the oldest.
  void settle(const std::string& name, const std::string& id, Item& item) {
    if (item.settled || item.answer == 0) return;
    if (item.accepted && (item.end == 0 || (item.op == "run" && item.resumed == 0))) return;
    item.settled = true;
    settled_.emplace_back(name, id);
    if (settled_.size() <= kSettledWindow) return;
    lanes_[settled_.front().first].items.erase(settled_.front().second);
    settled_.pop_front();
  }

  // [LANE-7.6] a close whose drain never came: what was left open. When an
  // accepted item never finished, the hang of the close follows from it.
  void never_drained(const std::string& name, Lane& lane, const Event& end) {
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
                             "lane " + q(name) + " was asked to close but never drained before `end`" +
                                 (open.empty() ? std::string(" although every accepted item had run")
                                               : "; left open: accepted item " + open),
                             false, cause},
                            "", "lane:" + name});
  }

  // Where each fiber and context comes from, for [LANE-8.5] and [LANE-8.6], and
  // [LANE-8.8]: a submission is answered before its fiber does anything else.
  void origins(const Event& e) {
    if (const auto p = pending_.empty() ? pending_.end() : pending_.find(e.fiber); p != pending_.end()) {
      const bool answer = (e.ev == "lane.accepted" || e.ev == "lane.refused") &&
                          e.str("lane") == p->second.lane && e.str("item") == p->second.item;
      if (!answer) {  // [LANE-8.8] registered before the call returns
        r_.add("LANE-8.8", {p->second.line, e.line},
               "submission of item " + q(p->second.item) + " on lane " + q(p->second.lane) +
                   " was not accepted or refused before its fiber " + q(e.fiber) +
                   " went on (" + e.ev + "); a submission takes effect at the call");
      }
      pending_.erase(p);
    }
    if (e.ev[0] == 'l') return;  // lane.*: none of the below
    if (e.ev == "fiber.spawn") {  // [LANE-8.5] started from a turn: remember which lanes
      std::set<std::string> from = lanes_of(e.fiber);
      if (const auto up = spawned_in_.find(e.fiber); up != spawned_in_.end())
        from.insert(up->second.begin(), up->second.end());
      if (!from.empty()) spawned_in_[e.str("child")] = std::move(from);
    } else if (e.ev == "fl.capture") {  // [LANE-8.6] a context captured in a turn
      std::set<std::string> in = lanes_of(e.fiber);
      if (in.empty()) ctx_lanes_.erase(e.str("ctx"));
      else ctx_lanes_[e.str("ctx")] = std::move(in);
    } else if (e.ev == "fl.install") {
      const auto c = ctx_lanes_.find(e.str("ctx"));
      installs_[e.fiber].emplace_back(e.str("ctx"), c == ctx_lanes_.end() ? std::set<std::string>{} : c->second);
    } else if (e.ev == "fl.uninstall") {
      auto& stack = installs_[e.fiber];
      const auto it = std::find_if(stack.rbegin(), stack.rend(),
                                   [&](const auto& f) { return f.first == e.str("ctx"); });
      if (it != stack.rend()) stack.erase(std::next(it).base(), stack.end());
      if (stack.empty()) installs_.erase(e.fiber);
    }
  }

  std::set<std::string> lanes_of(const std::string& fiber) const {
    const auto it = fiber_turns_.find(fiber);
    if (it == fiber_turns_.end()) return {};
    return {it->second.begin(), it->second.end()};
  }

  // The rule a `reentrant` refusal of `fiber`, not on `lane`, breaks.
  const char* off_lane_rule(const std::string& fiber, const std::string& lane) const {
    if (const auto s = spawned_in_.find(fiber); s != spawned_in_.end() && s->second.count(lane) != 0)
      return "LANE-8.5";  // [LANE-8.5] a long-running operation started in a turn
    if (const auto i = installs_.find(fiber); i != installs_.end()) {
      for (const auto& frame : i->second)
        if (frame.second.count(lane) != 0) return "LANE-8.6";  // [LANE-8.6] a callback outside the turn
    }
    return "LANE-8.7";
  }

  void submit(const std::string& name, Lane& lane, const Event& e, const std::string& id) {
    if (lane.items.count(id) != 0) {  // [LANE-8.1] an item is one submission
      r_.add("LANE-8.1", {lane.items[id].submit, e.line},
             "item " + q(id) + " on lane " + q(name) + " was submitted twice");
      return;
    }
    Item& item = lane.items[id];
    item.submit = e.line;
    item.op = e.str("op");
    item.fiber = e.fiber;
    item.submitter_on_lane = on_lane(e.fiber, name);
    item.submitter_in_turn = fiber_turns_.count(e.fiber) != 0;  // (emptied entries are erased)
    if (!item.submitter_on_lane) {
      item.off_lane_rule = off_lane_rule(e.fiber, name);
      if (item.off_lane_rule == std::string("LANE-8.5"))
        item.origin = " (it was started from a turn of that lane and must enter it normally)";
      else if (item.off_lane_rule == std::string("LANE-8.6"))
        item.origin = " (it runs in a context captured in a turn of that lane: a callback outside the turn)";
    }
    pending_[e.fiber] = Pending{name, id, e.line};
  }

  void answer(const std::string& name, Lane& lane, const Event& e, const std::string& id, Item& item) {
    const std::size_t n = e.line;
    if (item.answer != 0) {
      r_.add("LANE-8.1", {item.answer, n},
             "item " + q(id) + " on lane " + q(name) + " was answered twice");
      return;
    }
    item.answer = n;
    const bool closed_before_submit = lane.close_requested != 0 && lane.close_requested < item.submit;
    if (e.ev == "lane.accepted") {
      item.accepted = true;
      lane.queue.push_back(id);
      if (item.op == "run" && item.submitter_on_lane) {  // [LANE-5.3]
        r_.add("LANE-5.3", {item.submit, n},
               "run of item " + q(id) + " was submitted from a turn of lane " + q(name) +
                   " by fiber " + q(item.fiber) + " and accepted; it must be refused as reentrant");
        item.flagged = true;
      }
      if (closed_before_submit) {  // [LANE-7.4]
        r_.add("LANE-7.4", {lane.close_requested, item.submit, n},
               "item " + q(id) + " was submitted after lane " + q(name) +
                   " was asked to close and accepted; it must be refused with `closed`");
        item.flagged = true;
      }
      return;
    }
    item.reason = e.str("reason");
    if (item.reason == "closed") {
      if (lane.close_requested == 0) {  // [LANE-7.4] `closed` only after a close request
        r_.add("LANE-7.4", {item.submit, n},
               "item " + q(id) + " was refused with `closed` but lane " + q(name) +
                   " was never asked to close before");
      }
      return;
    }
    // reason == "reentrant"
    if (item.op == "post") {
      if (item.submitter_on_lane) {  // [LANE-7.7] posting from one's own turn is legal
        r_.add("LANE-7.7", {item.submit, n},
               "post of item " + q(id) + " from a turn of lane " + q(name) +
                   " was refused as reentrant; it must be accepted and queued behind");
      } else {  // [LANE-8.7] (or 8.5/8.6 by where the fiber comes from)
        r_.add(item.off_lane_rule, {item.submit, n},
               "post of item " + q(id) + " from fiber " + q(item.fiber) + ", not on lane " +
                   q(name) + ", was refused as reentrant" + item.origin);
      }
    } else if (!item.submitter_on_lane) {  // [LANE-8.7] no false reentrancy ([LANE-8.5], [LANE-8.6])
      r_.add(item.off_lane_rule, {item.submit, n},
             "run of item " + q(id) + " from fiber " + q(item.fiber) + ", not on lane " + q(name) +
                 ", was refused as reentrant" + item.origin);
    }
    if (closed_before_submit && item.op == "post") {
      // [LANE-7.4] after a close request, refusals say `closed` (a run from the
      // lane's own turn may say either).
      r_.add("LANE-7.4", {lane.close_requested, n},
             "item " + q(id) + " was submitted after lane " + q(name) +
                 " was asked to close; it must be refused with `closed`");
    }
  }

  void turn_start(const std::string& name, Lane& lane, const Event& e, const std::string& id, Item& item) {
    const std::size_t n = e.line;
    if (!item.accepted || item.start != 0) {  // [LANE-8.1] exactly once, never unaccepted
      r_.add("LANE-8.1", {item.start != 0 ? item.start : item.submit, n},
             item.start != 0 ? "turn of item " + q(id) + " on lane " + q(name) + " started twice"
                             : "turn of item " + q(id) + " on lane " + q(name) +
                                   " started but the item was never accepted");
      return;
    }
    item.start = n;
    item.start_fiber = e.fiber;
    if (!lane.open.empty()) {  // [LANE-5.1] one turn at a time
      const Item& other = lane.items[lane.open.back()];
      r_.add("LANE-5.1", {other.start, n},
             "turn of item " + q(id) + " started on lane " + q(name) + " while the turn of item " +
                 q(lane.open.back()) + " was still open");
    }
    if (lane.drained != 0) {  // [LANE-7.6] nothing runs after the drain
      r_.add("LANE-7.6", {lane.drained, n},
             "turn of item " + q(id) + " started after lane " + q(name) + " was drained");
    }
    const auto pos = std::find(lane.queue.begin(), lane.queue.end(), id);
    if (pos != lane.queue.end() && pos != lane.queue.begin()) {  // [LANE-5.2] FIFO
      const Item& first = lane.items[lane.queue.front()];
      r_.add("LANE-5.2", {first.answer, item.answer, n},
             "turn of item " + q(id) + " started on lane " + q(name) + " before item " +
                 q(lane.queue.front()) + ", which was accepted earlier");
    }
    if (pos != lane.queue.end()) lane.queue.erase(pos);
    lane.open.push_back(id);
    fiber_turns_[e.fiber].push_back(name);
  }

  void turn_end(const std::string& name, Lane& lane, const Event& e, const std::string& id, Item& item) {
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
    item.outcome = e.str("outcome");
    auto& turns = fiber_turns_[item.start_fiber];
    const auto mine = std::find(turns.rbegin(), turns.rend(), name);
    if (mine != turns.rend()) turns.erase(std::next(mine).base());
    if (turns.empty()) fiber_turns_.erase(item.start_fiber);  // on no lane: nothing to keep
  }

  void resumed(const std::string& name, const Event& e, const std::string& id, Item& item) {
    const std::size_t n = e.line;
    if (!item.accepted || item.op != "run" || item.resumed != 0) {
      r_.add("LANE-8.1", {item.submit, n},
             "lane.resumed of item " + q(id) + " on lane " + q(name) +
                 (item.resumed != 0 ? ", which was already resumed"
                                    : ", which is not an accepted run"));
      return;
    }
    item.resumed = n;
    if (item.end == 0) {  // [LANE-5.6] resumption only after the marker is released
      r_.add("LANE-5.6", {item.start != 0 ? item.start : item.answer, n},
             "the awaiter of item " + q(id) + " on lane " + q(name) +
                 " resumed before the item's turn ended");
      return;
    }
    if (on_lane(e.fiber, name)) {  // [LANE-5.6] never inline, inside someone's turn
      r_.add("LANE-5.6", {item.end, n},
             "the awaiter of item " + q(id) + " resumed on fiber " + q(e.fiber) +
                 " while that fiber was inside a turn of lane " + q(name));
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

  void drained(const std::string& name, Lane& lane, std::size_t n) {
    if (lane.close_requested == 0) {  // [LANE-7.6] drained only after a close request
      r_.add("LANE-7.6", {n}, "lane " + q(name) + " reported drained without a close request");
    }
    std::vector<std::size_t> lines{n};
    std::string pending;
    for (const auto& id : lane.queue) { lines.push_back(lane.items[id].answer); pending = id; }
    for (const auto& id : lane.open) { lines.push_back(lane.items[id].start); pending = id; }
    if (!pending.empty()) {  // [LANE-7.6] everything accepted has run
      r_.add("LANE-7.6", lines, "lane " + q(name) + " reported drained while accepted item " +
                                    q(pending) + " had not finished its turn");
    }
    if (lane.drained == 0) lane.drained = n;
  }

  Report& r_;
  std::map<std::string, Lane> lanes_;
  std::map<std::string, std::vector<std::string>> fiber_turns_;  // fiber -> lanes it is in
  std::deque<std::pair<std::string, std::string>> settled_;       // (lane, item), oldest first
  struct Pending {
    std::string lane, item;
    std::size_t line;
  };
  std::map<std::string, Pending> pending_;  // fiber -> its submission not answered yet
  std::map<std::string, std::set<std::string>> spawned_in_;  // fiber -> lanes whose turn started it
  std::map<std::string, std::set<std::string>> ctx_lanes_;   // ctx -> lanes whose turn captured it
  // fiber -> its open installs, innermost last: ctx and the lanes it was captured in
  std::map<std::string, std::vector<std::pair<std::string, std::set<std::string>>>> installs_;
};

}  // namespace

std::unique_ptr<Checker> make_lane_checker(Report& report) { return std::make_unique<LaneChecker>(report); }

}  // namespace turnstile::oracle::detail
