// oracle/check/fiber_local.cpp: the FiberLocal rules of spec/trace-format.md
// section 5 against a model of every fiber's bindings.
//
// Model: per fiber a base environment (empty for a root fiber or a handoff, a
// copy of the parent's current environment at the `fiber.spawn` for a
// structured child) and a stack of frames: `fl.bind` pushes the current
// environment plus one binding, `fl.install` pushes the captured snapshot in
// place of the fiber's own chain, `fl.restore`/`fl.uninstall` pop. A read must
// see the top environment. When it does not, the rule it breaks is chosen from
// where the expected (or the observed) value comes from; see attribute().
//
// State: per fiber its frames (what is open) and, for attribution only, what
// it left behind (snapshots uninstalled, bindings restored), and per key the
// bindings made: these histories are bounded. attribute() takes the first
// entry that matches a wrong read, and whether an entry matches depends only
// on (fiber, value) for a bind and on the value for a restored binding, so
// only the earliest entry per (fiber, value) / value can ever be taken: later
// repeats are not kept (exact). Past kSettledWindow distinct entries (64
// snapshots per fiber) the oldest are forgotten: a wrong read is still
// reported (the model decides that), only the rule chosen for it may fall
// back to its fiber's own binds or spawn. Fibers and captured contexts are
// kept: format 1 has no event for a fiber's or a context's end.
//
// A read that sees a binding whose `where` already ended (on its own fiber,
// inherited by a child spawned after the restore, or carried by a snapshot
// captured after it) is that restore's [FL-3.1] bug: the first such read is
// the root, reported at the restore's and its own lines; every later read of
// the same leaked binding is marked as its consequence. At a quiescent `end`
// a bind never restored, or an install never uninstalled, is reported
// ([FL-3.1], [FL-3.6]).
#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>
#include <map>
#include <optional>

#include "oracle/check/contract_checker.hpp"

namespace turnstile::oracle::detail {

namespace {

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

std::string show(const std::optional<Value>& v) {
  return v ? show_value(*v) : std::string("unbound");
}

class FiberLocalChecker : public Checker {
 public:
  explicit FiberLocalChecker(Report& report) : r_(report) {}

  std::size_t retained() const override {
    std::size_t n = fibers_.size() + snapshots_.size() + leak_roots_.size() + carry_roots_.size() +
                    carried_values_.size();
    for (const auto& [name, f] : fibers_) {
      n += f.frames.size() + f.uninstalled.size();
      for (const auto& [key, r] : f.restored) n += r.list.size();
    }
    for (const auto& [key, b] : binds_) n += b.list.size();
    return n;
  }

  void on_event(const Event& e) override {
    if (e.fiber.empty()) return;
    Fiber& f = fiber_named(e.fiber);
    if (f.first_event == 0) f.first_event = e.line;
    switch (e.kind) {
      case EventKind::kFiberSpawn: return spawn(e, f);
      case EventKind::kFlBind: {
        Frame frame{false, e.str("key"), e.line, f.env(), "", 0};
        frame.env[frame.name] = e.value("value");
        remember_bind(frame.name, e);
        f.frames.push_back(std::move(frame));
        return;
      }
      case EventKind::kFlRestore: return pop(e, f, false, e.str("key"), "FL-3.1");
      case EventKind::kFlRead: return read(e, f);
      case EventKind::kFlCapture:
        snapshots_[e.str("ctx")] = Snapshot{f.env(), e.fiber, e.line};
        return;
      case EventKind::kFlInstall: return install(e, f);
      case EventKind::kFlUninstall: return pop(e, f, true, e.str("ctx"), "FL-3.6");
      default: return;  // not for this model
    }
  }

  // At a quiescent `end` every `where` has restored and every `run` has
  // uninstalled. (At a timeout, fibers may still be inside them.)
  void at_end(const Event& end) override {
    if (end.str("status") != "quiescent") return;
    for (const auto& [name, f] : fibers_) {
      for (const Frame& fr : f.frames) {
        r_.unsettled.push_back(
            {{fr.install ? "FL-3.6" : "FL-3.1", {fr.line, end.line},
              (fr.install ? "install of context " : "bind of key ") + q(fr.name) + " on fiber " + q(name) +
                  (fr.install ? " was never uninstalled" : " was never restored") +
                  " before a quiescent `end`",
              false},
             name, ""});
      }
    }
  }

