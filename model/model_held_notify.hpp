// model/model_held_notify.hpp: HeldNotifySync, RelacySync with one poster's
// notifies held open until its owner announces a delete.
//
// A core that wakes a waiter after releasing its mutex ([READY-I5],
// [INBOX-I2]) promises not to be destroyed under that wake-up. The window is
// tiny: a free scheduler puts the owner's return and delete between a
// poster's unlock and its notify too rarely to find. Instantiating the core
// with HeldNotifySync makes the notifies of thread `g_held_notify.poster`
// yield, up to 64 rounds, until `*g_held_notify.deleting` is set (the owner
// sets it just before its delete); after the bound the notify goes anyway, so
// a wake-up a waiter sleeps for is still made. The search then lets either
// the delete or the notify go first. Set g_held_notify in a suite's before()
// and reset it in after().
#pragma once

#include "relacy_sync.hpp"

namespace turnstile::model {

struct HeldNotify {
  unsigned poster = ~0u;                        // the thread whose notifies are held
  RelacySync::atomic<int>* deleting = nullptr;  // set by the owner just before its delete
};
inline HeldNotify g_held_notify;

struct HeldNotifySync : RelacySync {
  class condition_variable : public RelacySync::condition_variable {
   public:
    void notify_one(SourceLocation loc = SourceLocation::current()) {
      if (rl::thread_index() == g_held_notify.poster && g_held_notify.deleting != nullptr)
        for (int k = 0; k < 64 && g_held_notify.deleting->load(std::memory_order_relaxed) == 0; ++k)
          RelacySync::pause();
      RelacySync::condition_variable::notify_one(loc);
    }
  };
};

}  // namespace turnstile::model
