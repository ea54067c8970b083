// impl/bench/lane_peers.hpp: the peers and drivers of lane_bench.cpp.
//
//   MutexLane   the textbook serial executor, the baseline StateLane is held
//               against: a mutex-protected deque<std::function<void()>>, drained
//               by one runner posted to a turnstile Scheduler when the lane goes
//               from idle to busy. No per-step budget, no marker, no context.
//   IoThreads   a standalone-Asio io_context run by N threads (kept alive by a
//               work guard until join()), the home of the asio::strand peers.
//   strand_round_trips  the strand round trip of lane_bench and scale_bench:
//               post to an asio::strand; the handler does the work and posts the
//               continuation to the io_context (outside the strand), which issues
//               the next one, until the benchmark's loop ends.
//   Producers   P-1 persistent helper threads that produce alongside the
//               benchmark thread, released once per round (thread start-up stays
//               out of the timings).
#pragma once

#include <benchmark/benchmark.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/strand.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "turnstile/scheduler.hpp"

namespace turnstile_bench {

class MutexLane {
 public:
  explicit MutexLane(turnstile::Scheduler& s) : scheduler_(s) {}
  MutexLane(const MutexLane&) = delete;
  MutexLane& operator=(const MutexLane&) = delete;

  void post(std::function<void()> f) {
    bool start = false;
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(f));
      start = !running_;
      running_ = true;
    }
    if (start) scheduler_.post(runner_);
  }

 private:
  void drain() noexcept {
    for (;;) {
      std::function<void()> f;
      {
        std::lock_guard lock(mu_);
        if (queue_.empty()) {
          running_ = false;
          return;
        }
        f = std::move(queue_.front());
        queue_.pop_front();
      }
      f();
    }
  }
  class Runner final : public turnstile::Runnable {
   public:
    explicit Runner(MutexLane* lane) : lane_(lane) {}
    void run() noexcept override { lane_->drain(); }

   private:
    MutexLane* lane_;
  };

  turnstile::Scheduler& scheduler_;
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool running_ = false;                     // guarded by mu_
  Runner runner_{this};
};

class IoThreads {
 public:
  explicit IoThreads(int n) : guard_(asio::make_work_guard(ioc_)) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }
  ~IoThreads() { join(); }
  IoThreads(const IoThreads&) = delete;
  IoThreads& operator=(const IoThreads&) = delete;
  asio::io_context& ioc() noexcept { return ioc_; }
  // Lets run() return once the queued work is done, and joins the threads.
  void join() {
    guard_.reset();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

// One benchmark run of strand round trips on an io_context run by `threads`
// threads; returns false if a turn was lost (work or continuation count != the
// number of iterations).
inline bool strand_round_trips(benchmark::State& state, int threads) {
  using AsioStrand = asio::strand<asio::io_context::executor_type>;
  struct StrandClient {
    benchmark::State& state;
    asio::io_context& ioc;
    AsioStrand& strand;
    Flag& finished;
    long work = 0;     // strand-owned
    long resumed = 0;  // the client's: its steps form one chain
    void issue() {
      if (!state.KeepRunning()) {
        finished.set();
        return;
      }
      asio::post(strand, [this] {
        ++work;
        asio::post(ioc, [this] {
          ++resumed;
          issue();
        });
      });
    }
  };
  Flag finished;
  IoThreads io(threads);
  AsioStrand strand = asio::make_strand(io.ioc());
  StrandClient client{state, io.ioc(), strand, finished};
  asio::post(io.ioc(), [&client] { client.issue(); });
  finished.wait_and_rearm();
  io.join();
  return client.work == static_cast<long>(state.iterations()) && client.resumed == client.work;
}

// Producers' waits park on a condition variable at once, as Flag's do
// (bench_support.hpp says why). The setter notifies under the mutex.
class Producers {
 public:
  // body(p) is producer p's share of one round; p == 0 runs on the caller.
  Producers(int n, std::function<void(int)> body) : body_(std::move(body)) {
    for (int p = 1; p < n; ++p) threads_.emplace_back([this, p] { helper(p); });
  }
  ~Producers() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      ++generation_;
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Producers(const Producers&) = delete;
  Producers& operator=(const Producers&) = delete;

  // Runs one round: body(0) here, body(p) on helper p; returns when all are done.
  void round() {
    {
      std::lock_guard lock(mu_);
      busy_ = static_cast<int>(threads_.size());
      ++generation_;
    }
    start_.notify_all();
    body_(0);
    std::unique_lock lock(mu_);
    done_.wait(lock, [this] { return busy_ == 0; });
  }

 private:
  void helper(int p) {
    unsigned seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mu_);
        start_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
      }
      body_(p);
      std::lock_guard lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::function<void(int)> body_;
  std::mutex mu_;
  std::condition_variable start_;  // a round began (or the destructor stops the helpers)
  std::condition_variable done_;   // the helpers finished their share
  unsigned generation_ = 0;        // guarded by mu_, as busy_ and stop_
  int busy_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace turnstile_bench
