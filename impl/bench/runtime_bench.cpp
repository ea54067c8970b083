// impl/bench/runtime_bench.cpp: costs of the runtime primitives and their peer
// baselines, in one binary so ci/bench can divide one by the other.
//
//   BM_RT_TaskAwait               co_await of a trivially completing Task<int>,
//                                 inside a fiber (frame allocation + trampoline)
//   BM_RT_EventWake               Event::set -> waiter resumed, ManualScheduler
//                                 driven by the benchmark thread (one item per set)
//   BM_RT_ChannelPingPong/carriers:N   round trip between two fibers over two
//                                 rendezvous Channel<int> on ThreadPool(N)
//   BM_RT_PoolPost/carriers:N     kBatch intrusive Runnables posted by this thread,
//                                 waited for; BM_RT_PoolPostFn: the same through
//                                 post_fn (one allocation per item)
//   BM_RT_SleepWake               a fiber on ThreadPool(1) sleeps 1 us in a loop:
//                                 each sleep arms the queue's earliest timer, so the
//                                 timer thread is woken, takes it due and posts the
//                                 fiber back to the carrier (three threads: the
//                                 carrier, the timer thread, and this one asleep in
//                                 sync_wait); per sleep: time, context switches and
//                                 CPU of the whole process
//   BM_RT_SyncWaitHop             a plain thread's sync_wait(task): its fiber hops onto
//                                 ThreadPool(1) and back (resume_on) once per
//                                 iteration, so the carrier posts the fiber's return
//                                 to the sync_wait loop, whose thread sleeps in its
//                                 wait: two cross-thread wake-ups per hop; time,
//                                 context switches and CPU of the whole process
//   BM_RT_FanOut/chunk_us:C       on ThreadPool(2): one item posts kFanOut chunks of
//                                 C us of CPU each from its run (the hand-off slot
//                                 and the local queue: [LOCAL-I2]'s price, work meant
//                                 to spread waits for the rescuer), waited for by
//                                 this thread; BM_RT_FanOut_NoHandOff: the same pool
//                                 with hand_off false (every post to the shared queue)
// Baselines:
//   BM_Base_RefTaskAwait          a textbook lazy coroutine task (symmetric transfer
//                                 by returning the handle), same loop
//   BM_Base_BoostFiberCvWake      Boost.Fiber: set flag + notify, yield -> waiter
//                                 resumed (one thread, round-robin)
//   BM_Base_BoostChannelPingPong  Boost.Fiber unbuffered_channel ping-pong (one thread)
//   BM_Base_BoostChannelPingPong2 the same on two threads (shared_work scheduler)
//   BM_Base_AsioPost/threads:N    boost::asio::thread_pool(N), post of a lambda
//   BM_Base_AsioTimerWake         boost::asio::steady_timer on an io_context run by
//                                 one thread: each handler re-arms the timer 1 us ahead
//                                 (the reactor's thread waits for the timer itself:
//                                 no second thread per sleep); same counters
//   BM_Base_AsioFutureHop         a plain thread posts to boost::asio::thread_pool(1)
//                                 with use_future and waits on the future: the same
//                                 two wake-ups per hop; same counters
//   BM_Base_AsioFanOut/chunk_us:C boost::asio::thread_pool(2), the fan-out posted
//                                 from inside one handler
// Cross-thread benchmarks use real (wall) time.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/fiber/all.hpp>
#include <coroutine>
#include <exception>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/sync_wait.hpp"
#include "turnstile/timer.hpp"

namespace {

using namespace turnstile;
using turnstile_bench::report_allocations;
using turnstile_bench::thread_allocations;

constexpr int kBatch = 1000;  // items per iteration of the post benchmarks

// ------------------------------------------------------------ Task await

Task<int> trivial(int x) { co_return x; }

Task<> task_await_loop(benchmark::State& state) {
  int i = 0;
  long sum = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) sum += co_await trivial(++i);
  report_allocations(state, a0);
  turnstile_bench::sink(sum);
}
void BM_RT_TaskAwait(benchmark::State& state) { sync_wait(task_await_loop(state)); }

