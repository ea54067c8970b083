// checks/static/umbrella.cpp: a translation unit for the static checks only (never
// built). It includes the umbrella header, so cppcheck and clang-tidy analyse every
// public header, also those no source file of impl/src includes (channel.hpp,
// binding_table.hpp, lane_callback.hpp). checks/static/compdb.py gives it the
// library's compile flags and fails if turnstile.hpp misses a header.
#include "turnstile/turnstile.hpp"

// The core templates over Sync, every non-template member instantiated with the
// product's StdSync, so run-thread-safety analyses all of them (a member no
// source of impl/src uses, or one used only from template code such as
// TurnChain::attach from Activation<State>::call, is checked here too).
template class turnstile::detail::BasicLaneCore<turnstile::StdSync>;
template class turnstile::detail::BasicTurnChain<turnstile::StdSync>;
template class turnstile::detail::BasicWaitGraph<turnstile::StdSync>;
