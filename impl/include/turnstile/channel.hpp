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
// Precondition: send/receive are awaited on a fiber (when they have to wait,
// [RT-4.4]); try_send/try_receive never wait and may be called from any
// thread. The Channel outlives every pending operation.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "turnstile/detail/thread_annotations.hpp"
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

  // The non-waiting variants: each does what its waiting form does when that
  // form would not have to wait, and reports "would wait" instead of waiting.
  //
  // try_send(value): hands `value` to a waiting receiver or buffers it and
  // returns true (moved from); returns false, `value` untouched, when the
  // buffer is full and no receiver waits (capacity 0: no receiver waits).
  // Throws ChannelClosedError on a closed channel, as send() does [RT-7.3].
  // Unlike StateLane::try_post, which returns false for a closed lane, false
  // here means only "full now": that is transient (retry, or co_await send()),
  // while closed is final, and a producer that took false for "full" would
  // retry a closed channel forever. try_post has no "full" (a lane's queue is
  // unbounded), so its false can only mean closed [LANE-7.4].
  bool try_send(T& value) {
    Node* released_receiver = nullptr;
    bool sent = false;
    {
      detail::LockGuard lock(mu_);
      if (closed_) throw ChannelClosedError("send on a closed Channel [RT-7.3]");
      sent = offer_locked(value, released_receiver);
    }
    if (released_receiver != nullptr) released_receiver->resume.post();  // [RT-4.2]
    return sent;
  }

  // try_receive(): the oldest value (buffered, or taken from a waiting sender,
  // which is then released) or nullopt when there is none now. It never
  // throws on a closed channel, as receive() does not: closed and drained is
  // nullopt too; tell the two apart with is_closed() [RT-7.3].
  std::optional<T> try_receive() {
    std::optional<T> out;
    Node* released_sender = nullptr;
    {
      detail::LockGuard lock(mu_);
      take_locked(out, released_sender);
    }
    if (released_sender != nullptr) released_sender->resume.post();  // [RT-4.2]
    return out;
  }

  void close() {
    std::deque<Node*> senders, receivers;
    {
      detail::LockGuard lock(mu_);
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
    detail::LockGuard lock(mu_);
    return closed_;
  }
  std::size_t size() const {
    detail::LockGuard lock(mu_);
    return buffer_.size();
  }

 private:
  struct Node {
    std::optional<T> slot;  // sender: the value to hand over; receiver: the value received
    bool closed = false;
    detail::FiberResume resume;
  };

  // With the lock held: hand `value` to a waiting receiver or buffer it.
  // Returns false when it must wait. `released`: a receiver that got the value,
  // for the caller to post once the lock is released ([RT-4.2]).
  bool offer_locked(T& value, Node*& released) TURNSTILE_REQUIRES(mu_) {
    if (!receivers_.empty()) {
      released = receivers_.front();
      receivers_.pop_front();
      released->slot.emplace(std::move(value));
      return true;
    }
    if (buffer_.size() < capacity_) {
      buffer_.push_back(std::move(value));
      return true;
    }
    return false;
  }

  // With the lock held: moves the oldest value into `out` (from the buffer,
  // refilling it from the oldest waiting sender, or, with nothing buffered,
  // straight from a waiting sender). Returns false when there is no value.
  // `released`: a sender to post once the lock is released.
  bool take_locked(std::optional<T>& out, Node*& released) TURNSTILE_REQUIRES(mu_) {
    if (!buffer_.empty()) {
      out.emplace(std::move(buffer_.front()));  // [RT-7.2] oldest first
      buffer_.pop_front();
      if (!senders_.empty()) {  // room made: the oldest waiting sender moves in
        released = senders_.front();
        senders_.pop_front();
        buffer_.push_back(std::move(*released->slot));
      }
      return true;
    }
    if (!senders_.empty()) {  // capacity 0: take straight from a sender
      released = senders_.front();
      senders_.pop_front();
      out.emplace(std::move(*released->slot));
      return true;
    }
    return false;
  }

  class SendAwaiter {
   public:
    SendAwaiter(Channel& ch, T v) : ch_(ch) { node_.slot.emplace(std::move(v)); }
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) {
      Node* released_receiver = nullptr;
      {
        detail::LockGuard lock(ch_.mu_);
        if (ch_.closed_) {
          node_.closed = true;
          return false;
        }
        if (!ch_.offer_locked(*node_.slot, released_receiver)) {
          node_.resume.arm(h);
          ch_.senders_.push_back(&node_);  // a receiver takes node_.slot and posts us
          return true;
        }
        node_.slot.reset();
      }
      if (released_receiver != nullptr) released_receiver->resume.post();  // [RT-4.2] outside the lock
      return false;
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
        detail::LockGuard lock(ch_.mu_);
        if (!ch_.take_locked(node_.slot, released_sender)) {
          if (ch_.closed_) return false;  // closed and drained: nullopt
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
  mutable detail::Mutex mu_;
  std::deque<T> buffer_ TURNSTILE_GUARDED_BY(mu_);
  std::deque<Node*> senders_ TURNSTILE_GUARDED_BY(mu_);    // waiting senders, oldest first
  std::deque<Node*> receivers_ TURNSTILE_GUARDED_BY(mu_);  // waiting receivers, oldest first
  bool closed_ TURNSTILE_GUARDED_BY(mu_) = false;
};

}  // namespace turnstile
