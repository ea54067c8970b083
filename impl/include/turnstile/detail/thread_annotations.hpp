// turnstile/detail/thread_annotations.hpp: clang thread-safety annotations for
// the library's own mutexes (internal; not part of the public API).
//
// What it guarantees: under clang with -Wthread-safety (the project's clang
// presets turn it on, and -Werror makes it a build failure), every member
// declared TURNSTILE_GUARDED_BY(mu_) is read or written only while `mu_` is held,
// and every function declared TURNSTILE_REQUIRES(mu_) is called only with it
// held. The check is static and per function: it does not follow a lock handed
// between functions through a std::unique_lock, which is why the condition
// variable waits use UniqueLock below. Under GCC the macros expand to nothing.
//
// Mutex is std::mutex with the capability attribute (libstdc++'s is not
// annotated); LockGuard and UniqueLock are its scoped holders. UniqueLock hands
// its std::unique_lock to std::condition_variable::wait, which releases and
// retakes the mutex inside the call: to the analysis the lock is held across the
// wait, which is what the code after the wait may assume.
//
// Thread safety: as std::mutex. Annotated: every mutex of the library. Scope,
// the trace sink, Gate, Channel, the schedulers, the timer queue, sync_wait's
// loop, Host, StateLane's error handler, Activation's snapshot and running
// turns (a function that expects the lock held says TURNSTILE_REQUIRES), and
// the core templates over Sync (lane_core.hpp, turn_chain.hpp, wait_graph.hpp),
// whose `Sync::mutex` is a capability in both builds. Members of a nested
// record guarded by the outer object's mutex (a wait-graph edge, an
// activation's RunningTurn) cannot be named by the attribute: the functions
// that touch them require the mutex instead. checks/static/run-thread-safety
// runs the analysis under any build and proves it catches a lock taken out.
#pragma once

#include <mutex>

#if defined(__clang__)
#define TURNSTILE_TSA(x) __attribute__((x))
#else
#define TURNSTILE_TSA(x)
#endif

#define TURNSTILE_CAPABILITY(name) TURNSTILE_TSA(capability(name))
#define TURNSTILE_SCOPED_CAPABILITY TURNSTILE_TSA(scoped_lockable)
#define TURNSTILE_GUARDED_BY(mu) TURNSTILE_TSA(guarded_by(mu))
#define TURNSTILE_PT_GUARDED_BY(mu) TURNSTILE_TSA(pt_guarded_by(mu))
#define TURNSTILE_REQUIRES(...) TURNSTILE_TSA(requires_capability(__VA_ARGS__))
#define TURNSTILE_ACQUIRE(...) TURNSTILE_TSA(acquire_capability(__VA_ARGS__))
#define TURNSTILE_TRY_ACQUIRE(...) TURNSTILE_TSA(try_acquire_capability(__VA_ARGS__))
#define TURNSTILE_RELEASE(...) TURNSTILE_TSA(release_capability(__VA_ARGS__))
#define TURNSTILE_EXCLUDES(...) TURNSTILE_TSA(locks_excluded(__VA_ARGS__))
#define TURNSTILE_RETURN_CAPABILITY(x) TURNSTILE_TSA(lock_returned(x))
#define TURNSTILE_NO_THREAD_SAFETY_ANALYSIS TURNSTILE_TSA(no_thread_safety_analysis)

namespace turnstile::detail {

// std::mutex as a capability the analysis tracks.
class TURNSTILE_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() TURNSTILE_ACQUIRE() { mu_.lock(); }
  void unlock() TURNSTILE_RELEASE() { mu_.unlock(); }
  bool try_lock() TURNSTILE_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // For std::unique_lock / condition variables only (through UniqueLock).
  std::mutex& native() TURNSTILE_RETURN_CAPABILITY(this) { return mu_; }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope (std::lock_guard), for any annotated BasicLockable:
// Mutex, and the `Sync::mutex` of the core templates (StdSync's is Mutex, the
// model's RelacySync::mutex carries the same capability attribute).
template <class M>
class TURNSTILE_SCOPED_CAPABILITY BasicLockGuard {
 public:
  explicit BasicLockGuard(M& mu) TURNSTILE_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~BasicLockGuard() TURNSTILE_RELEASE() { mu_.unlock(); }
  BasicLockGuard(const BasicLockGuard&) = delete;
  BasicLockGuard& operator=(const BasicLockGuard&) = delete;

 private:
  M& mu_;
};
using LockGuard = BasicLockGuard<Mutex>;

// Holds `mu` for its scope, and lends a std::unique_lock to a condition
// variable's wait (which releases and retakes it inside the call).
class TURNSTILE_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) TURNSTILE_ACQUIRE(mu) : lock_(mu.native()) {}
  ~UniqueLock() TURNSTILE_RELEASE() = default;
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  // Releases and retakes the mutex inside the holder's scope (the analysis
  // follows both: a guarded member between them is an error).
  void unlock() TURNSTILE_RELEASE() { lock_.unlock(); }
  void lock() TURNSTILE_ACQUIRE() { lock_.lock(); }

  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace turnstile::detail
