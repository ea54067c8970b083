// fl_support.hpp: shared helpers of the FiberLocal / FiberContext unit tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "turnstile/turnstile.hpp"
#include "turnstile_test/outcome.hpp"
#include "turnstile_test/manual_runs.hpp"

// GCC 12 note. GCC 12.2 destroys twice a prvalue argument that is an
// aggregate or a lambda closure with a non-trivially-destructible member (a
// FiberContext, a std::string captured by value) when the call is the operand
// of co_await, e.g. `co_await ch.send(WorkItem{id, FiberContext::capture()})`
// or `co_await key.where(v, [ctx]() -> Task<> {...})`. For a FiberContext that
// is a double release of its frame: a use-after-free. Clang is unaffected.
// These tests therefore build such values as named locals first, and capture
// only references or trivially-destructible values in Task-body lambdas.

namespace fl_test {

// A value type that counts itself, so tests can see when a bound value is
// freed. `values()` counts live instances that own a value (moving transfers
// ownership; moved-from shells do not count); `objects()` counts every live
// instance, shells included. Both count from the baseline the current test
// started at (so a leak in one test cannot fail the next one in the same
// process), and both must be back to zero once a test has let go of
// everything: no leak.
class Tracked {
 public:
  explicit Tracked(int id) : id_(id), owns_(true) {
    values_.fetch_add(1, std::memory_order_relaxed);
    objects_.fetch_add(1, std::memory_order_relaxed);
  }
  Tracked(const Tracked& o) : id_(o.id_), owns_(o.owns_) {
    if (owns_) values_.fetch_add(1, std::memory_order_relaxed);
    objects_.fetch_add(1, std::memory_order_relaxed);
  }
  Tracked(Tracked&& o) noexcept : id_(o.id_), owns_(std::exchange(o.owns_, false)) {
    objects_.fetch_add(1, std::memory_order_relaxed);
  }
  Tracked& operator=(const Tracked&) = delete;
  Tracked& operator=(Tracked&&) = delete;
  ~Tracked() {
    if (owns_) values_.fetch_sub(1, std::memory_order_relaxed);
    objects_.fetch_sub(1, std::memory_order_relaxed);
  }

  int id() const noexcept { return id_; }

  static int values() noexcept {
    return values_.load(std::memory_order_relaxed) - base_values_.load(std::memory_order_relaxed);
  }
  static int objects() noexcept {
    return objects_.load(std::memory_order_relaxed) - base_objects_.load(std::memory_order_relaxed);
  }
  // Counts from here on are relative to what is alive now. Called with no
  // test fiber or thread running.
  static void reset_baseline() noexcept {
    base_values_.store(values_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    base_objects_.store(objects_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }

 private:
  int id_;
  bool owns_;
  static inline std::atomic<int> values_{0};
  static inline std::atomic<int> objects_{0};
  static inline std::atomic<int> base_values_{0};
  static inline std::atomic<int> base_objects_{0};
};

// Counts Tracked instances from the start of the test and checks that none
// made by the test is alive when it ends.
class TrackedLeakCheck : public ::testing::Test {
 protected:
  void SetUp() override { Tracked::reset_baseline(); }
  void TearDown() override {
    EXPECT_EQ(Tracked::values(), 0) << "a bound value outlived every holder (leak)";
    EXPECT_EQ(Tracked::objects(), 0) << "a Tracked instance was never destroyed (leak)";
  }
};

using turnstile_test::Boom;

// Keys several files use. A key is an identity with no state of its own (the
// bindings live in each fiber's context), so tests in different files may share it.
inline const turnstile::FiberLocal<int> number("number");
inline const turnstile::FiberLocal<std::string> who("who");
inline const turnstile::FiberLocal<Tracked> tracked("tracked");

using turnstile_test::run_schedule;

}  // namespace fl_test
