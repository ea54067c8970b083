// fiber_local.cpp: the chain walk and the context swap behind FiberLocal and
// FiberContext.
#include "turnstile/fiber_local.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>

namespace turnstile::detail {

// current_context() is re-read at construction and at destruction: for a Task
// body these run in different steps, possibly on different carriers, and each
// must act on the fiber's own slot ([FL-5.1]).
ContextSwap::ContextSwap(FrameRef next) noexcept
    : saved_(exchange_context(std::move(next))) {}

ContextSwap::~ContextSwap() {
  exchange_context(std::move(saved_));  // [FL-3.1] [FL-6.2] (the replaced chain is released)
}

namespace {
// Registered position keys ([FL-3.8]). A slot is written once, before the key's
// first binding; readers skip a slot still null (its key has no binding yet).
std::array<std::atomic<PositionCarry>, kMaxPositionKeys> position_keys{};
std::atomic<int> position_key_count{0};
}  // namespace

void register_position_key(PositionCarry carry) noexcept {
  // relaxed: the index only has to be unique; the slot's release store below
  // publishes the function.
  const int slot = position_key_count.fetch_add(1, std::memory_order_relaxed);
  if (slot >= kMaxPositionKeys) std::abort();  // the runtime registers two
  // release: pairs with the acquire load in keep_position().
  position_keys[static_cast<std::size_t>(slot)].store(carry, std::memory_order_release);
}

FrameRef keep_position(FrameRef snapshot) {
  const Frame* running = current_context().get();
  // relaxed: a slot index past the count is also read as null below.
  const int n = position_key_count.load(std::memory_order_relaxed);
  for (int i = 0; i < n && i < kMaxPositionKeys; ++i) {
    // acquire: pairs with the release store in register_position_key().
    if (PositionCarry carry = position_keys[static_cast<std::size_t>(i)].load(std::memory_order_acquire))
      snapshot = carry(std::move(snapshot), running);  // [FL-3.8]
  }
  return snapshot;
}

FrameRef clear_position(FrameRef ctx) {
  if (!ctx) return ctx;  // nothing bound, nothing to clear
  // relaxed/acquire: as in keep_position().
  const int n = position_key_count.load(std::memory_order_relaxed);
  for (int i = 0; i < n && i < kMaxPositionKeys; ++i) {
    if (PositionCarry carry = position_keys[static_cast<std::size_t>(i)].load(std::memory_order_acquire))
      ctx = carry(std::move(ctx), nullptr);  // [FL-3.8] unbound in "nowhere"
  }
  return ctx;
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
