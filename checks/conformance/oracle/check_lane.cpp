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
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "oracle/check_internal.hpp"

namespace turnstile::oracle::detail {

namespace {

struct Item {
  std::size_t submit = 0, answer = 0, start = 0, end = 0, resumed = 0;
  std::string op, fiber, start_fiber, outcome, reason;
  bool accepted = false;
  bool submitter_on_lane = false;
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
    std::size_t n = fiber_turns_.size() + settled_.size();
    for (const auto& [name, lane] : lanes_) n += lane.items.size() + lane.queue.size() + lane.open.size();
    return n;
  }

  void on_event(const Event& e) override {
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
        if (item.start == 0) {  // [LANE-8.1] accepted but never ran
          r_.unsettled.push_back({{"LANE-8.1", {item.answer, end.line},
                                   "accepted item " + q(id) + " on lane " + q(name) +
                                       " never started its turn before `end`", false},
                                  "", scope});
        } else if (item.end == 0) {
          r_.unsettled.push_back({{"LANE-8.1", {item.start, end.line},
                                   "turn of item " + q(id) + " on lane " + q(name) +
                                       " never ended before `end`", false},
                                  item.start_fiber, ""});
        }
      }
      for (const auto& id : lane.open) r_.open_turns.emplace_back(scope, lane.items[id].start_fiber);
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
      } else {  // [LANE-8.7]
        r_.add("LANE-8.7", {item.submit, n},
               "post of item " + q(id) + " from fiber " + q(item.fiber) + ", not on lane " +
                   q(name) + ", was refused as reentrant");
      }
    } else if (!item.submitter_on_lane) {  // [LANE-8.7] no false reentrancy
      r_.add("LANE-8.7", {item.submit, n},
             "run of item " + q(id) + " from fiber " + q(item.fiber) + ", not on lane " + q(name) +
                 ", was refused as reentrant");
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
};

}  // namespace

std::unique_ptr<Checker> make_lane_checker(Report& report) { return std::make_unique<LaneChecker>(report); }

}  // namespace turnstile::oracle::detail
