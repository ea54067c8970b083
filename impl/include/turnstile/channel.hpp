// turnstile/channel.hpp: Channel<T>, a bounded multi-producer multi-consumer
// queue between fibers.
//
// Guarantees
//   - Every value sent is received exactly once, unless the channel is closed
//     with values still buffered, in which case receivers still drain them
//     ([RT-7.1]). Values of one sender arrive in the order it sent them
//     ([RT-7.2]). Senders and receivers that wait are served oldest first.
//   - capacity() values are buffered; a send beyond that waits for a receiver.
//     Capacity 0 is a rendezvous: send waits until a receiver takes the value.
//   - close() refuses new sends (ChannelClosedError), wakes every waiting
//     sender with ChannelClosedError and, once the buffer is drained, makes
//     receive() return an empty optional ([RT-7.3]). Idempotent.
//   - A Channel carries values only, never the sender's fiber context: a
//     receiver sees its own bindings ([FL-3.4]); carry a FiberContext in the
//     value to hand bindings over explicitly.
//
// Where a continuation resumes: a waiting sender or receiver resumes in a step
// posted to its own fiber's scheduler, after the call that released it returned
// ([RT-4.2]); a send or receive that need not wait continues at once.
//
// Thread safety: all members may be called concurrently from any fibers.
// Precondition: send/receive are awaited on a fiber; the Channel outlives every
// pending operation.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "turnstile/errors.hpp"
#include "turnstile/fiber.hpp"

namespace turnstile {

template <class T>
class Channel {
 public:
  explicit Channel(std::size_t capacity) : capacity_(capacity) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  std::size_t capacity() const noexcept { return capacity_; }

  // co_await ch.send(v): enqueue v, waiting for room if the buffer is full.
  [[nodiscard]] auto send(T value) { return SendAwaiter(*this, std::move(value)); }
  // co_await ch.receive(): the oldest value, or nullopt once closed and drained.
  [[nodiscard]] auto receive() { return ReceiveAwaiter(*this); }

  // Non-waiting variants: false / nullopt when they would have to wait.
  bool try_send(T& value) {
    std::unique_lock lock(mu_);
    if (closed_) throw ChannelClosedError("send on a closed Channel [RT-7.3]");
    return offer_locked(value, lock);
  }

  void close() {
    std::deque<Node*> senders, receivers;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      senders.swap(senders_);
      // Receivers wait only while the buffer is empty, so every waiting one
      // gets nullopt.
      receivers.swap(receivers_);
    }
    for (Node* s : senders) {
      s->closed = true;
      s->resume.post();
    }
    for (Node* r : receivers) r->resume.post();
  }

  bool is_closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return buffer_.size();
  }

 private:
  struct Node {
    std::optional<T> slot;  // sender: the value to hand over; receiver: the value received
    bool closed = false;
    detail::FiberResume resume;
  };

  // With the lock held: hand `value` to a waiting receiver or buffer it.
  // Returns false when it must wait. Posts (after unlock) any released receiver.
  bool offer_locked(T& value, std::unique_lock<std::mutex>& lock) {
    if (!receivers_.empty()) {
      Node* r = receivers_.front();
      receivers_.pop_front();
      r->slot.emplace(std::move(value));
      lock.unlock();
      r->resume.post();  // [RT-4.2] after the state change, outside the lock
      return true;
    }
    if (buffer_.size() < capacity_) {
      buffer_.push_back(std::move(value));
      return true;
    }
    return false;
  }

  class SendAwaiter {
   public:
    SendAwaiter(Channel& ch, T v) : ch_(ch) { node_.slot.emplace(std::move(v)); }
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      std::unique_lock lock(ch_.mu_);
      if (ch_.closed_) {
        node_.closed = true;
        return false;
      }
      if (ch_.offer_locked(*node_.slot, lock)) {
        node_.slot.reset();
        return false;
      }
      node_.resume.arm(h);
      ch_.senders_.push_back(&node_);  // a receiver takes node_.slot and posts us
      return true;
    }
    void await_resume() {
      if (node_.closed) throw ChannelClosedError("send on a closed Channel [RT-7.3]");
    }

   private:
    Channel& ch_;
    Node node_;
  };

  class ReceiveAwaiter {
   public:
    explicit ReceiveAwaiter(Channel& ch) : ch_(ch) {}
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      Node* released_sender = nullptr;
      {
        std::lock_guard lock(ch_.mu_);
        if (!ch_.buffer_.empty()) {
#if defined(TURNSTILE_MUTANT_CHANNEL_TAKE_NEWEST)
          node_.slot.emplace(std::move(ch_.buffer_.back()));  // mutant: breaks [RT-7.2]
          ch_.buffer_.pop_back();
#else
          node_.slot.emplace(std::move(ch_.buffer_.front()));  // [RT-7.2] oldest first
          ch_.buffer_.pop_front();
#endif
          if (!ch_.senders_.empty()) {  // room made: the oldest waiting sender moves in
            released_sender = ch_.senders_.front();
            ch_.senders_.pop_front();
            ch_.buffer_.push_back(std::move(*released_sender->slot));
          }
        } else if (!ch_.senders_.empty()) {  // capacity 0: take straight from a sender
          released_sender = ch_.senders_.front();
          ch_.senders_.pop_front();
          node_.slot.emplace(std::move(*released_sender->slot));
        } else if (ch_.closed_) {
          return false;  // closed and drained: nullopt
        } else {
          node_.resume.arm(h);
          ch_.receivers_.push_back(&node_);
          return true;
        }
      }
      if (released_sender != nullptr) released_sender->resume.post();  // [RT-4.2]
      return false;
    }
    std::optional<T> await_resume() { return std::move(node_.slot); }

   private:
    Channel& ch_;
    Node node_;
  };

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<T> buffer_;         // guarded by mu_
  std::deque<Node*> senders_;    // guarded by mu_: waiting senders, oldest first
  std::deque<Node*> receivers_;  // guarded by mu_: waiting receivers, oldest first
  bool closed_ = false;          // guarded by mu_
};

}  // namespace turnstile
