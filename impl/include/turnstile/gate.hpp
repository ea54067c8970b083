// turnstile/gate.hpp: Gate, an operation-protocol gate: one holder at a time
// around an external operation (a socket write, a handshake, a disposal).
//
//   Task<> send(Gate& gate, Connection& c, StateLane& lane, Key k) {
//     Gate::Holder held = co_await gate.acquire();       // waits its turn (FIFO)
//     auto route = co_await lane.run([&] { return claim_route(k); });  // allowed
//     co_await c.write(route);                            // the external operation
//   }                                                     // ~Holder releases
//
// A Gate is not a state lock. It serialises the start and end of an external
// operation; it owns no C2 state. It stays a gate only while the four
// conditions of [LANE-4.5] hold: it protects an operation's start/end (or a
// disposal), everything the operation needs is settled before it starts, code
// after the gate acts on a transferred resource rather than a state snapshot,
// and the completion path hands the ownership back exactly once. The Holder is
// that ownership: move-only, released exactly once (by release() or by its
// destructor).
//
// Guarantees
//   - At most one Holder owns the gate at any time.
//   - Waiters are served in the order they started waiting; a release hands the
//     gate straight to the oldest waiter, so neither a later acquire() nor a
//     try_acquire() can overtake a waiter.
//   - Direction rule ([LANE-4.6]): waiting for a lane while holding a gate is
//     allowed (co_await lane.run(...) with a Holder alive). The reverse, taking a
//     gate inside a lane turn, is refused: acquire() and try_acquire() called in
//     a context that carries a lane's marker (StateLane::current() != nullptr)
//     throw LaneGateError naming the lane and the gate, instead of risking the
//     deadlock where each side waits for the other.
//
// Where a continuation resumes: an acquire that finds the gate free continues
// at once, without suspending. A waiter resumes in a step posted to its own
// fiber's scheduler, after the release that handed it the gate has returned; a
// release never resumes a waiter inline ([RT-4.2]).
//
// Thread safety: every member may be called from any thread or fiber; a Holder
// may be released on a different carrier or fiber than the one that acquired
// it (a fiber moves between carriers). Waiting requires a fiber (a plain thread
// that must wait gets FrameworkContextError). Preconditions: the Gate outlives
// every Holder and every waiter; destroying it while held or waited on stops
// the process with a message.
#pragma once

#include <coroutine>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "turnstile/detail/thread_annotations.hpp"
#include "turnstile/fiber.hpp"

namespace turnstile {

// A gate was acquired inside a lane turn (the forbidden direction). [LANE-4.6]
class LaneGateError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class Gate {
 public:
  // The gate's ownership: releases on destruction, or earlier with release().
  class Holder {
   public:
    Holder() noexcept = default;
    Holder(Holder&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Holder& operator=(Holder&& other) noexcept {
      if (this != &other) {
        release();
        gate_ = std::exchange(other.gate_, nullptr);
      }
      return *this;
    }
    Holder(const Holder&) = delete;
    Holder& operator=(const Holder&) = delete;
    ~Holder() { release(); }

    // Hands the gate back (to the oldest waiter, if any). Idempotent: the
    // ownership returns exactly once [LANE-4.5].
    void release() noexcept {
      if (Gate* g = std::exchange(gate_, nullptr)) g->release_one();
    }
    bool owns() const noexcept { return gate_ != nullptr; }
    explicit operator bool() const noexcept { return owns(); }
    const Gate* gate() const noexcept { return gate_; }

   private:
    friend class Gate;
    explicit Holder(Gate* g) noexcept : gate_(g) {}
    Gate* gate_ = nullptr;
  };

 private:
  struct Waiter {
    detail::FiberResume resume;
    Waiter* next = nullptr;
  };

 public:
  class AcquireAwaiter {
   public:
    explicit AcquireAwaiter(Gate& g) noexcept : gate_(g) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      detail::LockGuard lock(gate_.mu_);
      if (!gate_.held_) {
        gate_.held_ = true;  // free: take it and continue at once
        return false;
      }
      waiter_.resume.arm(h);  // throws FrameworkContextError off a fiber, before linking
      gate_.link(&waiter_);
      return true;  // release_one() hands us the gate and posts us
    }
    Holder await_resume() noexcept { return Holder(&gate_); }

   private:
    Gate& gate_;
    Waiter waiter_;
  };

  explicit Gate(std::string name);
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  ~Gate();

  const std::string& name() const noexcept { return name_; }

  // co_await gate.acquire(): a Holder once the gate is ours. Throws
  // LaneGateError at the call when called inside a lane turn [LANE-4.6].
  [[nodiscard]] AcquireAwaiter acquire();

  // The gate if it is free and nobody waits, else nullopt; never waits. Throws
  // LaneGateError inside a lane turn [LANE-4.6].
  std::optional<Holder> try_acquire();

  bool is_held() const;
  std::size_t waiting() const;

 private:
  void refuse_inside_turn(const char* what) const;
  void link(Waiter* w) noexcept TURNSTILE_REQUIRES(mu_);
  void release_one() noexcept;

  std::string name_;
  mutable detail::Mutex mu_;
  bool held_ TURNSTILE_GUARDED_BY(mu_) = false;
  Waiter* head_ TURNSTILE_GUARDED_BY(mu_) = nullptr;  // oldest waiter
  Waiter* tail_ TURNSTILE_GUARDED_BY(mu_) = nullptr;
  std::size_t waiting_ TURNSTILE_GUARDED_BY(mu_) = 0;
};

}  // namespace turnstile
