// turnstile/turnstile.hpp: the umbrella header; includes the whole public surface.
#pragma once

// GCC 12 destroys twice a temporary with a non-trivial destructor built inside a
// `co_await` operand (e.g. `co_await lane.run([s] { ... })` with a std::string s,
// or `co_await ch.send(Item{id, FiberContext::capture()})`). Bind such a value to
// a named local first, then await it. This note (a `#pragma message`, so -Werror
// builds still compile) is printed under GCC 12; define TURNSTILE_NO_GCC12_WARNING
// to silence it (CMake: -DTURNSTILE_NO_GCC12_WARNING=ON defines it for users of
// turnstile::turnstile). The package's CMake config also probes the compiler.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12 && \
    !defined(TURNSTILE_NO_GCC12_WARNING)
#pragma message( \
    "turnstile: GCC 12 destroys a temporary with a non-trivial destructor inside a co_await " \
    "operand twice; bind such values to a named local before co_await (see README, 'Known " \
    "compiler issue'). Define TURNSTILE_NO_GCC12_WARNING to silence this note.")
#endif

#include "turnstile/activation.hpp"
#include "turnstile/binding_table.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/errors.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/gate.hpp"
#include "turnstile/host.hpp"
#include "turnstile/lane_callback.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/source_location.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/strand.hpp"
#include "turnstile/sync.hpp"
#include "turnstile/sync_wait.hpp"
#include "turnstile/task.hpp"
#include "turnstile/timer.hpp"
#include "turnstile/timer_handle.hpp"
#include "turnstile/trace.hpp"
