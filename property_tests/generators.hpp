// property_tests/generators.hpp: the generator helpers every property suite shares
// (schedules, bounded vectors, uniform numbers, weighted kinds, a value drawn with
// its schedule) and the two drivers that draw a run's inputs (run_scheduled,
// run_callers). RapidCheck and the standard library only: no product header, so a
// generator defined out of line (generators.cpp, a suite's *_workload.cpp) is
// compiled once and linked into the clean suite and into every mutant binary,
// whatever headers the mutant patches. generated_schedules.hpp includes it.
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <utility>
#include <vector>

namespace turnstile::prop {

// The generator of schedules: a list of choices whose length grows with
// RapidCheck's size (about 4 x size, so up to ~400 choices at the
// default max_size 100). Values are reduced modulo ready(), so
// their range only has to exceed the number of items ever ready at once.
// Defined out of line (generators.cpp, compiled once for every suite): its
// RapidCheck instantiations are a good part of a property source's compile.
rc::Gen<std::vector<std::size_t>> gen_schedule();

// Draws a schedule and returns scenario(choices): a run (a struct with a DriveResult
// `drive` and a container of the `errors` its fibers recorded) that is asserted to
// have reached quiescence without an error.
template <class Scenario>
auto run_scheduled(Scenario scenario) {
  const auto choices = *gen_schedule().as("schedule");
  auto run = scenario(choices);
  RC_ASSERT(run.drive.idle);
  RC_ASSERT(run.errors.empty());
  return run;
}

// Draws a workload from `workload` and a schedule, and returns scenario(workload,
// choices): a run of caller fibers (an outcome with a DriveResult `drive` and records
// `rec` with `finished`, `callers`, ok(category) and dump()) that is asserted to
// have reached quiescence, every caller finished, no "general" error.
template <class Outcome, class Config>
Outcome run_callers(rc::Gen<Config> workload,
                    Outcome (*scenario)(const Config&, const std::vector<std::size_t>&)) {
  const Config cfg = *workload.as("workload");
  const auto choices = *gen_schedule().as("schedule");
  Outcome out = scenario(cfg, choices);
  RC_LOG() << out.rec.dump();
  RC_ASSERT(out.drive.idle);
  RC_ASSERT(out.rec.finished == out.rec.callers);  // no caller hangs
  RC_ASSERT(out.rec.ok("general"));
  return out;
}

// A vector of min..max elements (inclusive) from `element`. RapidCheck's
// container length follows its size parameter only loosely (gen::resize(n, ...)
// can still yield n + 1 elements), hence the filter. Shrinks like any container
// (dropping elements anywhere, then shrinking each), within the bounds.
template <class T>
rc::Gen<std::vector<T>> vector_of(std::size_t min, std::size_t max, rc::Gen<T> element) {
  return rc::gen::suchThat(
      rc::gen::resize(static_cast<int>(max),
                      rc::gen::container<std::vector<T>>(std::move(element))),
      [min, max](const std::vector<T>& v) { return v.size() >= min && v.size() <= max; });
}

// A number in min..max (inclusive), uniformly at every size: gen::inRange
// narrows its range by RapidCheck's size (size / 100), so it is pinned to the
// nominal size 100. Shrinks towards min (gen::elementOf would not shrink).
inline rc::Gen<std::size_t> uniform_in(std::size_t min, std::size_t max) {
  return rc::gen::resize(100, rc::gen::inRange(min, max + 1));
}

// A generated value and its schedule, drawn as one value: RapidCheck regenerates
// the later picks of a property when it shrinks an earlier one, so two separate
// picks would undo the schedule's shrinking whenever the value shrinks.
template <class T>
struct Scheduled {
  T value;
  std::vector<std::size_t> schedule;
};

template <class T>
void showValue(const Scheduled<T>& c, std::ostream& os) {
  showValue(c.value, os);
  os << "\n  schedule [";
  for (std::size_t i = 0; i < c.schedule.size(); ++i) os << (i ? ", " : "") << c.schedule[i];
  os << ']';
}

template <class T>
rc::Gen<Scheduled<T>> with_schedule(rc::Gen<T> value) {
  return rc::gen::map(rc::gen::pair(std::move(value), gen_schedule()),
                      [](std::pair<T, std::vector<std::size_t>> p) {
                        return Scheduled<T>{std::move(p.first), std::move(p.second)};
                      });
}

// The mix of a program generator (a struct `Mix` with an `int weight[]` indexed by
// its Kind) with the given weights, every other kind's 0.
template <class Mix, class Kind>
Mix weighted(std::initializer_list<std::pair<Kind, int>> weights) {
  Mix m;
  for (const auto& [k, w] : weights) m.weight[static_cast<int>(k)] = w;
  return m;
}

// One of `kinds` kinds (an enum from 0), drawn by the mix's weights among those
// allowed(kind) keeps, then the generator make(kind) gives; rc::gen::just of a
// default value when no kind is allowed. The drawn index shrinks towards the first
// kind allowed.
template <class Kind, class Mix, class Allowed, class Make>
auto gen_by_weight(const Mix& mix, int kinds, Allowed allowed, Make make) -> decltype(make(Kind{})) {
  using Value = typename decltype(make(Kind{}))::ValueType;
  std::vector<std::pair<int, Kind>> table;  // cumulative weight, kind
  int total = 0;
  for (int k = 0; k < kinds; ++k) {
    if (mix.weight[k] <= 0 || !allowed(static_cast<Kind>(k))) continue;
    total += mix.weight[k];
    table.emplace_back(total, static_cast<Kind>(k));
  }
  if (total == 0) return rc::gen::just(Value{});
  return rc::gen::mapcat(uniform_in(0, static_cast<std::size_t>(total - 1)), [=](std::size_t x) {
    Kind k = table.back().second;
    for (const auto& [upto, kind] : table)
      if (static_cast<int>(x) < upto) {
        k = kind;
        break;
      }
    return make(k);
  });
}

// Prints the ops of every caller, "[op op], [op]": showValue(op, os) per op.
template <class Op>
void show_callers(const std::vector<std::vector<Op>>& callers, std::ostream& os) {
  for (std::size_t i = 0; i < callers.size(); ++i) {
    os << (i ? ", " : "") << "[";
    for (std::size_t j = 0; j < callers[i].size(); ++j) {
      os << (j ? " " : "");
      showValue(callers[i][j], os);
    }
    os << "]";
  }
}

// A value drawn with the given weights ({{a, 2}, {b, 1}}: a two times in three):
// slots of a uniform number, so it shrinks towards the first value.
template <class T>
rc::Gen<T> by_weight(std::vector<std::pair<T, std::size_t>> weights) {
  std::size_t total = 0;
  for (const auto& [v, w] : weights) total += w;
  return rc::gen::map(uniform_in(0, total - 1), [weights](std::size_t x) {
    for (const auto& [v, w] : weights) {
      if (x < w) return v;
      x -= w;
    }
    return weights.back().first;
  });
}

}  // namespace turnstile::prop
