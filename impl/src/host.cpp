// host.cpp: Host, the owner of activations by id.
#include "turnstile/host.hpp"

namespace turnstile {

ActivationBase* Host::find(const std::string& id) const {
  detail::LockGuard lock(mu_);
  auto it = activations_.find(id);
  return it == activations_.end() ? nullptr : it->second.get();
}

std::vector<ActivationStats> Host::activations() const {
  detail::LockGuard lock(mu_);
  std::vector<ActivationStats> out;
  for (auto& [id, a] : activations_) out.push_back(a->stats());
  return out;
}

void Host::check_slow_turns() {
  std::vector<ActivationBase*> all;
  {
    detail::LockGuard lock(mu_);
    for (auto& [id, a] : activations_) all.push_back(a.get());
  }
  // Outside the lock: a slow-turn handler may call back into the host
  // (activations(), find()). Activations are never removed from a host.
  for (ActivationBase* a : all) a->check_slow_turns();
}

}  // namespace turnstile
