// impl/tests/testing/explore_gallery.hpp: a gallery of realistic user bugs on
// turnstile, each a Task-form program for explore() (spec/testing.md). Each
// program checks what its author believed; under some schedules it is false.
// Each is a template over `Fixed`: true gives the program with its bug fixed
// the usual way, which no schedule fails.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "turnstile/activation.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/testing/explore.hpp"

namespace explore_gallery {

using namespace turnstile;
using namespace turnstile::testing;

// 1. Check-then-act across an await in an interleaved turn: "buy" checks the
// stock, awaits a price lookup, then takes one; two buyers of the last item.
struct Shop {
  int left = 1;
  int* sold = nullptr;
};
template <bool Fixed>
Task<> buyer(Activation<Shop>& shop, int arrive_after) {
  for (int i = 0; i < arrive_after; ++i) co_await yield();
  auto buy = [](TurnContext<Shop>& ctx) -> Task<> {
    if (ctx.state().left > 0) {  // check
      co_await yield();          // the price lookup: the interleaved turn lets go here
      if (Fixed && ctx.state().left == 0) co_return;  // the fix: check again after the await
      ctx.state().left -= 1;     // act
      *ctx.state().sold += 1;
    }
  };
  Task<> bought = shop.call("buy", std::move(buy));
  co_await std::move(bought);
}
template <bool Fixed>
Task<> check_then_act(ManualScheduler& s) {
  int sold = 0;
  ActivationOptions opts;
  opts.interleaved_methods = {"buy"};
  Activation<Shop> shop("shop", Shop{1, &sold}, opts, s);
  Scope scope;
  scope.spawn(buyer<Fixed>(shop, 0));
  scope.spawn(buyer<Fixed>(shop, 2));
  Task<> joined = scope.join();
  co_await std::move(joined);
  check_that(sold <= 1, "sold " + std::to_string(sold) + " items with one in stock");
}

// 2. A lost update between two lanes' items: a transfer reads the balance on
// the accounts lane and writes it back on the ledger lane, while a deposit
// adds on the accounts lane; each lane is exclusive, but not with the other.
template <bool Fixed>
Task<> transfer_in(StateLane& accounts, StateLane& ledger, int& balance) {
  if (Fixed) {  // the fix: read and write in one item of the lane that owns the balance
    Task<> add = accounts.run([&balance] { balance += 10; });
    co_await std::move(add);
    co_return;
  }
  Task<int> read = accounts.run([&balance] { return balance; });
  const int seen = co_await std::move(read);
  Task<> write = ledger.run([&balance, seen] { balance = seen + 10; });
  co_await std::move(write);
}
inline Task<> deposit(StateLane& accounts, int& balance) {
  for (int i = 0; i < 3; ++i) co_await yield();  // arrives a little later
  Task<> add = accounts.run([&balance] { balance += 1; });
  co_await std::move(add);
}
template <bool Fixed>
Task<> lost_update(ManualScheduler& s) {
  int balance = 0;
  StateLane accounts("accounts", s);
  StateLane ledger("ledger", s);
  Scope scope;
  scope.spawn(transfer_in<Fixed>(accounts, ledger, balance));
  scope.spawn(deposit(accounts, balance));
  Task<> joined = scope.join();
  co_await std::move(joined);
  check_that(balance == 11, "balance " + std::to_string(balance) + ", expected 11");
  Task<> c1 = accounts.close();
  co_await std::move(c1);
  Task<> c2 = ledger.close();
  co_await std::move(c2);
}

// 3. A wait on an Event only a queued turn would set: "wait_open" awaits the
// gate inside its serial turn, and only "open", queued behind it, sets it.
struct Gate {
  Event* opened = nullptr;
};
inline Task<> opener(Activation<Gate>& gate) {
  Task<> o = gate.call("open", [](Gate& g) { g.opened->set(); });
  co_await std::move(o);
}
inline Task<> waiter(Activation<Gate>& gate) {
  auto wait_open = [](TurnContext<Gate>& ctx) -> Task<> {
    co_await ctx.state().opened->wait();  // holds the serial lane while it waits
  };
  Task<> w = gate.call("wait_open", std::move(wait_open));
  co_await std::move(w);
}
template <bool Fixed>
Task<> event_behind_turn(ManualScheduler& s) {
  Event opened;
  ActivationOptions opts;  // the fix: the waiting method is interleaved, off the serial lane
  if (Fixed) opts.interleaved_methods = {"wait_open"};
  Activation<Gate> gate("gate", Gate{&opened}, opts, s);
  Scope scope;
  scope.spawn(opener(gate));
  scope.spawn(waiter(gate));
  Task<> joined = scope.join();
  co_await std::move(joined);
}

// 4. A FiberLocal read after a handoff that did not capture: a job queued
// under a request id is run by whichever fiber gets to the queue first; the
// worker runs it without the request's bindings (FiberContext::capture() at
// the push, and run() at the pop, would carry them).
inline FiberLocal<std::string> request_id("request_id");
struct Jobs {
  std::deque<std::function<void()>> queue;
  std::vector<std::string> logged;
  void run_one() {
    if (queue.empty()) return;
    auto job = std::move(queue.front());
    queue.pop_front();
    job();
  }
};
template <bool Fixed>
Task<> handle_request(Jobs& jobs) {
  Task<> handled = request_id.where("req-7", [&jobs]() -> Task<> {
    auto log = [&jobs] { jobs.logged.push_back(request_id.or_else("<unbound>")); };
    if (Fixed)  // the fix: capture the bindings at the handoff, install them to run
      jobs.queue.push_back([log, ctx = FiberContext::capture()] { ctx.run(log); });
    else
      jobs.queue.push_back(log);
    co_await yield();
    jobs.run_one();  // flush our own job, unless the worker took it
  });
  co_await std::move(handled);
}
inline Task<> worker(Jobs& jobs) {
  co_await yield();
  co_await yield();
  jobs.run_one();
}
template <bool Fixed>
Task<> handoff_without_capture(ManualScheduler&) {
  Jobs jobs;
  Scope scope;
  scope.spawn(handle_request<Fixed>(jobs));
  scope.spawn(worker(jobs));
  Task<> joined = scope.join();
  co_await std::move(joined);
  check_that(jobs.logged == std::vector<std::string>{"req-7"},
             "the job logged '" + (jobs.logged.empty() ? std::string() : jobs.logged[0]) +
                 "' for request req-7");
}

// 5. close() racing a try_post whose false is ignored: the job is dropped.
template <bool Fixed>
Task<> producer(StateLane& lane, int& done) {
  co_await yield();
  const bool posted = lane.try_post([&done] { ++done; });  // ignored: "the lane is open"
  if (Fixed && !posted) ++done;  // the fix: a refused job is done here
}
inline Task<> closer(StateLane& lane) {
  co_await yield();
  co_await yield();
  Task<> c = lane.close();
  co_await std::move(c);
}
template <bool Fixed>
Task<> close_races_try_post(ManualScheduler& s) {
  int done = 0;
  StateLane lane("jobs", s);
  Scope scope;
  scope.spawn(producer<Fixed>(lane, done));
  scope.spawn(closer(lane));
  Task<> joined = scope.join();
  co_await std::move(joined);
  check_that(done == 1, "the posted job never ran: try_post lost the race with close()");
}

}  // namespace explore_gallery
