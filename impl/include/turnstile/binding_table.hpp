// turnstile/binding_table.hpp: BindingTable, the worked example of a C2
// component: two plain maps that must agree, owned by one StateLane.
//
//   BindingTable table("bindings");
//   co_await table.bind("actor-1", "session-a");
//   co_await table.rebind("actor-1", "session-b");   // one turn, no window
//   auto s = co_await table.session_of("actor-1");    // "session-b"
//   co_await table.close();                           // before destroying it
//
// Why C2 ([LANE-4.2], [LANE-4.4]): actor->session and session->actor are each a
// plain lookup, but together they carry one invariant (each is the inverse of
// the other). A concurrent map per direction would make each single update
// atomic and still let a reader see one map changed and the other not. So the
// whole component, both maps, lives on one lane, and the maps stay plain,
// unlocked std::unordered_map ([LANE-5.4]).
//
// Structure ([LANE-6.1], kind 1): each public method enters the lane exactly
// once, with a plain callable that calls private *_on_lane bodies directly.
// rebind() is unbind + bind in one turn; calling the public unbind()/bind()
// from inside the turn would be reentrant and throw LaneReentrancyError.
// The public methods are plain functions returning lane_.run(...), not
// coroutines: the turn is queued when the method is called ([LANE-5.8]), and
// no lambda with a std::string capture sits inside a co_await expression
// (GCC 12 miscompiles such a temporary: double free of the capture).
//
// Guarantees
//   - Invariant: between turns, actor_to_session_ and session_to_actor_ are
//     exact inverses; no caller ever observes them disagreeing ([LANE-8.10]).
//   - Every method is queued on the lane when it is called, before it returns
//     (completion before return, [LANE-5.8]): a bind() called before a
//     session_of() is seen by it, even if the bind's Task is awaited later.
//   - Calls run in the order they take effect (FIFO, [LANE-5.2]).
//
// Where a continuation resumes: as for StateLane::run(): in a step posted to the
// awaiting fiber's scheduler, after the turn's marker is released ([LANE-5.6]).
//
// Thread safety: every method may be called from any fiber or thread, any
// number at once. Calling a method from inside this table's own turn throws
// LaneReentrancyError. Precondition: co_await close() before destroying it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "turnstile/scheduler.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/task.hpp"

namespace turnstile {

class BindingTable {
 public:
  // Its lane runs on `scheduler`; the default is the process-wide pool
  // described at default_scheduler() (scheduler.hpp).
  explicit BindingTable(std::string name = "binding-table",
                        Scheduler& scheduler = default_scheduler())
      : lane_(std::move(name), scheduler) {}

  // Binds actor <-> session when neither is bound yet. True when bound; false
  // (and nothing changes) when either side already has a binding.
  Task<bool> bind(std::string actor, std::string session) {
    return lane_.run([this, a = std::move(actor), s = std::move(session)] {
      return bind_on_lane(a, s);  // [LANE-6.1] one lane entry, the body called directly
    });
  }

  // Moves `actor` to `session`, in one turn: drops the actor's current binding
  // and the session's current owner, then binds them. Returns the actor's
  // previous session, if any.
  Task<std::optional<std::string>> rebind(std::string actor, std::string session) {
    return lane_.run([this, a = std::move(actor), s = std::move(session)] {
      std::optional<std::string> previous = session_of_on_lane(a);
      unbind_on_lane(a);          // [LANE-6.1] not unbind(): that would re-enter the lane
      unbind_session_on_lane(s);  // the session's previous owner, if any
      bind_on_lane(a, s);         // both maps change in this same turn [LANE-4.2]
      return previous;
    });
  }

  // Removes the actor's binding (both directions). True when there was one.
  Task<bool> unbind(std::string actor) {
    return lane_.run([this, a = std::move(actor)] { return unbind_on_lane(a); });
  }

  Task<std::optional<std::string>> session_of(std::string actor) {
    return lane_.run([this, a = std::move(actor)] { return session_of_on_lane(a); });
  }

  Task<std::optional<std::string>> actor_of(std::string session) {
    return lane_.run([this, s = std::move(session)] {
      auto it = session_to_actor_.find(s);
      return it == session_to_actor_.end() ? std::nullopt
                                           : std::optional<std::string>(it->second);
    });
  }

  // True when the two maps are exact inverses (checked in one turn).
  Task<bool> consistent() {
    return lane_.run([this] { return consistent_on_lane(); });
  }

  Task<std::size_t> size() {
    return lane_.run([this] { return actor_to_session_.size(); });
  }

  // Closes the lane: later calls throw LaneClosedError; completes once every
  // accepted call has run.
  [[nodiscard]] Task<> close() { return lane_.close(); }

  StateLane& lane() noexcept { return lane_; }

 private:
  // The *_on_lane bodies run only inside this table's turn and never enter the
  // lane. They may call each other freely (kind 1, [LANE-6.1]).
  bool bind_on_lane(const std::string& actor, const std::string& session) {
    if (actor_to_session_.count(actor) != 0 || session_to_actor_.count(session) != 0) return false;
    actor_to_session_.emplace(actor, session);  // [LANE-5.4] plain maps, no lock:
    session_to_actor_.emplace(session, actor);  //   the lane's single turn is the exclusion
    return true;
  }

  bool unbind_on_lane(const std::string& actor) {
    auto it = actor_to_session_.find(actor);
    if (it == actor_to_session_.end()) return false;
    session_to_actor_.erase(it->second);
    actor_to_session_.erase(it);
    return true;
  }

  bool unbind_session_on_lane(const std::string& session) {
    auto it = session_to_actor_.find(session);
    if (it == session_to_actor_.end()) return false;
    return unbind_on_lane(it->second);
  }

  std::optional<std::string> session_of_on_lane(const std::string& actor) const {
    auto it = actor_to_session_.find(actor);
    return it == actor_to_session_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }

  bool consistent_on_lane() const {
    if (actor_to_session_.size() != session_to_actor_.size()) return false;
    for (const auto& [actor, session] : actor_to_session_) {
      auto it = session_to_actor_.find(session);
      if (it == session_to_actor_.end() || it->second != actor) return false;
    }
    return true;
  }

  StateLane lane_;
  std::unordered_map<std::string, std::string> actor_to_session_;  // owned by lane_
  std::unordered_map<std::string, std::string> session_to_actor_;  // owned by lane_
};

}  // namespace turnstile
