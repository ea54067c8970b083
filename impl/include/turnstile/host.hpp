// turnstile/host.hpp: Host, the owner of activations by id.
//
// A Host creates activations on demand (activate), finds them by id, and lists
// them with their counters (activations()): id, queued, running, turns
// completed, slow turns ([TURN-2.3], [TURN-4.2]).
//
// Thread safety: every member may be called from any thread.
// Precondition: the Host outlives every call into its activations; it is
// destroyed only when they are idle.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "turnstile/activation.hpp"

namespace turnstile {

class Host {
 public:
  // Its activations run on `scheduler`; the default is the process-wide pool
  // described at default_scheduler() (scheduler.hpp).
  explicit Host(Scheduler& scheduler = default_scheduler()) : scheduler_(scheduler) {}

  // The activation with this id, created from `initial` and `options` if it
  // does not exist yet. Throws std::logic_error if it exists with another
  // state type.
  template <class State>
  Activation<State>& activate(const std::string& id, State initial = State{},
                              ActivationOptions options = {}) {
    detail::LockGuard lock(mu_);
    auto it = activations_.find(id);
    if (it == activations_.end()) {
      auto a = std::make_unique<Activation<State>>(id, std::move(initial), std::move(options),
                                                   scheduler_);
      it = activations_.emplace(id, std::move(a)).first;
    }
    auto* typed = dynamic_cast<Activation<State>*>(it->second.get());
    if (typed == nullptr)
      throw std::logic_error("activation '" + id + "' exists with another state type");
    return *typed;
  }

  ActivationBase* find(const std::string& id) const;
  std::vector<ActivationStats> activations() const;
  void check_slow_turns();

 private:
  Scheduler& scheduler_;
  mutable detail::Mutex mu_;
  std::map<std::string, std::unique_ptr<ActivationBase>> activations_ TURNSTILE_GUARDED_BY(mu_);
};

}  // namespace turnstile
