// fiber_local.cpp: the chain walk and the context swap behind FiberLocal and
// FiberContext.
#include "turnstile/fiber_local.hpp"

#include <exception>

namespace turnstile::detail {

// current_context() is re-read at construction and at destruction: for a Task
// body these run in different steps, possibly on different carriers, and each
// must act on the fiber's own slot ([FL-5.1]).
ContextSwap::ContextSwap(FrameRef next) noexcept
    : saved_(std::exchange(current_context(), std::move(next))) {}

ContextSwap::~ContextSwap() {
#if defined(TURNSTILE_MUTANT_FL_SKIP_RESTORE_ON_THROW)
  if (std::uncaught_exceptions() > 0) return;  // mutant: breaks [FL-6.2]
#endif
  current_context() = std::move(saved_);  // [FL-3.1] [FL-6.2]
}

void throw_unbound(const std::string& name) {
  throw UnboundFiberLocal(
      "FiberLocal '" + (name.empty() ? std::string("<unnamed>") : name) +
      "' is not bound in this context. Use or_else()/try_get() where it may be absent; detach "
      "and Channel carry no bindings, so hand them over with FiberContext::capture() and "
      "run() [FL-4.2]");
}

void TraceInstall::begin(const Frame* head) noexcept {
  try {
    if (ctx_.empty()) ctx_ = trace::ctx_id(head);
    on_ = true;
    trace::fl_ctx("fl.install", ctx_);
  } catch (...) {
  }
}

void TraceInstall::end() noexcept { trace::fl_ctx("fl.uninstall", ctx_); }

}  // namespace turnstile::detail

namespace turnstile {
void FiberContext::trace_capture() const noexcept {
  try {
    trace::fl_ctx("fl.capture", trace::ctx_id(head_.get()));
  } catch (...) {
  }
}
}  // namespace turnstile
