// turnstile_test/threads.hpp: plain threads racing with each other or with the test.
//
// - run_threads(n, fn): starts n plain threads, lets them go at once (a Gate opened
//   once all exist) to call fn(0) .. fn(n - 1), and joins them all; the joins publish
//   their effects to the caller.
// - Repeat: a plain thread that calls a function over and over until the guard is
//   destroyed, to race it against whatever the test does meanwhile (e.g.
//   check_slow_turns() against turns settling on a pool):
//
//     {
//       turnstile_test::Repeat checker([&] { act.check_slow_turns(); });
//       ...  // the work it races with
//     }      // stops and joins the thread; every call has returned
//
//   The stop flag is a std::atomic<bool> (seq_cst store in the destructor, seq_cst
//   load before each call); the join is what publishes the calls' effects.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "turnstile_test/latch.hpp"

namespace turnstile_test {

template <class F>
void run_threads(int n, F fn) {
  Gate start;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&start, &fn, i] {
      start.wait();
      fn(i);
    });
  start.open();
  for (auto& t : threads) t.join();
}

class Repeat {
 public:
  explicit Repeat(std::function<void()> fn)
      : thread_([this, fn = std::move(fn)] {
          while (!stop_.load()) fn();
        }) {}
  ~Repeat() {
    stop_.store(true);
    thread_.join();
  }
  Repeat(const Repeat&) = delete;
  Repeat& operator=(const Repeat&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: started once stop_ is initialised
};

}  // namespace turnstile_test
