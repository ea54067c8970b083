// turnstile/errors.hpp: the exception types of turnstile's public surface.
//
// Every error names what it is about (the lane, the key, the activation) in its
// what() text, so a stack trace or a log line points at the cause.
#pragma once

#include <stdexcept>
#include <string>

namespace turnstile {

// A blocking bridge (sync_wait) or another plain-thread-only call was made from
// inside a framework execution context (a fiber, a lane turn, a posted item),
// where blocking could deadlock the carrier. [RT-6.2]
class FrameworkContextError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// send() or try_send() on a closed Channel. [RT-7.3]
class ChannelClosedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace turnstile
