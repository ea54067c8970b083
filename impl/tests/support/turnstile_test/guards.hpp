// turnstile_test/guards.hpp: scope guards that restore process-wide settings a
// test changes.
//
// - HandlerGuard: installs an unhandled-exception handler, restores the previous
//   one on exit. Install it with no fiber of the test running.
#pragma once

#include <utility>

#include "turnstile/fiber.hpp"

namespace turnstile_test {

class HandlerGuard {
 public:
  explicit HandlerGuard(turnstile::UnhandledExceptionHandler h)
      : previous_(turnstile::set_unhandled_exception_handler(std::move(h))) {}
  ~HandlerGuard() { turnstile::set_unhandled_exception_handler(std::move(previous_)); }
  HandlerGuard(const HandlerGuard&) = delete;
  HandlerGuard& operator=(const HandlerGuard&) = delete;

 private:
  turnstile::UnhandledExceptionHandler previous_;
};

}  // namespace turnstile_test
