// turnstile_test/outcome.hpp: recording how a Task or a call ended, for tests that
// step a scheduler between making calls and looking at their results.
//
// - Outcome<T> / collect(s, task, out): awaits `task` in a new detached fiber on
//   `s` and records its value or exception into `out` (done is set last). `out`
//   must outlive the fiber; read it once the scheduler has run the fiber to its
//   end (a ManualScheduler driven to idle, a ThreadPool destroyed or joined
//   through some latch).
// - outcome_of(task): a Task that awaits `task` and returns its Outcome (it never
//   throws), e.g. `const Outcome<int> o = sync_wait(s, outcome_of(std::move(call)));`.
// - Settled<T> / settle<Error>(task): the same as a Task, for property scenarios:
//   the value, the `id` of an `Error` (a type with an int member `id`), or
//   `other` for any other exception.
// - what(e): the message of the exception in `e` ("" when none,
//   "<non-standard>" when it is not a std::exception).
// - thrown<E>(fn): what() of the E that fn() threw, nullopt when it threw none
//   (any other exception propagates); throws<E>(fn): whether it threw one.
// - Boom: the exception a test body throws on purpose.
#pragma once

#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/task.hpp"

namespace turnstile_test {

struct Boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class T>
struct Outcome {
  bool done = false;
  std::optional<T> value;
  std::exception_ptr error;
};
template <>
struct Outcome<void> {
  bool done = false;
  std::exception_ptr error;
};

template <class T>
turnstile::Task<> collect_into(turnstile::Task<T> task, Outcome<T>& out) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
    } else {
      out.value.emplace(co_await std::move(task));
    }
  } catch (...) {
    out.error = std::current_exception();
  }
  out.done = true;
}

template <class T>
void collect(turnstile::Scheduler& s, turnstile::Task<T> task, Outcome<T>& out) {
  turnstile::detach(s, collect_into(std::move(task), out));
}

template <class T>
turnstile::Task<Outcome<T>> outcome_of(turnstile::Task<T> task) {
  Outcome<T> out;
  turnstile::Task<> collecting = collect_into(std::move(task), out);
  co_await std::move(collecting);
  co_return out;
}

template <class T>
struct Settled {
  std::optional<T> value;
  std::optional<int> error_id;  // the id of the expected error type
  bool other = false;           // any other exception
};

template <class Error, class T>
turnstile::Task<Settled<T>> settle(turnstile::Task<T> task) {
  Settled<T> s;
  try {
    s.value.emplace(co_await std::move(task));
  } catch (const Error& e) {
    s.error_id = e.id;
  } catch (...) {
    s.other = true;
  }
  co_return s;
}

template <class E, class F>
std::optional<std::string> thrown(F&& fn) {
  try {
    std::forward<F>(fn)();
  } catch (const E& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

template <class E, class F>
bool throws(F&& fn) {
  return thrown<E>(std::forward<F>(fn)).has_value();
}

inline std::string what(const std::exception_ptr& e) {
  if (!e) return {};
  try {
    return thrown<std::exception>([&e] { std::rethrow_exception(e); }).value_or("");  // always thrown
  } catch (...) {
    return "<non-standard>";
  }
}

}  // namespace turnstile_test
