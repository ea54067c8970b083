// oracle/check/fiber_local.cpp: the FiberLocal rules of spec/trace-format.md
// section 5 against a model of every fiber's bindings.
//
// Model: per fiber a base environment (empty for a root fiber or a handoff, a
// copy of the parent's current environment at the `fiber.spawn` for a
// structured child) and a stack of frames: `fl.bind` pushes the current
// environment plus one binding, `fl.install` pushes the captured snapshot in
// place of the fiber's own chain, `fl.restore`/`fl.uninstall` pop. A read must
// see the top environment. When it does not, the rule it breaks is chosen from
// where the expected (or the observed) value comes from: attribute(), in
// fiber_local_blame.cpp (the class: fiber_local.hpp).
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
#include "oracle/check/fiber_local.hpp"

#include <algorithm>

namespace turnstile::oracle::detail {

std::size_t FiberLocalChecker::retained() const {
  std::size_t n = fibers_.size() + snapshots_.size() + leak_roots_.size() + carry_roots_.size() +
                  carried_values_.size();
  for (const auto& [name, f] : fibers_) {
    n += f.frames.size() + f.uninstalled.size();
    for (const auto& [key, r] : f.restored) n += r.list.size();
  }
  for (const auto& [key, b] : binds_) n += b.list.size();
  return n;
}

void FiberLocalChecker::on_event(const Event& e) {
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
void FiberLocalChecker::at_end(const Event& end) {
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

// The fiber named `name`, made on its first event. Consecutive events are
// often of one fiber: the last one is looked up first (map nodes are stable).
Fiber& FiberLocalChecker::fiber_named(const std::string& name) {
  if (last_fiber_ != nullptr && last_fiber_->first == name) return last_fiber_->second;
  last_fiber_ = &*fibers_.try_emplace(name).first;
  return last_fiber_->second;
}

void FiberLocalChecker::install(const Event& e, Fiber& f) {
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

void FiberLocalChecker::spawn(const Event& e, Fiber& parent) {
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

void FiberLocalChecker::pop(const Event& e, Fiber& f, bool install, const std::string& name, const char* rule) {
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

void FiberLocalChecker::read(const Event& e, const Fiber& f) {
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

// The first bind of each (fiber, value) of a key, any fiber, oldest first
// (bounded: see the top of the file).
void FiberLocalChecker::remember_bind(const std::string& key, const Event& e) {
  auto& b = binds_[key];
  const Value& value = e.value("value");
  if (!b.seen.insert(e.fiber + '\n' + show_value(value)).second) return;
  b.list.push_back({e.fiber, value, e.line});
  if (b.list.size() <= kSettledWindow) return;
  b.seen.erase(b.list.front().fiber + '\n' + show_value(b.list.front().value));
  b.list.pop_front();
}

std::unique_ptr<Checker> make_fiber_local_checker(Report& report) {
  return std::make_unique<FiberLocalChecker>(report);
}

}  // namespace turnstile::oracle::detail
