// sync_wait.cpp: the private event loop behind sync_wait(task).
#include "turnstile/sync_wait.hpp"

#include <string>
#include <vector>

#include "timer_queue.hpp"
#include "turnstile/detail/loop_inbox.hpp"

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
// those still armed when the last fiber finishes are dropped [RT-8.5]. Its
// inbox (detail/loop_inbox.hpp) wakes the loop's thread after releasing its
// lock, and outlives every such wake-up [INBOX-I2].
class PrivateLoop final : public Scheduler {
 public:
  ~PrivateLoop() override {
    timers_->stop();
    timers_->drop_all();
  }  // then ~LoopInbox waits for a wake-up still being made [INBOX-I2]

  void arm_timer(std::shared_ptr<TimerEntry> entry) override {
    if (!timers_->arm(std::move(entry))) return;
    inbox_.poke();  // the loop re-reads its deadline
  }

  void post(Runnable& item) override { inbox_.post(&item); }

  // Counts fibers started on this loop that have not finished [RT-6.1].
  void fiber_started() noexcept override { inbox_.fiber_started(); }
  void fiber_finished() noexcept override { inbox_.fiber_finished(); }

  // Runs items until every fiber started on the loop has finished [RT-6.1].
  void run() {
    std::vector<TimerEntryRef> due;
    for (;;) {
      timers_->take_due(Clock::now(), due);
      post_due(due);  // [RT-8.2] posted (here or elsewhere), run below
      Runnable* item = nullptr;
      switch (inbox_.take(item, timers_->next_deadline())) {
        case LoopInbox::Taken::done:
          return;  // nothing left to run
        case LoopInbox::Taken::poked:
          continue;  // a timer is due, or a new one armed
        case LoopInbox::Taken::item:
          break;
      }
      FrameworkContextScope in_item;
      item->run();
    }
  }

 private:
  using LoopInbox = BasicLoopInbox<StdSync, Runnable*>;
  LoopInbox inbox_;
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
