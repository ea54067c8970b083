// model/model_resume.hpp: the models' stand-in for "notify() posts the waiter to
// its scheduler and it resumes on its own carrier": one slot, a mutex and a
// condition variable, all Relacy types, so the hand-off is itself checked.
//
// Include after relacy_sync.hpp (it uses RelacySync and rl::condition_variable).
#pragma once

namespace turnstile::model {

class Resume {
 public:
  // The notifying side: marks the slot posted and wakes the waiter.
  void post() {
    mutex_.lock();
    posted_.store(true);
    cv_.notify_one($);
    mutex_.unlock();
  }
  // The resumed side: blocks (in the model) until post() has run.
  void wait() {
    mutex_.lock();
    while (!posted_.load()) cv_.wait(mutex_.native(), $);
    mutex_.unlock();
  }

 private:
  RelacySync::mutex mutex_;
  rl::condition_variable cv_;
  RelacySync::var<bool> posted_;
};

}  // namespace turnstile::model