// A textbook lazy task: the peer of Task<int> without the trampoline.
template <class T>
class RefTask {
 public:
  struct promise_type {
    T value{};
    std::coroutine_handle<> continuation = std::noop_coroutine();
    RefTask get_return_object() { return RefTask(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    auto final_suspend() noexcept {
      struct Final {
        bool await_ready() noexcept { return false; }
        std::coroutine_handle<> await_suspend(Handle h) noexcept { return h.promise().continuation; }
        void await_resume() noexcept {}
      };
      return Final{};
    }
    void return_value(T v) { value = v; }
    void unhandled_exception() { std::terminate(); }
  };
  using Handle = std::coroutine_handle<promise_type>;
  explicit RefTask(Handle h) : h_(h) {}
  RefTask(RefTask&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  ~RefTask() {
    if (h_) h_.destroy();
  }
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> c) noexcept {
    h_.promise().continuation = c;
    return h_;
  }
  T await_resume() { return h_.promise().value; }
  void start() { h_.resume(); }
  bool done() const { return h_.done(); }

 private:
  Handle h_;
};

RefTask<int> ref_trivial(int x) { co_return x; }
RefTask<long> ref_await_loop(benchmark::State& state) {
  int i = 0;
  long sum = 0;
  const auto a0 = thread_allocations();
  for (auto _ : state) sum += co_await ref_trivial(++i);
  report_allocations(state, a0);
  co_return sum;
}
void BM_Base_RefTaskAwait(benchmark::State& state) {
  RefTask<long> t = ref_await_loop(state);
  t.start();  // runs to completion: nothing in it suspends for real
  if (!t.done()) state.SkipWithError("reference task did not complete");
}

// ------------------------------------------------------------ Event wake

Task<> event_waiter(Event& ev, const bool& stop, long& resumed) {
  for (;;) {
    co_await ev.wait();
    ev.reset();  // nobody waits now: we are the only waiter
    if (stop) co_return;
    ++resumed;
  }
}
void BM_RT_EventWake(benchmark::State& state) {
  ManualScheduler manual;
  Event ev;
  bool stop = false;
  long resumed = 0;
  detach(manual, event_waiter(ev, stop, resumed));
  manual.run_until_idle();  // the waiter is parked on ev
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    ev.set();           // posts the waiter's resumption, never runs it inline
    manual.run_next();  // the waiter resumes, resets, parks again
  }
  report_allocations(state, a0);
  stop = true;
  ev.set();
  manual.run_until_idle();
  if (resumed != static_cast<long>(state.iterations())) state.SkipWithError("lost wake-up");
}

void BM_Base_BoostFiberCvWake(benchmark::State& state) {
  boost::fibers::mutex mu;
  boost::fibers::condition_variable cv;
  bool flag = false, stop = false;
  long resumed = 0;
  boost::fibers::fiber waiter([&] {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return flag; });
      flag = false;
      if (stop) return;
      ++resumed;
    }
  });
  boost::this_fiber::yield();  // the waiter parks on cv
  const auto a0 = thread_allocations();
  for (auto _ : state) {
    {
      std::lock_guard lock(mu);
      flag = true;
    }
    cv.notify_one();
    boost::this_fiber::yield();  // the waiter runs, parks again, we come back
  }
  report_allocations(state, a0);
  {
    std::lock_guard lock(mu);
    flag = stop = true;
  }
  cv.notify_one();
  waiter.join();
  if (resumed != static_cast<long>(state.iterations())) state.SkipWithError("lost wake-up");
}

// ------------------------------------------------------------ Channel ping-pong

Task<> pong(Channel<int>& in, Channel<int>& out) {
  while (auto v = co_await in.receive()) co_await out.send(*v + 1);
}
Task<> ping_pong(benchmark::State& state, Channel<int>& to, Channel<int>& from) {
  Scope scope;
  scope.spawn(pong(to, from));
  int v = 0;
  for (auto _ : state) {
    co_await to.send(v);
    v = (co_await from.receive()).value();
  }
  to.close();
  co_await scope.join();
  if (v != static_cast<int>(state.iterations())) state.SkipWithError("lost value");
}
void BM_RT_ChannelPingPong(benchmark::State& state) {
  ThreadPool pool(static_cast<unsigned>(state.range(0)));
  Channel<int> to(0), from(0);  // rendezvous, like Boost's unbuffered_channel
  sync_wait(pool, ping_pong(state, to, from));
}

// The two ends of Boost's ping-pong: echo answers v + 1 until `to` closes; ping
// sends one value per iteration, waits for the answer, then closes `to`.
using BoostChannel = boost::fibers::unbuffered_channel<int>;
void boost_echo(BoostChannel& to, BoostChannel& from) {
  int v;
  while (to.pop(v) == boost::fibers::channel_op_status::success) from.push(v + 1);
}
void boost_ping(benchmark::State& state, BoostChannel& to, BoostChannel& from) {
  int v = 0;
  for (auto _ : state) {
    to.push(v);
    from.pop(v);
  }
  to.close();
}

void BM_Base_BoostChannelPingPong(benchmark::State& state) {
  BoostChannel to, from;
  boost::fibers::fiber echo([&] { boost_echo(to, from); });
  boost_ping(state, to, from);
  echo.join();
}

