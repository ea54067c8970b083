// oracle/check/turns.hpp (internal): the actor-turn checker's state, shared by
// turns.cpp (calls, turns, the settled window),
// turns_waits.cpp (positions, awaits and the wait-for relation),
// turns_end.cpp (what is left at `end`) and turns_stream.cpp (the
// read-ahead that pairs refusals with their awaits). The model and what is
// kept: turns.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oracle/check/contract_checker.hpp"

namespace turnstile::oracle::detail {

struct TurnCall;

// One `turn.await` of a call not settled: `waiter` (a turn, or null) awaits
// call `target`, which owns it.
struct TurnAwait {
  std::string fiber;
  TurnCall* waiter = nullptr;
  TurnCall* target = nullptr;
  std::size_t line = 0;
  bool edge = false;  // a live edge of the wait-for relation
};

struct TurnCall {
  std::string act, id, fiber, start_fiber;
  bool serial = true;
  bool reentry = false;
  bool settled = false;  // ended or refused: in the settled window
  std::size_t line = 0, refused = 0, start = 0, end = 0, slow = 0;
  std::list<TurnAwait> awaits;         // its awaits not refused, while it is not settled
  std::vector<TurnAwait*> waits;       // live edges out of this call's turn
  std::vector<TurnAwait*> awaited_by;  // live edges into this call
  std::vector<std::string> children;   // structured fibers spawned in its turn (they are part of it)
  std::vector<std::string> awaiters;   // fibers that began an await of it not refused (for a late abandon)
};

struct TurnActivation {
  std::deque<TurnCall*> queue;  // serial calls not yet started or refused, in call order
  std::vector<TurnCall*> open_serial;
  std::vector<TurnCall*> open_interleaved;
  // [TURN-2.3] what the trace says the activation's counters are
  std::int64_t running = 0, completed = 0, slow = 0;
};

// One hop of a cycle: `node` waits for the next hop's node, behind it in its
// activation's queue (`via` null) or awaiting it (`via`).
struct Hop {
  TurnCall* node;
  const TurnAwait* via;
};

// Each `turn.await_refused` paired with the `turn.await` it answers (filled by
// StreamingTurns before the checker reads either; each entry is taken by the
// checker when it reads the line it is keyed by).
struct Refusals {
  std::map<std::size_t, std::size_t> of_await;   // await line -> refusal line
  std::map<std::size_t, std::size_t> of_refusal; // refusal line -> await line
};

class TurnChecker {
 public:
  TurnChecker(Report& report, Refusals& refusals) : r_(report), refusals_(refusals) {}

  std::size_t retained() const;
  // Whether the `turn.await` `e` would become a wait edge unless refused: it
  // is made from a turn, of a call made and not settled.
  bool may_wait(const Event& e) const;
  void on_event(const Event& e);
  void at_end(const Event& end);

 private:
  using Call = TurnCall;
  using Await = TurnAwait;
  using Activation = TurnActivation;

  // turns.cpp: calls and turns
  void call(const Event& e, const std::string& act, const std::string& id, const std::string& key);
  void refused(const Event& e, Call& c);
  void start(const Event& e, Call& c);
  void end(const Event& e, Call& c);
  void dequeue(const Call& c);
  void slow(const Event& e, Call& c);
  void counters(const Event& e, const std::string& act);
  void settle(std::map<std::string, Call>::iterator it);
  void forget(std::map<std::string, Call>::iterator it);

  // turns_waits.cpp: positions, awaits and cycles
  void spawn(const Event& e);
  void leave_lane(const std::string& fiber);
  Call* part_of(const std::string& fiber) const;
  void await(const Event& e, Call& c, bool refused);
  void await_refused(const Event& e, Call& c, std::optional<std::size_t> paired);
  void await_abandoned(const Event& e, Call& c);
  void successors(Call* n, std::vector<Hop>& out) const;
  bool find_path(Call* from, const Call* goal, std::vector<Hop>& path) const;
  void report_cycle(const std::vector<Hop>& hops, std::vector<std::size_t> lines, const std::string& why);

  // turns_end.cpp: at `end`
  void stuck_at_end(const Event& end);
  void lanes_waited_at_end(const Event& end);
  std::optional<Cause> cause_of(const Call* c) const;

  // Orders calls by their `turn.call` line (unique per call): what is
  // reported does not depend on where calls live in memory.
  struct ByLine {
    bool operator()(const Call* a, const Call* b) const { return a->line < b->line; }
  };
  // The last await a fiber began, for a `turn.await_refused` answering it.
  struct AwaitNote {
    std::size_t line = 0;
    std::size_t waiter = 0;  // the awaiting turn's call line, 0: part of no turn
    std::string waiter_id, waiter_act;
    std::size_t waiter_start = 0;
  };

  Report& r_;
  Refusals& refusals_;
  std::map<std::string, Call> calls_;  // "act\ncall": open calls and the settled window (nodes are stable)
  std::unordered_map<std::size_t, Call*> by_line_;  // the calls of calls_ by their `turn.call` line
  std::deque<std::map<std::string, Call>::iterator> settled_;  // oldest first
  std::map<std::string, Activation> activations_;
  std::map<std::string, std::pair<bool, std::size_t>> modes_;  // "act\nmethod" -> serial?, first call
  std::unordered_map<std::string, AwaitNote, IdHash> last_await_;  // per fiber
  // Per fiber, the turns it opened, innermost last: a call, or null for a lane turn.
  std::unordered_map<std::string, std::vector<Call*>, IdHash> position_;  // never iterated in order
  std::map<std::string, Call*> inherited_;  // structured children: the parent's turn at the spawn
  std::map<std::string, std::set<std::string>> tasks_;  // started tasks per activation
  std::set<std::set<std::size_t>> reported_;  // cycles already reported (their calls' lines)
  std::set<const Call*, ByLine> stuck_;       // at `end`: calls in or behind an open cycle
  std::set<const Call*> waited_;              // at `end`: calls reported under TURN-3.2
  std::map<const Call*, Cause> consequence_;  // at `end`: what follows from a TURN-3.2 violation
};

}  // namespace turnstile::oracle::detail