 private:
  // The fiber named `name`, made on its first event. Consecutive events are
  // often of one fiber: the last one is looked up first (map nodes are stable).
  Fiber& fiber_named(const std::string& name) {
    if (last_fiber_ != nullptr && last_fiber_->first == name) return last_fiber_->second;
    last_fiber_ = &*fibers_.try_emplace(name).first;
    return last_fiber_->second;
  }

  void install(const Event& e, Fiber& f) {
    const auto it = snapshots_.find(e.str("ctx"));
    if (it == snapshots_.end()) {  // [FL-3.5] only a captured context can be installed
      r_.add("FL-3.5", {e.line}, "fiber " + q(e.fiber) + " installed context " + q(e.str("ctx")) +
                                     ", which was never captured");
    }
    // [FL-3.6] run replaces the fiber's chain for the extent; it does not merge.
    Frame frame{true, e.str("ctx"), e.line, Env{}, "", 0};
    if (it != snapshots_.end()) {
      frame.env = it->second.env;
      frame.captured_by = it->second.fiber;
      frame.captured = it->second.line;
    }
    f.frames.push_back(std::move(frame));
  }

  void spawn(const Event& e, Fiber& parent) {
    const std::string& name = e.str("child");
    const bool structured = e.flag("structured");
    const char* rule = structured ? "FL-3.2" : "FL-3.4";
    const auto it = fibers_.find(name);
    if (it != fibers_.end() && it->second.first_event != 0) {
      // A child's first event comes after the spawn that names it.
      r_.add(rule, {it->second.first_event, e.line},
             "fiber " + q(name) + " was spawned after it had already emitted events");
      return;
    }
    Fiber child;
    child.spawn = e.line;
    child.parent = e.fiber;
    child.structured = structured;
    if (structured) child.base = parent.env();  // [FL-3.2] inherit at the spawn
    else child.carried = parent.env();          // [FL-3.4] a handoff starts empty (what it must not see)
    fibers_[name] = std::move(child);
  }

  void pop(const Event& e, Fiber& f, bool install, const std::string& name, const char* rule) {
    const char* what = install ? "uninstall of context " : "restore of key ";
    std::size_t at = f.frames.size();
    while (at > 0 && !(f.frames[at - 1].install == install && f.frames[at - 1].name == name)) --at;
    if (at == 0) {  // [FL-3.1]/[FL-3.6] restores and uninstalls end an open bind/install
      r_.add(rule, {e.line}, std::string(what) + q(name) + " on fiber " + q(e.fiber) +
                                 " has no matching open " + (install ? "install" : "bind"));
      return;
    }
    if (at != f.frames.size()) {  // not the innermost: they must nest
      r_.add(rule, {f.frames.back().line, e.line},
             std::string(what) + q(name) + " on fiber " + q(e.fiber) +
                 " does not end the innermost open " +
                 (f.frames.back().install ? "install" : "bind") + " (they must nest)");
    }
    for (std::size_t i = at - 1; i < f.frames.size(); ++i) {
      const Frame& fr = f.frames[i];
      if (fr.install) {
        f.uninstalled.emplace_back(fr.env, e.line);
        if (f.uninstalled.size() > kSnapshotWindow) f.uninstalled.pop_front();
        continue;
      }
      const Value& v = fr.env.at(fr.name);
      auto& r = f.restored[fr.name];
      if (!r.values.insert(show_value(v)).second) continue;  // an earlier restore of it is kept
      r.list.emplace_back(v, e.line);
      if (r.list.size() > kSettledWindow) {
        r.values.erase(show_value(r.list.front().first));
        r.list.pop_front();
      }
    }
    f.frames.resize(at - 1);
  }

  void read(const Event& e, const Fiber& f) {
    const std::string& key = e.str("key");
    std::optional<Value> seen;
    if (!e.flag("unbound")) seen = e.value("value");
    std::optional<Value> want;
    if (const auto it = f.env().find(key); it != f.env().end()) want = it->second;
    if (seen == want) return;
    Blame blame = attribute(e, f, key, seen);
    blame.lines.push_back(e.line);
    r_.add(blame.rule, blame.lines,
           "fiber " + q(e.fiber) + " read " + q(key) + " as " + show(seen) + " but its bindings say " +
               show(want) + blame.why,
           blame.cause, "fiber-local");  // repeats (A5): every key of a trace is one implementation
    r_.violations.back().fiber = e.fiber;  // (A3: a read inside a span of a root)
  }

