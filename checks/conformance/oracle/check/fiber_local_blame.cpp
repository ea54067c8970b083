// oracle/check/fiber_local_blame.cpp: which rule a wrong read breaks and the root it
// follows from (spec/trace-format.md section 5, "How the table reads", and
// section 4.1 A6): leaked bindings ([FL-3.1]), carried ones ([FL-3.4]), then the
// frame or spawn that decides the key. Part of FiberLocalChecker (fiber_local.hpp).
#include <algorithm>

#include "oracle/check/fiber_local.hpp"

namespace turnstile::oracle::detail {

// [FL-3.4] the handoff whose subtree `fiber` is in (itself, or the first
// handoff above its structured ancestors), or nullptr.
const std::pair<const std::string, Fiber>* FiberLocalChecker::handoff_of(const std::string& fiber) const {
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
std::optional<Blame> FiberLocalChecker::carried(const std::string& fiber, const std::string& key, const Value& seen,
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
std::size_t FiberLocalChecker::leaked(const std::string& fiber, const std::string& key, const Value& seen,
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
Blame FiberLocalChecker::leak(std::size_t restore, const Event& e) {
  const std::string why = " (a binding whose `where` had already ended)";
  const auto root = leak_roots_.find(restore);
  if (root != leak_roots_.end()) return {"FL-3.1", {restore}, root->second, why};
  leak_roots_.emplace(restore, Cause{"FL-3.1", {restore, e.line}});
  return {"FL-3.1", {restore}, std::nullopt, why};
}

// [FL-3.1] the restore of `key` to `seen` on fiber `f` itself within (after, before): its line, or 0.
std::size_t FiberLocalChecker::restored_between(const Fiber& f, const std::string& key, const Value& seen,
             std::size_t after, std::size_t before) {
  const auto r = f.restored.find(key);
  if (r == f.restored.end()) return 0;
  for (const auto& [v, line] : r->second.list)
    if (v == seen && after < line && line < before) return line;
  return 0;
}

// Which rule a wrong read breaks, the lines of the events behind it, and
// the root cause when it follows from an earlier violation.
Blame FiberLocalChecker::attribute(const Event& e, const Fiber& f, const std::string& key, const std::optional<Value>& seen) {
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

bool FiberLocalChecker::is_ancestor(const std::string& maybe, const std::string& fiber) const {
  std::string at = fiber;
  for (std::size_t guard = 0; guard <= fibers_.size(); ++guard) {
    const auto it = fibers_.find(at);
    if (it == fibers_.end() || it->second.parent.empty()) return false;
    at = it->second.parent;
    if (at == maybe) return true;
  }
  return false;
}

}  // namespace turnstile::oracle::detail
