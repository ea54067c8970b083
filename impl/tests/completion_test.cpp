// Completion primitives: Event, Promise<T>, and awaiting outside a fiber.
#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "turnstile_test/on_schedulers.hpp"

namespace {

using namespace turnstile;
using tt::Boom;

// ---------------------------------------------------------------- Event

Task<> event_waiter(Event& ev, int id, std::vector<int>& began, std::vector<int>& released) {
  began.push_back(id);
  co_await ev.wait();
  released.push_back(id);
}

// spec: [RT-4.1] [RT-4.2]
TEST(Event, SetReleasesEveryWaiterOnceInTheOrderTheyBeganWaiting) {
  ManualScheduler ms;
  Event ev;
  std::vector<int> began;
  std::vector<int> released;
  for (int id = 0; id < 4; ++id) detach(ms, event_waiter(ev, id, began, released));
  // Start them in a different order than they were detached: 2, 0, 3, 1.
  ms.run_next(2);  // ready: 0 1 3
  ms.run_next(0);  // ready: 1 3
  ms.run_next(1);  // ready: 1
  ms.run_next(0);
  ASSERT_EQ(began, (std::vector<int>{2, 0, 3, 1}));
  EXPECT_EQ(ms.ready(), 0u) << "waiters must park, not spin";
  EXPECT_FALSE(ev.is_set());

  ev.set();
  EXPECT_TRUE(ev.is_set());
  EXPECT_TRUE(released.empty()) << "a waiter ran inside set()";
  EXPECT_EQ(ms.ready(), 4u) << "each waiter is posted exactly once";

  EXPECT_EQ(ms.run_until_idle(), 4u);
  EXPECT_EQ(released, (std::vector<int>{2, 0, 3, 1}));

  ev.set();  // setting again releases nobody twice
  EXPECT_EQ(ms.ready(), 0u);
}

// spec: [RT-4.1]
TEST(Event, WaitOnASetEventPassesAtOnce) {
  ManualScheduler ms;
  Event ev(true);
  std::vector<int> began;
  std::vector<int> released;
  detach(ms, event_waiter(ev, 7, began, released));
  ms.run_next();
  EXPECT_EQ(released, (std::vector<int>{7})) << "the wait should not have suspended";
  EXPECT_EQ(ms.ready(), 0u);
}

// spec: [RT-4.1]
TEST(Event, ResetRearmsTheEvent) {
  ManualScheduler ms;
  Event ev;
  ev.set();
  ev.reset();
  EXPECT_FALSE(ev.is_set());
  std::vector<int> began;
  std::vector<int> released;
  turnstile_test::run_detached(ms, event_waiter(ev, 1, began, released));
  EXPECT_TRUE(released.empty()) << "a reset event must make waiters wait again";
  ev.set();
  ms.run_until_idle();
  EXPECT_EQ(released, (std::vector<int>{1}));
}

struct SetterView {
  bool waiter_done_when_set_returned = true;
  std::size_t ready_when_set_returned = 0;
};

Task<> event_setter(Event& ev, const std::vector<int>& released, ManualScheduler& ms,
                    SetterView& view) {
  ev.set();
  view.waiter_done_when_set_returned = !released.empty();
  view.ready_when_set_returned = ms.ready();
  co_return;
}

// One waiter fiber on an Event, then one setter fiber, each started (one step)
// on a scheduler of the test's choice.
struct WaitThenSet {
  Event ev;
  std::vector<int> began;
  std::vector<int> released;
  SetterView view;
  void start_waiter(ManualScheduler& home) {
    detach(home, event_waiter(ev, 1, began, released));
    home.run_next();
  }
  void start_setter(ManualScheduler& home) {
    detach(home, event_setter(ev, released, home, view));
    home.run_next();
  }
};

// spec: [RT-4.2]
TEST(Event, SetInsideAFiberNeverResumesTheWaiterInline) {
  ManualScheduler ms;
  WaitThenSet w;
  w.start_waiter(ms);
  w.start_setter(ms);
  EXPECT_FALSE(w.view.waiter_done_when_set_returned);
  EXPECT_EQ(w.view.ready_when_set_returned, 1u);
  ms.run_until_idle();
  EXPECT_EQ(w.released, (std::vector<int>{1}));
}

// spec: [RT-4.2]
TEST(Event, WaiterIsPostedToItsOwnFibersScheduler) {
  ManualScheduler waiter_home;
  ManualScheduler setter_home;
  WaitThenSet w;
  w.start_waiter(waiter_home);
  w.start_setter(setter_home);
  EXPECT_EQ(setter_home.ready(), 0u) << "the waiter was posted to the completer's scheduler";
  EXPECT_EQ(waiter_home.ready(), 1u);
  waiter_home.run_next();
  EXPECT_EQ(w.released, (std::vector<int>{1}));
}

// ---------------------------------------------------------------- Promise

template <class T>
Task<> promise_reader(Promise<T>& p, std::vector<T>& seen) {
  seen.push_back(co_await p.wait());
}

Task<> promise_error_reader(Promise<int>& p, std::vector<std::string>& errors) {
  try {
    (void)co_await p.wait();
    errors.push_back("<no exception>");
  } catch (const Boom& e) {
    errors.push_back(e.what());
  }
}

// spec: [RT-4.3] [RT-4.2]
TEST(Promise, EveryWaiterSeesTheValue) {
  ManualScheduler ms;
  Promise<std::string> p;
  std::vector<std::string> seen;
  detach(ms, promise_reader(p, seen));
  turnstile_test::run_detached(ms, promise_reader(p, seen));
  EXPECT_TRUE(seen.empty());
  EXPECT_FALSE(p.is_ready());
  p.set_value("forty-two");
  EXPECT_TRUE(p.is_ready());
  EXPECT_TRUE(seen.empty()) << "a waiter ran inside set_value()";
  EXPECT_EQ(ms.ready(), 2u);
  ms.run_until_idle();
  EXPECT_EQ(seen, (std::vector<std::string>{"forty-two", "forty-two"}));
  // A wait after completion passes at once with the same value.
  detach(ms, promise_reader(p, seen));
  EXPECT_EQ(ms.run_until_idle(), 1u);
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen.back(), "forty-two");
}

