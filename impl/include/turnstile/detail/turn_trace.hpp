// turnstile/detail/turn_trace.hpp: the one writer of the turns' trace events
// [TRACE-4.3] (turn_trace.cpp; their fields are tabled in spec/trace-format.md).
//
// Every function is called only while the sink is on (trace::on()), with the
// activation's id as `act` and, but for call(), the call's id as `call` (empty:
// the field is left out).
#pragma once

#include <string>
#include <string_view>

namespace turnstile::detail::turn_trace {

// turn.call (turn.reentry when `task`, the ctx.task making it, is set) under
// the caller's trace::order_lock(); returns the call's id: the caller's label
// (then also its `op`) or a fresh id.
std::string call(const std::string& act, const std::string& method, bool serial,
                 std::string_view task);
// The turn's fiber name ("act:call"), announced by its fiber.spawn: the turn
// is a structured fiber that sees the caller's bindings.
std::string turn_fiber(const std::string& act, const std::string& call);
// Any other turn event: turn.start, turn.end (outcome), turn.task_start
// (task), turn.await, turn.await_refused (reason), turn.slow (by); `field`
// (null: none) with `value`.
void event(const char* ev, std::string_view act, std::string_view call,
           const char* field = nullptr, std::string_view value = {}) noexcept;

}  // namespace turnstile::detail::turn_trace
