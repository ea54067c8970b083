// The types both coawait_temporary samples use (a header: the samples are the
// .cpp files of this folder).
#pragma once

#include "turnstile/activation.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/state_lane.hpp"

using turnstile::FiberContext;
using turnstile::Task;

// A channel's item: its FiberContext makes its destructor non-trivial.
struct Item {
  int id;
  FiberContext ctx;
};
// An activation's state.
struct Cart {
  int items = 0;
};
