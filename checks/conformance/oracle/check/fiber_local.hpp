// oracle/check/fiber_local.hpp (internal): the FiberLocal checker's model, shared
// by fiber_local.cpp (the events: binds, installs, spawns, reads, `end`) and
// fiber_local_blame.cpp (which rule a wrong read breaks, and its root). The
// model and what is kept: fiber_local.cpp.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "oracle/check/contract_checker.hpp"

namespace turnstile::oracle::detail {

using Env = std::map<std::string, Value>;

struct Frame {
  bool install = false;
  std::string name;  // the key (bind) or ctx (install)
  std::size_t line = 0;
  Env env;           // the environment while this frame is the innermost
  std::string captured_by;  // install: the fiber that captured the snapshot
  std::size_t captured = 0; // install: the line of its capture
};

struct Snapshot {
  Env env;
  std::string fiber;
  std::size_t line = 0;
};

// Which rule a wrong read breaks, the lines behind it, and its root cause.
struct Blame {
  std::string rule;
  std::vector<std::size_t> lines;
  std::optional<Cause> cause;
  std::string why = {};  // appended to the message
};

struct Fiber {
  std::size_t first_event = 0;
  std::size_t spawn = 0;
  std::string parent;
  bool structured = false;
  Env base;
  Env carried;  // a handoff: what its spawner had at the spawn (what a runtime that carries gives it)
  std::vector<Frame> frames;
  std::deque<std::pair<Env, std::size_t>> uninstalled;  // snapshots this fiber left, and where
  struct Restored {
    std::deque<std::pair<Value, std::size_t>> list;  // first restore of each value, oldest first
    std::set<std::string> values;                    // show_value() of those in `list`
  };
  std::map<std::string, Restored> restored;  // ditto binds, by key

  const Env& env() const { return frames.empty() ? base : frames.back().env; }
};

inline std::string show(const std::optional<Value>& v) {
  return v ? show_value(*v) : std::string("unbound");
}

class FiberLocalChecker : public Checker {
 public:
  explicit FiberLocalChecker(Report& report) : r_(report) {}

  std::size_t retained() const override;
  void on_event(const Event& e) override;
  // At a quiescent `end` every `where` has restored and every `run` has
  // uninstalled. (At a timeout, fibers may still be inside them.)
  void at_end(const Event& end) override;

 private:
  // The fiber named `name`, made on its first event. Consecutive events are
  // often of one fiber: the last one is looked up first (map nodes are stable).
  Fiber& fiber_named(const std::string& name);
  void install(const Event& e, Fiber& f);
  void spawn(const Event& e, Fiber& parent);
  void pop(const Event& e, Fiber& f, bool install, const std::string& name, const char* rule);
  void read(const Event& e, const Fiber& f);
  // [FL-3.4] the handoff whose subtree `fiber` is in (itself, or the first
  // handoff above its structured ancestors), or nullptr.
  const std::pair<const std::string, Fiber>* handoff_of(const std::string& fiber) const;
  // [FL-3.4] a read of `seen` for `key` that a handoff above `fiber` carried
  // from its spawner: the first such read per (handoff, key) is the root, at
  // the spawn's and its own lines; later ones are its consequences (A4).
  std::optional<Blame> carried(const std::string& fiber, const std::string& key, const Value& seen,
                               const Event& e);
  // [FL-3.1] the restore of `key` to `seen` on `fiber` before line `before`, or
  // on an ancestor before the spawn that leads to `fiber`: its line, or 0.
  std::size_t leaked(const std::string& fiber, const std::string& key, const Value& seen,
                     std::size_t before) const;
  // A read of a leaked binding (restored at `restore`): the first is the root.
  Blame leak(std::size_t restore, const Event& e);
  // [FL-3.1] the restore of `key` to `seen` on fiber `f` itself within (after, before): its line, or 0.
  static std::size_t restored_between(const Fiber& f, const std::string& key, const Value& seen,
                                      std::size_t after, std::size_t before);
  // Which rule a wrong read breaks, the lines of the events behind it, and
  // the root cause when it follows from an earlier violation.
  Blame attribute(const Event& e, const Fiber& f, const std::string& key, const std::optional<Value>& seen);
  bool is_ancestor(const std::string& maybe, const std::string& fiber) const;
  // The first bind of each (fiber, value) of a key, any fiber, oldest first
  // (bounded: see the top of the file).
  void remember_bind(const std::string& key, const Event& e);

  static constexpr std::size_t kSnapshotWindow = 64;

  Report& r_;
  std::unordered_map<std::string, Fiber, IdHash> fibers_;
  std::pair<const std::string, Fiber>* last_fiber_ = nullptr;  // of the previous event (nodes are stable)
  std::map<std::string, Snapshot> snapshots_;
  std::map<std::size_t, Cause> leak_roots_;  // restore line -> the first read of its leaked binding (one per violation)
  std::map<std::string, Cause> carry_roots_;  // handoff + '\n' + key -> the first read of what it carried (one per violation)
  std::map<std::string, Cause> carried_values_;  // key + '\n' + value carried -> that root (one per violation)
  struct Bind {
    std::string fiber;
    Value value;
    std::size_t line;
  };
  struct Binds {
    std::deque<Bind> list;
    std::set<std::string> seen;  // fiber + '\n' + show_value(value) of those in `list`
  };
  std::map<std::string, Binds> binds_;  // by key
};

}  // namespace turnstile::oracle::detail
