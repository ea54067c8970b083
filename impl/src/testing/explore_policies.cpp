// impl/src/testing/explore_policies.cpp: how a run picks: a prefix then FIFO
// (exhaustive search, replay, shrinking), random, PCT.
#include <algorithm>

#include "explore_run.hpp"

namespace turnstile::testing::detail {

std::uint64_t next_random(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t index) noexcept {
  std::uint64_t s = seed ^ (index * 0xD1B54A32D192ED03ULL);
  return next_random(s);
}

std::uint32_t PrefixPolicy::pick(std::size_t, std::size_t point, std::uint32_t width,
                                 const std::vector<std::uint64_t>&) {
  if (width == 1) return 0;
  if (point >= prefix_.size()) return 0;  // [EXP-3.1] past the prefix: the oldest (FIFO)
  const std::uint32_t c = prefix_[point];
  if (c < width) return c;
  if (strict_) return c;  // the chooser reports it as nondeterminism
  return width - 1;
}

std::uint32_t RandomPolicy::pick(std::size_t, std::size_t, std::uint32_t width,
                                 const std::vector<std::uint64_t>&) {
  if (width == 1) return 0;
  return static_cast<std::uint32_t>(next_random(state_) % width);  // [EXP-3.3]
}

PctPolicy::PctPolicy(std::uint64_t seed, unsigned depth, std::size_t steps) : state_(seed) {
  // [EXP-3.2] d - 1 change points, uniformly among the steps a run is expected to take.
  for (unsigned i = 1; i < depth; ++i)
    change_steps_.push_back(steps == 0 ? 0 : static_cast<std::size_t>(next_random(state_) % steps));
}

std::uint64_t PctPolicy::priority_of(std::uint64_t chain) {
  for (const auto& [c, p] : priorities_)
    if (c == chain) return p;
  // A fresh chain: a random priority above every lowered one (those are 1..d-1).
  const std::uint64_t p = (next_random(state_) >> 8) + change_steps_.size() + 1;
  priorities_.emplace_back(chain, p);
  return p;
}

std::uint32_t PctPolicy::pick(std::size_t step, std::size_t, std::uint32_t width,
                              const std::vector<std::uint64_t>& chains) {
  const auto best = [&] {
    std::uint32_t b = 0;
    std::uint64_t bp = 0;
    for (std::uint32_t i = 0; i < width; ++i) {
      const std::uint64_t p = priority_of(chains[i]);
      if (p > bp) {
        bp = p;
        b = i;
      }
    }
    return b;
  };
  std::uint32_t i = best();
  for (std::size_t k = 0; k < change_steps_.size(); ++k) {
    if (change_steps_[k] != step) continue;
    // [EXP-3.2] the chain about to run drops to priority k + 1, below all others.
    for (auto& [c, p] : priorities_)
      if (c == chains[i]) p = k + 1;
    i = best();
  }
  return i;
}

}  // namespace turnstile::testing::detail
