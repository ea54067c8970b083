// timer_queue.cpp: the product's instantiation of the timer core
// (detail/timer_core.hpp) and the serving thread of a queue that has its own.
#include "timer_queue.hpp"

#include <utility>

namespace turnstile::detail {

template struct BasicTimerEntry<StdSync>;
template class BasicTimerQueue<StdSync>;

bool TimerQueue::arm(TimerEntryRef e) {
  // Before the entry goes in, so that a start that throws arms nothing. Relaxed:
  // the flag guards no data (server_ is touched only under server_mu_, where
  // start_server() reads the flag again); a stale false costs that lock once.
  if (own_thread_ && !server_settled_.load(std::memory_order_relaxed)) start_server();
  return Base::arm(std::move(e));
}

void TimerQueue::start_server() {
  LockGuard lock(server_mu_);
  if (server_settled_.load(std::memory_order_relaxed)) return;  // stored under server_mu_ only
  if (!server_closed_) {
    std::shared_ptr<Base> self = weak_from_this().lock();
    if (self == nullptr) return;  // no longer owned: an arm from a callback ~TimerQueue drops
    // [RT-8.2] the one thread that serves this queue; it only posts. Started
    // before its first entry is armed, it usually finds that entry already
    // there and sleeps once, until its deadline.
    server_ = std::thread([q = std::move(self)] {
      std::vector<TimerEntryRef> due;
      while (q->wait_due(due)) post_due(due);
    });
  }
  server_settled_.store(true, std::memory_order_relaxed);  // read by arm() and here
}

void TimerQueue::join_server() {
  std::thread server;
  {
    LockGuard lock(server_mu_);
    server_closed_ = true;  // a later start_server() starts nothing
    server_settled_.store(true, std::memory_order_relaxed);  // read by arm() and start_server()
    server = std::move(server_);
  }
  if (server.joinable()) server.join();  // wait_due() returns false once stop() was called
}

}  // namespace turnstile::detail
