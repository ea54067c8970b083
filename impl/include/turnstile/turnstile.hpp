// turnstile/turnstile.hpp: the umbrella header; includes the whole public surface.
#pragma once

#include "turnstile/activation.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/completion.hpp"
#include "turnstile/errors.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/host.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/strand.hpp"
#include "turnstile/sync.hpp"
#include "turnstile/sync_wait.hpp"
#include "turnstile/task.hpp"