Task<> promise_taker(Promise<std::unique_ptr<int>>& p, int& out) {
  std::unique_ptr<int> v = co_await p.take();
  out = v ? *v : -1;
}

// spec: [RT-4.3]
TEST(Promise, TakeMovesTheValueOut) {
  ManualScheduler ms;
  Promise<std::unique_ptr<int>> p;
  int out = 0;
  turnstile_test::run_detached(ms, promise_taker(p, out));
  p.set_value(std::make_unique<int>(7));
  ms.run_until_idle();
  EXPECT_EQ(out, 7);
}

// spec: [RT-4.3]
TEST(Promise, EveryWaiterHasTheExceptionRethrown) {
  ManualScheduler ms;
  Promise<int> p;
  std::vector<std::string> errors;
  detach(ms, promise_error_reader(p, errors));
  turnstile_test::run_detached(ms, promise_error_reader(p, errors));
  p.set_exception(std::make_exception_ptr(Boom("refused")));
  EXPECT_TRUE(errors.empty());
  ms.run_until_idle();
  EXPECT_EQ(errors, (std::vector<std::string>{"refused", "refused"}));
}

// spec: [RT-4.3]
TEST(Promise, SecondCompletionThrowsLogicError) {
  ManualScheduler ms;
  {
    Promise<int> p;
    p.set_value(1);
    EXPECT_THROW(p.set_value(2), std::logic_error);
    EXPECT_THROW(p.set_exception(std::make_exception_ptr(Boom("late"))), std::logic_error);
    std::vector<int> seen;
    turnstile_test::run_detached(ms, promise_reader(p, seen));
    EXPECT_EQ(seen, (std::vector<int>{1})) << "a refused completion changed the value";
  }
  {
    Promise<int> p;
    p.set_exception(std::make_exception_ptr(Boom("first")));
    EXPECT_THROW(p.set_value(2), std::logic_error);
    EXPECT_THROW(p.set_exception(std::make_exception_ptr(Boom("second"))), std::logic_error);
    std::vector<std::string> errors;
    turnstile_test::run_detached(ms, promise_error_reader(p, errors));
    EXPECT_EQ(errors, (std::vector<std::string>{"first"}));
  }
  {
    Promise<void> p;
    p.set_value();
    EXPECT_THROW(p.set_value(), std::logic_error);
    EXPECT_THROW(p.set_exception(std::make_exception_ptr(Boom("x"))), std::logic_error);
  }
}

Task<> void_promise_reader(Promise<void>& p, std::vector<std::string>& log) {
  try {
    co_await p.wait();
    log.push_back("value");
  } catch (const Boom& e) {
    log.push_back(e.what());
  }
}

