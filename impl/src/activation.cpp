// activation.cpp: ActivationBase: its lifetime check, its lane choice, its
// counters and its slow-turn report. The turn itself is template code
// (detail/activation_impl.hpp); its watch is slow_turn_watch.cpp, its wait
// refusal call_wait.cpp, its trace events turn_trace.cpp.
#include "turnstile/activation.hpp"

#include <cstdio>
#include <cstdlib>

#include "turnstile/detail/turn_trace.hpp"

namespace turnstile {

// The watch takes the injected clock ([TURN-4.2]): nothing else reads it.
ActivationBase::ActivationBase(std::string id, ActivationOptions options, Scheduler& scheduler)
    : strand_(std::allocate_shared<Strand>(detail::BlockAllocator<Strand>{}, scheduler)),  // [RT-1.7]
      id_(std::move(id)),
      options_(std::move(options)),
      watch_(strand_->underlying(), options_.slow_turn, std::move(options_.clock), *this) {}

ActivationBase::~ActivationBase() {
  const bool turns = running() != 0 || queued() != 0;  // [TURN-1.1]
  const bool tasks_alive = tasks() != 0;                 // [TURN-5.4]
  if (turns || tasks_alive) {
    std::fprintf(stderr,
                 "turnstile: activation '%s' was destroyed with %zu turn(s) running, %zu "
                 "queued and %zu task(s) alive; await its calls and let its ctx.task work end "
                 "before destroying it%s%s\n",
                 id_.c_str(), running(), queued(), tasks(), turns ? " [TURN-1.1]" : "",
                 tasks_alive ? " [TURN-5.4]" : "");
    std::abort();
  }
}

bool ActivationBase::is_interleaved(const std::string& method) const {
  return options_.reentrancy == Reentrancy::always ||
         options_.interleaved_methods.count(method) != 0;  // [TURN-3.3]
}

ActivationStats ActivationBase::stats() const {
  return ActivationStats{id_, queued(), running(), turns_completed(), slow_turns()};
}

void ActivationBase::check_slow_turns() { watch_.check(); }

void ActivationBase::slow_turn(const std::string& method, std::chrono::nanoseconds elapsed,
                               std::string_view trace_call, const char* by) {
  slow_.fetch_add(1, std::memory_order_relaxed);
  if (options_.on_slow_turn) {
    options_.on_slow_turn(id_, method, elapsed);
  } else {
    std::fprintf(stderr,
                 "turnstile: slow turn: activation '%s' method '%s' ran %lld ms [TURN-4.2]\n",
                 id_.c_str(), method.c_str(),
                 static_cast<long long>(
                     std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
  }
  if (!trace_call.empty()) [[unlikely]] detail::turn_trace::event("turn.slow", id_, trace_call, "by", by);
}

}  // namespace turnstile
