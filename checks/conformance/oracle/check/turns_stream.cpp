// oracle/check/turns_stream.cpp: StreamingTurns, the actor-turn checker fed
// in one pass with the read-ahead that pairs each `turn.await_refused` with
// the `turn.await` it answers (the model: turns.cpp).
#include <deque>
#include <map>
#include <set>
#include <string>

#include "oracle/check/turns.hpp"

namespace turnstile::oracle::detail {

namespace {

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
    return checker_.retained() + held_.size() + last_await_.size() + pending_.size() +
           refusals_.of_await.size() + refusals_.of_refusal.size();
  }

  void on_event(const Event& e) override {
    const auto last = last_await_.empty() ? last_await_.end() : last_await_.find(e.fiber);
    if (last != last_await_.end()) {  // this fiber's previous event was a `turn.await`
      if (e.kind == EventKind::kTurnAwaitRefused && last->second.key == e.str("act") + '\n' + e.str("call")) {
        refusals_.of_await[last->second.line] = e.line;
        refusals_.of_refusal[e.line] = last->second.line;
      }
      pending_.erase(last->second.line);
      last_await_.erase(last);
    }
    if (e.kind == EventKind::kTurnAwait) last_await_[e.fiber] = {e.line, e.str("act") + '\n' + e.str("call")};
    if (!last_await_.empty() && e.kind == EventKind::kTurnEnd) {  // the awaits of the call are answered: none is refused now
      const std::string key = e.str("act") + '\n' + e.str("call");
      for (auto it = last_await_.begin(); it != last_await_.end();) {
        if (it->second.key != key) { ++it; continue; }
        pending_.erase(it->second.line);
        it = last_await_.erase(it);
      }
    }
    if (reads(e)) {
      if (e.kind == EventKind::kTurnAwait && (!held_.empty() || checker_.may_wait(e))) pending_.insert(e.line);
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
    return e.kind == EventKind::kFiberSpawn || e.kind == EventKind::kLaneTurnStart ||
           e.kind == EventKind::kLaneTurnEnd || is_turn_event(e.kind);
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