// spec: [RT-4.3] [RT-4.2]
TEST(Promise, VoidPromiseCompletesWithValueOrException) {
  ManualScheduler ms;
  Promise<void> ok;
  Promise<void> failed;
  std::vector<std::string> log;
  detach(ms, void_promise_reader(ok, log));
  turnstile_test::run_detached(ms, void_promise_reader(failed, log));
  ok.set_value();
  failed.set_exception(std::make_exception_ptr(Boom("void-failure")));
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(ms.ready(), 2u);
  ms.run_until_idle();
  EXPECT_EQ(log, (std::vector<std::string>{"value", "void-failure"}));
}

// ---------------------------------------------------------------- [RT-4.4]

Task<> await_event(Event& ev) { co_await ev.wait(); }
Task<> await_promise(Promise<int>& p) { (void)co_await p.wait(); }
Task<> await_yield() { co_await yield(); }
Task<> await_receive(Channel<int>& ch) { (void)co_await ch.receive(); }
Task<> await_send_on_full(Channel<int>& ch) { co_await ch.send(1); }

// Drives a task by hand on this plain thread (no scheduler, no fiber) and
// returns what its body threw.
std::exception_ptr run_outside_a_fiber(Task<> t) {
  auto h = t.release();
  h.resume();
  EXPECT_TRUE(h.done()) << "the awaited primitive suspended instead of refusing";
  std::exception_ptr error;
  if (h.done()) {
    try {
      h.promise().take_result();
    } catch (...) {
      error = std::current_exception();
    }
    h.destroy();
  }
  return error;
}

bool is_framework_context_error(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const FrameworkContextError&) {
    return true;
  } catch (...) {
    return false;
  }
}

// spec: [RT-4.4]
TEST(Completion, AwaitingOutsideAFiberThrowsFrameworkContextError) {
  ASSERT_FALSE(on_fiber());
  Event ev;
  Promise<int> p;
  Channel<int> empty(1);
  Channel<int> full(0);
  EXPECT_TRUE(is_framework_context_error(run_outside_a_fiber(await_event(ev))));
  EXPECT_TRUE(is_framework_context_error(run_outside_a_fiber(await_promise(p))));
  EXPECT_TRUE(is_framework_context_error(run_outside_a_fiber(await_yield())));
  EXPECT_TRUE(is_framework_context_error(run_outside_a_fiber(await_receive(empty))));
  EXPECT_TRUE(is_framework_context_error(run_outside_a_fiber(await_send_on_full(full))));
  // Nothing was left registered: completing now wakes nobody (ASan would catch a
  // dangling waiter node).
  ev.set();
  p.set_value(1);
  empty.close();
  full.close();
  EXPECT_EQ(empty.size(), 0u);
}

// ---------------------------------------------------------------- on every scheduler

// Waiters parked on a Promise from several carriers: one completion releases each,
// once, with the value or the exception. One slot per waiter (they may run at once).
class PromiseOnSchedulers : public turnstile_test::OnSchedulers {};
TURNSTILE_TEST_ON_SCHEDULERS(PromiseOnSchedulers);

Task<> value_into(Promise<std::string>& p, std::optional<std::string>& slot) {
  slot.emplace(co_await p.wait());
}

Task<> error_into(Promise<int>& p, std::string& slot) {
  try {
    (void)co_await p.wait();
    slot = "<no exception>";
  } catch (const Boom& e) {
    slot = e.what();
  }
}

// spec: [RT-4.3] [RT-4.1]
TEST_P(PromiseOnSchedulers, EveryWaiterSeesTheValueOrTheException) {
  constexpr std::size_t kWaiters = 4;
  Promise<std::string> value;
  Promise<int> failure;
  std::vector<std::optional<std::string>> seen(kWaiters);
  std::vector<std::string> errors(kWaiters);
  auto body = [&]() -> Task<> {
    Scope scope;
    for (std::size_t i = 0; i < kWaiters; ++i) {
      scope.spawn(value_into(value, seen[i]));
      scope.spawn(error_into(failure, errors[i]));
    }
    co_await yield();  // some waiters park first, others wait after the completion
    value.set_value("forty-two");
    failure.set_exception(std::make_exception_ptr(Boom("refused")));
    co_await scope.join();
  };
  run(body());
  for (std::size_t i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(seen[i], "forty-two") << i;
    EXPECT_EQ(errors[i], "refused") << i;
  }
}

}  // namespace
