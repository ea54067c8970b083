// sync_wait.cpp: the private event loop behind sync_wait(task).
#include "turnstile/sync_wait.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>

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
// thread that called sync_wait, in the order posted.
class PrivateLoop final : public Scheduler {
 public:
  void post(Runnable& item) override {
    std::lock_guard lock(mu_);
    ready_.push_back(&item);
    // Under the lock: once the loop sees this item it may run the last fiber to
    // its end and destroy the loop (cv_ included) before an unlocked notify ran.
    cv_.notify_one();
  }

  // Counts fibers started on this loop that have not finished.
  void fiber_started() noexcept override {
    std::lock_guard lock(mu_);
    ++live_fibers_;
  }
  void fiber_finished() noexcept override {
    std::lock_guard lock(mu_);
    --live_fibers_;
    cv_.notify_one();  // under the lock: once it sees zero the loop may be destroyed
  }

  // Runs items until every fiber started on the loop has finished.
  void run() {
    for (;;) {
      Runnable* item = nullptr;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return !ready_.empty() || live_fibers_ == 0; });
        if (ready_.empty()) return;  // live_fibers_ == 0 and nothing left to run
        item = ready_.front();
        ready_.pop_front();
      }
      FrameworkContextScope in_item;
      item->run();
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Runnable*> ready_;     // guarded by mu_
  std::size_t live_fibers_ = 0;     // guarded by mu_
};

}  // namespace

void run_on_private_loop(Task<> task) {
  PrivateLoop loop;
  // The calling thread's bindings become the fiber's starting context.
  start_fiber(loop, std::move(task), current_context(), [](const std::exception_ptr&) noexcept {});
  loop.run();
}

}  // namespace turnstile::detail