  // [FL-3.4] the handoff whose subtree `fiber` is in (itself, or the first
  // handoff above its structured ancestors), or nullptr.
  const std::pair<const std::string, Fiber>* handoff_of(const std::string& fiber) const {
    std::string at = fiber;
    for (std::size_t guard = 0; guard <= fibers_.size(); ++guard) {
      const auto it = fibers_.find(at);
      if (it == fibers_.end() || it->second.parent.empty()) return nullptr;
      if (!it->second.structured) return &*it;
      at = it->second.parent;
    }
    return nullptr;
  }

  // [FL-3.4] a read of `seen` for `key` that a handoff above `fiber` carried
  // from its spawner: the first such read per (handoff, key) is the root, at
  // the spawn's and its own lines; later ones are its consequences (A4).
  std::optional<Blame> carried(const std::string& fiber, const std::string& key, const Value& seen,
                               const Event& e) {
    const auto* h = handoff_of(fiber);
    if (h == nullptr) return std::nullopt;
    const auto it = h->second.carried.find(key);
    if (it == h->second.carried.end() || !(it->second == seen)) return std::nullopt;
    const std::string why = " (carried into handoff " + q(h->first) + " from its spawner)";
    const auto [root, fresh] = carry_roots_.try_emplace(h->first + '\n' + key,
                                                        Cause{"FL-3.4", {h->second.spawn, e.line}});
    if (fresh) {
      carried_values_.try_emplace(key + '\n' + show_value(seen), root->second);
      return Blame{"FL-3.4", {h->second.spawn}, std::nullopt, why};
    }
    return Blame{"FL-3.4", {h->second.spawn}, root->second, why};
  }

  // [FL-3.1] the restore of `key` to `seen` on `fiber` before line `before`, or
  // on an ancestor before the spawn that leads to `fiber`: its line, or 0.
  std::size_t leaked(const std::string& fiber, const std::string& key, const Value& seen,
                     std::size_t before) const {
    std::string at = fiber;
    for (std::size_t guard = 0; guard <= fibers_.size(); ++guard) {
      const auto it = fibers_.find(at);
      if (it == fibers_.end()) return 0;
      const Fiber& f = it->second;
      if (const auto r = f.restored.find(key); r != f.restored.end()) {
        for (const auto& [v, line] : r->second.list)  // the first restore of each value (exact for `< before`)
          if (v == seen && line < before) return line;
      }
      if (!f.structured || f.parent.empty()) return 0;  // a handoff or root inherits nothing
      before = f.spawn;
      at = f.parent;
    }
    return 0;
  }

  // A read of a leaked binding (restored at `restore`): the first is the root.
  Blame leak(std::size_t restore, const Event& e) {
    const std::string why = " (a binding whose `where` had already ended)";
    const auto root = leak_roots_.find(restore);
    if (root != leak_roots_.end()) return {"FL-3.1", {restore}, root->second, why};
    leak_roots_.emplace(restore, Cause{"FL-3.1", {restore, e.line}});
    return {"FL-3.1", {restore}, std::nullopt, why};
  }

  // [FL-3.1] the restore of `key` to `seen` on fiber `f` itself within (after, before): its line, or 0.
  static std::size_t restored_between(const Fiber& f, const std::string& key, const Value& seen,
                                      std::size_t after, std::size_t before) {
    const auto r = f.restored.find(key);
    if (r == f.restored.end()) return 0;
    for (const auto& [v, line] : r->second.list)
      if (v == seen && after < line && line < before) return line;
    return 0;
  }

