// sync_wait.cpp: the private event loop behind sync_wait(task).
#include "turnstile/sync_wait.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "timer_queue.hpp"

namespace turnstile::detail {

void require_plain_thread(const char* what) {
  if (in_framework_context() || current_fiber() != nullptr)
    throw FrameworkContextError(std::string(what) +
                                " called from inside a fiber, lane turn or posted item; a "
                                "blocking wait there could deadlock its carrier. Use co_await "
                                "instead [RT-6.2]");
}

namespace {

// A scheduler owned by one sync_wait call. Items may be posted from any thread
// (a ThreadPool completing work the loop's fibers wait for); they run on the
// thread that called sync_wait, in the order posted. Its timers are its own
// queue, fired by the loop itself while it waits with a deadline [RT-8.2];
// those still armed when the last fiber finishes are dropped [RT-8.5].
class PrivateLoop final : public Scheduler {
 public:
  ~PrivateLoop() override {
    timers_->stop();
    timers_->drop_all();
  }

  void arm_timer(std::shared_ptr<TimerEntry> entry) override {
    if (!timers_->arm(std::move(entry))) return;
    LockGuard lock(mu_);
    timers_changed_ = true;  // the loop re-reads its deadline
    cv_.notify_one();
  }

  void post(Runnable& item) override {
    LockGuard lock(mu_);
    ready_.push_back(&item);
    // Under the lock: once the loop sees this item it may run the last fiber to
    // its end and destroy the loop (cv_ included) before an unlocked notify ran.
    cv_.notify_one();
  }

  // Counts fibers started on this loop that have not finished.
  void fiber_started() noexcept override {
    LockGuard lock(mu_);
    ++live_fibers_;
  }
  void fiber_finished() noexcept override {
    LockGuard lock(mu_);
    --live_fibers_;
    cv_.notify_one();  // under the lock: once it sees zero the loop may be destroyed
  }

  // Runs items until every fiber started on the loop has finished.
  void run() {
    std::vector<TimerEntryRef> due;
    for (;;) {
      timers_->take_due(Clock::now(), due);
      post_due(due);  // [RT-8.2] posted (here or elsewhere), run below
      Runnable* item = nullptr;
      {
        UniqueLock lock(mu_);
        const auto next = timers_->next_deadline();
        while (ready_.empty() && live_fibers_ != 0 && !timers_changed_) {  // until woken
          if (!next) {
            cv_.wait(lock.native());
          } else if (cv_.wait_until(lock.native(), *next) == std::cv_status::timeout) {
            break;  // a timer is due
          }
        }
        timers_changed_ = false;
        if (ready_.empty()) {
          if (live_fibers_ == 0) return;  // nothing left to run
          continue;                       // a timer is due, or a new one armed
        }
        item = ready_.front();
        ready_.pop_front();
      }
      FrameworkContextScope in_item;
      item->run();
    }
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Runnable*> ready_ TURNSTILE_GUARDED_BY(mu_);
  std::size_t live_fibers_ TURNSTILE_GUARDED_BY(mu_) = 0;
  bool timers_changed_ TURNSTILE_GUARDED_BY(mu_) = false;
  std::shared_ptr<TimerQueue> timers_ = std::make_shared<TimerQueue>();
};

}  // namespace

void run_on_private_loop(Task<> task) {
  PrivateLoop loop;
  // The calling thread's bindings become the fiber's starting context.
  start_fiber(loop, std::move(task), current_context(), [](const std::exception_ptr&) noexcept {});
  loop.run();
}

}  // namespace turnstile::detail