// The M:N peer of ThreadPool(2): Boost.Fiber's work-sharing scheduler on two
// threads (spinning dispatchers, as in Boost's work_sharing example), the ping
// and echo fibers free to run on either thread.
void BM_Base_BoostChannelPingPong2(benchmark::State& state) {
  namespace bf = boost::fibers;
  BoostChannel to, from;
  bf::mutex mu;
  bf::condition_variable cv;
  bool done = false;
  std::thread helper([&] {
    bf::use_scheduling_algorithm<bf::algo::shared_work>();
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done; });  // runs shared fibers meanwhile
  });
  std::thread driver([&] {
    bf::use_scheduling_algorithm<bf::algo::shared_work>();
    bf::fiber echo([&] { boost_echo(to, from); });
    bf::fiber ping([&] { boost_ping(state, to, from); });
    ping.join();
    echo.join();
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_all();
  });
  driver.join();
  helper.join();
}

// ------------------------------------------------------------ post throughput

// The round's end: the last done_one() sets a Flag (bench_support.hpp), which
// the waiter parks on.
struct Countdown {
  std::atomic<int> left{0};  // set before the round's posts; acq_rel decrements
  turnstile_bench::Flag zero;
  void done_one() noexcept {
    if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) zero.set();
  }
  void wait() noexcept { zero.wait_and_rearm(); }
};

struct CountItem final : Runnable {
  Countdown* countdown = nullptr;
  void run() noexcept override { countdown->done_one(); }
};