  // Which rule a wrong read breaks, the lines of the events behind it, and
  // the root cause when it follows from an earlier violation.
  Blame attribute(const Event& e, const Fiber& f, const std::string& key, const std::optional<Value>& seen) {
    // Innermost frame that decides the key: an install, or a bind of the key.
    const auto found = std::find_if(f.frames.rbegin(), f.frames.rend(),
                                    [&](const Frame& fr) { return fr.install || fr.name == key; });
    const Frame* decider = found == f.frames.rend() ? nullptr : &*found;
    if (seen) {
      // [FL-3.1] a leaked binding already reported, seen again here (whatever frame decides)
      if (const std::size_t r = leaked(e.fiber, key, *seen, e.line); r != 0 && leak_roots_.count(r) != 0)
        return leak(r, e);
      // [FL-3.4] a binding a handoff carried, seen again wherever it travelled
      // from there (a snapshot, a lane turn, another handoff): its consequence
      if (const auto c = carried_values_.find(key + '\n' + show_value(*seen)); c != carried_values_.end())
        return Blame{"FL-3.4", {}, c->second, " (a binding carried into a handoff, seen again)"};
    }
    if (decider != nullptr && decider->install) {
      if (seen) {
        // [FL-3.1] a snapshot captured after a restore that did not end its
        // binding, or a binding restored inside this install that stayed in it
        if (!decider->captured_by.empty()) {
          if (const std::size_t r = leaked(decider->captured_by, key, *seen, decider->captured)) return leak(r, e);
        }
        if (const std::size_t r = restored_between(f, key, *seen, decider->line, e.line)) return leak(r, e);
        // [FL-3.4] a snapshot captured in a handoff that carried its spawner's binding
        if (!decider->captured_by.empty())
          if (auto b = carried(decider->captured_by, key, *seen, e)) return *b;
      }
      return {"FL-3.5", {decider->line}, std::nullopt};  // [FL-3.5]
    }
    if (seen && decider == nullptr) {
      // [FL-3.4] a handoff (or a structured child of one) sees what the handoff carried
      if (auto b = carried(e.fiber, key, *seen, e)) return *b;
    }
    const auto holds = [&](const Env& env) {
      const auto it = env.find(key);
      return seen ? (it != env.end() && it->second == *seen) : it == env.end();
    };
    // [FL-3.1] a binding this fiber restored is still seen: its own `where`
    // leaked it (before the other sources: it is the nearest one)
    if (seen) {
      if (const std::size_t r = restored_between(f, key, *seen, 0, e.line)) return leak(r, e);
    }
    for (const auto& [env, line] : f.uninstalled) {  // [FL-3.6] a snapshot outlived its run
      if (seen && holds(env)) return {"FL-3.6", {line}, std::nullopt};
    }
    if (seen) {  // [FL-3.3] a value some other, non-ancestor fiber bound
      for (const auto& b : binds_[key].list) {
        if (b.fiber != e.fiber && b.value == *seen && !is_ancestor(b.fiber, e.fiber)) {
          return {"FL-3.3", {b.line}, std::nullopt};
        }
      }
      // [FL-3.1] a restored binding still seen, on this fiber or inherited
      // from an ancestor's restore before the spawn
      if (const std::size_t r = leaked(e.fiber, key, *seen, e.line)) return leak(r, e);
    }
    if (decider != nullptr) return {"FL-3.1", {decider->line}, std::nullopt};  // [FL-3.1] innermost bind
    if (f.spawn == 0) return {"FL-3.1", {}, std::nullopt};                      // a root fiber starts unbound
    return {f.structured ? "FL-3.2" : "FL-3.4", {f.spawn}, std::nullopt};      // [FL-3.2] / [FL-3.4]
  }

  bool is_ancestor(const std::string& maybe, const std::string& fiber) const {
    std::string at = fiber;
    for (std::size_t guard = 0; guard <= fibers_.size(); ++guard) {
      const auto it = fibers_.find(at);
      if (it == fibers_.end() || it->second.parent.empty()) return false;
      at = it->second.parent;
      if (at == maybe) return true;
    }
    return false;
  }

  // The first bind of each (fiber, value) of a key, any fiber, oldest first
  // (bounded: see the top of the file).
  void remember_bind(const std::string& key, const Event& e) {
    auto& b = binds_[key];
    const Value& value = e.value("value");
    if (!b.seen.insert(e.fiber + '\n' + show_value(value)).second) return;
    b.list.push_back({e.fiber, value, e.line});
    if (b.list.size() <= kSettledWindow) return;
    b.seen.erase(b.list.front().fiber + '\n' + show_value(b.list.front().value));
    b.list.pop_front();
  }

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

}  // namespace

std::unique_ptr<Checker> make_fiber_local_checker(Report& report) {
  return std::make_unique<FiberLocalChecker>(report);
}

}  // namespace turnstile::oracle::detail
