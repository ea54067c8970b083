// parked_thread.hpp: telling that another thread of this process waits in the
// kernel, for the window tests whose promise is that a thread *waits* (a turn's
// settle waiting for the watchdog's report of it, [TURN-4.2]).
//
// A test that holds such a window open cannot wait for the waiting thread to
// say "I wait": it never gets past the wait until the test lets it. So the
// test records the thread's kernel id (this_thread_tid(), from the thread
// itself) and spins, without sleeping, until either the thread has done what a
// wrong implementation does next (`done()`) or the kernel shows it asleep
// (Linux: state 'S' in /proc/self/task/<tid>/stat). The code the thread runs
// between recording its id and the promised wait must not block (no lock
// another thread holds, no latch): then "asleep" means "in the promised
// wait". A correct implementation passes whatever the timing; the spin only
// decides how soon the test looks, and a wrong one is seen as `done()`.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace windows_test {

// The calling thread's kernel id.
inline pid_t this_thread_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// True when thread `tid` of this process sleeps in the kernel (a futex wait:
// a mutex, a condition variable, a latch).
inline bool is_asleep(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto name_end = line.rfind(')');  // "tid (name) S ...": the name may hold ')'
  return name_end != std::string::npos && name_end + 2 < line.size() && line[name_end + 2] == 'S';
}

// Spins until `done()` or until the thread whose id `tid` holds (0: not known
// yet) sleeps. Returns done() as last seen. A thread that never records its
// id (a wrong implementation that never lets it run) ends the spin after
// `give_up` with a test failure, not a hang; it orders nothing.
template <class Done>
bool wait_asleep_or(const std::atomic<pid_t>& tid, Done done,
                    std::chrono::seconds give_up = std::chrono::seconds(10)) {
  const auto until = std::chrono::steady_clock::now() + give_up;
  for (;;) {
    if (done()) return true;
    const pid_t t = tid.load(std::memory_order_acquire);  // pairs with the thread's release store
    if (t != 0 && is_asleep(t)) return done();
    if (std::chrono::steady_clock::now() > until) {
      ADD_FAILURE() << "the thread never got to the wait (tid " << t << ")";
      return done();
    }
    std::this_thread::yield();
  }
}

}  // namespace windows_test