void BM_RT_PoolPost(benchmark::State& state) {
  ThreadPool pool(static_cast<unsigned>(state.range(0)));
  Countdown countdown;
  std::vector<CountItem> items(kBatch);
  for (auto& item : items) item.countdown = &countdown;
  for (auto _ : state) {
    countdown.left.store(kBatch, std::memory_order_relaxed);
    for (auto& item : items) pool.post(item);
    countdown.wait();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_RT_PoolPostFn(benchmark::State& state) {
  ThreadPool pool(static_cast<unsigned>(state.range(0)));
  Countdown countdown;
  for (auto _ : state) {
    countdown.left.store(kBatch, std::memory_order_relaxed);
    for (int i = 0; i < kBatch; ++i) pool.post_fn([&countdown] { countdown.done_one(); });
    countdown.wait();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_Base_AsioPost(benchmark::State& state) {
  boost::asio::thread_pool pool(static_cast<std::size_t>(state.range(0)));
  Countdown countdown;
  for (auto _ : state) {
    countdown.left.store(kBatch, std::memory_order_relaxed);
    for (int i = 0; i < kBatch; ++i) boost::asio::post(pool, [&countdown] { countdown.done_one(); });
    countdown.wait();
  }
  pool.join();
  state.SetItemsProcessed(state.iterations() * kBatch);
}

// ------------------------------------------------------------ sleep wake-up

constexpr auto kSleep = std::chrono::microseconds(1);

// What a measured loop (the sleeps, the hops) costs the whole process: context
// switches (voluntary and involuntary, every thread, getrusage) and CPU time,
// taken where the loop starts and ends (on the thread that runs it).
struct ProcessProbe {
  long switches0 = 0, switches1 = 0;
  double cpu0 = 0, cpu1 = 0;
  void start() {
    switches0 = turnstile_bench::process_switches().total();
    cpu0 = turnstile_bench::process_cpu_ns();
  }
  void stop() {
    cpu1 = turnstile_bench::process_cpu_ns();
    switches1 = turnstile_bench::process_switches().total();
  }
  void report(benchmark::State& state) const {
    const auto n = static_cast<double>(state.iterations());
    if (n > 0) {
      state.counters["switches_per_req"] = static_cast<double>(switches1 - switches0) / n;
      state.counters["proc_cpu_ns_per_req"] = (cpu1 - cpu0) / n;
    }
    state.SetItemsProcessed(state.iterations());
  }
};

Task<> sleep_loop(benchmark::State& state, ProcessProbe& p) {
  p.start();
  while (state.KeepRunning()) co_await sleep_for(kSleep);
  p.stop();
}

void BM_RT_SleepWake(benchmark::State& state) {
  ProcessProbe p;
  {
    ThreadPool pool(1);
    sync_wait(pool, sleep_loop(state, p));
  }
  p.report(state);
}

// The timer re-armed from its own handler until the loop ends.
struct AsioSleeper {
  benchmark::State& state;
  ProcessProbe& probe;
  boost::asio::steady_timer timer;
  void next() {
    if (!state.KeepRunning()) {
      probe.stop();
      return;
    }
    timer.expires_after(kSleep);
    timer.async_wait([this](const boost::system::error_code&) { next(); });
  }
};

void BM_Base_AsioTimerWake(benchmark::State& state) {
  ProcessProbe p;
  boost::asio::io_context io;
  AsioSleeper sleeper{state, p, boost::asio::steady_timer(io)};
  boost::asio::post(io, [&] {
    p.start();
    sleeper.next();
  });
  std::thread runner([&io] { io.run(); });  // one thread runs the reactor, as one carrier runs ours
  runner.join();
  p.report(state);
}

// ------------------------------------------------------------ sync_wait's hop

// The fiber starts on sync_wait's private loop (its home), hops to the pool and
// back: the pool's carrier posts the return to the loop from another thread.
Task<> hop_loop(benchmark::State& state, ThreadPool& pool, ProcessProbe& p) {
  Scheduler& home = current_scheduler();
  p.start();
  for (auto _ : state) {
    co_await resume_on(pool);
    co_await resume_on(home);
  }
  p.stop();
}

void BM_RT_SyncWaitHop(benchmark::State& state) {
  ProcessProbe p;
  {
    ThreadPool pool(1);
    sync_wait(hop_loop(state, pool, p));
  }
  p.report(state);
}

void BM_Base_AsioFutureHop(benchmark::State& state) {
  ProcessProbe p;
  {
    boost::asio::thread_pool pool(1);
    p.start();
    for (auto _ : state) boost::asio::post(pool, boost::asio::use_future).get();
    p.stop();
    pool.join();
  }
  p.report(state);
}

// ------------------------------------------------------------ fan-out of CPU chunks

constexpr int kFanOut = 64;  // chunks per iteration

// `us` microseconds of CPU on the calling thread (a spin on the clock: the
// chunk's length is what the benchmark varies, not its work).
void spin_for(long us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// The fan-out's rounds, written once for every pool: post(f) queues f on the
// pool; one posted item posts the kFanOut chunks from its run.
template <class Post>
void fan_out_rounds(benchmark::State& state, Post post) {
  const long us = state.range(0);
  Countdown countdown;
  for (auto _ : state) {
    countdown.left.store(kFanOut, std::memory_order_relaxed);
    post([&post, &countdown, us] {
      for (int i = 0; i < kFanOut; ++i)
        post([&countdown, us] {
          spin_for(us);
          countdown.done_one();
        });
    });
    countdown.wait();
  }
  state.SetItemsProcessed(state.iterations() * kFanOut);
}

void turnstile_fan_out(benchmark::State& state, bool hand_off) {
  ThreadPool pool(2, ThreadPool::kDefaultSpinRounds, ThreadPool::kUnlimitedPollers,
                  hand_off);
  fan_out_rounds(state, [&pool](auto f) { pool.post_fn(std::move(f)); });
}
void BM_RT_FanOut(benchmark::State& state) { turnstile_fan_out(state, true); }
void BM_RT_FanOut_NoHandOff(benchmark::State& state) { turnstile_fan_out(state, false); }

void BM_Base_AsioFanOut(benchmark::State& state) {
  boost::asio::thread_pool pool(2);
  fan_out_rounds(state, [&pool](auto f) { boost::asio::post(pool, std::move(f)); });
  pool.join();
}

}  // namespace

BENCHMARK(BM_RT_TaskAwait);
BENCHMARK(BM_Base_RefTaskAwait);
BENCHMARK(BM_RT_EventWake);
BENCHMARK(BM_Base_BoostFiberCvWake);
BENCHMARK(BM_RT_ChannelPingPong)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_BoostChannelPingPong);
BENCHMARK(BM_Base_BoostChannelPingPong2)->UseRealTime();
BENCHMARK(BM_RT_PoolPost)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_RT_PoolPostFn)->ArgName("carriers")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_Base_AsioPost)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_RT_SleepWake)->UseRealTime();
BENCHMARK(BM_Base_AsioTimerWake)->UseRealTime();
BENCHMARK(BM_RT_SyncWaitHop)->UseRealTime();
BENCHMARK(BM_Base_AsioFutureHop)->UseRealTime();
BENCHMARK(BM_RT_FanOut)->ArgName("chunk_us")->Arg(10)->Arg(100)->UseRealTime();
BENCHMARK(BM_RT_FanOut_NoHandOff)->ArgName("chunk_us")->Arg(10)->Arg(100)->UseRealTime();
BENCHMARK(BM_Base_AsioFanOut)->ArgName("chunk_us")->Arg(10)->Arg(100)->UseRealTime();

BENCHMARK_MAIN();
