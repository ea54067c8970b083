// oracle/check/lane.hpp (internal): the state-lane checker's state, shared by
// lane.cpp (dispatch, origins, what is left at `end`) and
// lane_items.cpp (one item's events). See lane.cpp for the model
// and for what is kept.
#pragma once

#include <cstddef>
#include <deque>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oracle/check/contract_checker.hpp"

namespace turnstile::oracle::detail {

struct LaneItem {
  std::size_t submit = 0, answer = 0, start = 0, end = 0, resumed = 0;
  std::size_t drop = 0;  // its `lane.dropped` (optional): discarded unrun
  std::string fiber, start_fiber, outcome;
  bool run = false;  // op `run` (else `post`)
  bool accepted = false;
  bool submitter_on_lane = false;
  bool submitter_in_turn = false;   // inside a turn of any lane: it cannot await
  const char* off_lane_rule = "LANE-8.7";  // a false reentrancy refusal breaks this
  std::string origin;  // why the submitter might look on the lane, for messages
  bool flagged = false;  // already reported; its later absence is not news
  bool settled = false;  // in the settled window (see lane.cpp)
  // Roots about this item that later violations follow from (trace-format.md
  // section 4, "Attribution"): accepted as a reentrant run ([LANE-5.3]), accepted
  // after a close request ([LANE-7.4]), started before its `lane.accepted` ([LANE-5.2]),
  // dropped by the library before its turn ([LANE-8.1]).
  std::optional<Cause> reentrant, closed, late, dropped;
  std::optional<Cause> inline_of;  // its [LANE-5.3], when its turn started inside its submitter's
  std::string ctx;                    // the context captured for it (its submitter's next event), if any
  std::size_t ctx_line = 0;
  std::size_t foreign_ctx = SIZE_MAX;  // index in Report::violations of its [FL-3.9], if any
};

struct LaneState {
  std::string name;
  // Unordered: at_end's reports do not depend on the order it visits items (each
  // is sorted by its first line, a line naming only that item).
  std::unordered_map<std::string, LaneItem, IdHash> items;
  std::deque<std::string> queue;       // accepted, not started, in acceptance order
  std::vector<std::string> open;       // items whose turn is open
  std::size_t close_requested = 0;     // first close request
  std::size_t drained = 0;             // first drain
};

class LaneChecker : public Checker {
 public:
  explicit LaneChecker(Report& report) : r_(report) {}

  std::size_t retained() const override;
  void on_event(const Event& e) override;
  void at_end(const Event& end) override;

 private:
  using Item = LaneItem;
  using Lane = LaneState;

  // lane.cpp
  Lane& lane_named(const std::string& name);
  bool on_lane(const std::string& fiber, const std::string& lane) const;
  bool in_turn(const std::string& fiber) const;
  std::set<std::string> lanes_of(const std::string& fiber) const;
  void settle(Lane& lane, const std::string& id, Item& item);
  void never_drained(Lane& lane, const Event& end);
  void origins(const Event& e);
  const char* off_lane_rule(const std::string& fiber, const std::string& lane) const;

  // lane_items.cpp
  void submit(Lane& lane, const Event& e, const std::string& id);
  void answer(Lane& lane, const Event& e, const std::string& id, Item& item);
  void turn_start(Lane& lane, const Event& e, const std::string& id, Item& item);
  void turn_end(Lane& lane, const Event& e, const std::string& id, Item& item);
  void resumed(const Lane& lane, const Event& e, const std::string& id, Item& item);
  void dropped(Lane& lane, const Event& e, const std::string& id, Item& item);
  void drained(Lane& lane, std::size_t n);
  void close_returned(const Lane& lane, const Event& e);

  Report& r_;
  std::map<std::string, Lane> lanes_;  // nodes are stable: Lane& and Lane* stay valid
  Lane* last_lane_ = nullptr;          // the lane of the previous lane event (consecutive events share it)
  // fiber -> lanes it is in, innermost last (an emptied entry is kept for reuse: a fiber on no lane)
  std::unordered_map<std::string, std::vector<std::string>, IdHash> fiber_turns_;
  std::deque<std::pair<Lane*, std::string>> settled_;              // (lane, item), oldest first
  struct Pending {
    std::string fiber, lane, item;
    std::size_t line;
  };
  std::vector<Pending> pending_;  // submissions not answered yet, one per fiber at most
  std::map<std::string, std::set<std::string>> spawned_in_;  // fiber -> lanes whose turn started it
  std::map<std::string, std::set<std::string>> ctx_lanes_;   // ctx -> lanes whose turn captured it
  // fiber -> its open installs, innermost last: ctx and the lanes it was captured in
  struct Install {
    std::string ctx;
    std::set<std::string> lanes;
    std::size_t line = 0;
  };
  std::map<std::string, std::vector<Install>> installs_;
  // [FL-3.9] the item whose capture a fiber's next event may be (after its
  // `lane.accepted`), and the item each such capture was made for (while the
  // item is open or in the settled window).
  std::unordered_map<std::string, std::pair<Lane*, std::string>, IdHash> capture_for_;
  std::unordered_map<std::string, std::pair<std::string, std::size_t>, IdHash> ctx_item_;  // ctx -> (item, line)
  // Where the bindings of a turn run in a foreign context reach (A3): fiber ->
  // the open span of that [FL-3.9] on it (the turn, an install of a context
  // captured in such a span until its uninstall, a structured child spawned
  // in one); and the contexts captured inside a span (the last kSettledWindow).
  struct Taint {
    std::size_t violation = 0, span = 0;
    std::string until_ctx;  // an install's span ends at its uninstall; else at the turn's end, or never
  };
  std::unordered_map<std::string, Taint, IdHash> tainted_;
  std::unordered_map<std::string, std::size_t, IdHash> tainted_ctx_;  // ctx -> violation
  std::deque<std::string> tainted_order_;                             // of tainted_ctx_, oldest first
  void foreign_context(Lane& lane, const Event& e, const std::string& id, Item& item);
  void taint(const Event& e);
  void open_span(std::size_t violation, const std::string& fiber, std::size_t line, std::string until_ctx);
};

}  // namespace turnstile::oracle::detail
