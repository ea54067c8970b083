// checks/static/umbrella.cpp: a translation unit for the static checks only (never
// built). It includes the umbrella header, so cppcheck and clang-tidy analyse every
// public header, also those no source file of impl/src includes (channel.hpp,
// binding_table.hpp, lane_callback.hpp). checks/static/compdb.py gives it the
// library's compile flags and fails if turnstile.hpp misses a header.
#include "turnstile/turnstile.hpp"
