#pragma once
// Clang's thread-safety analysis (-Wthread-safety): which mutex guards which member, and which functions must
// be called with it held. GCC, which builds allot, ignores the attributes; scripts/thread_safety.sh compiles the
// files that use them with clang and fails on any warning (it runs in CI). libstdc++'s std::mutex carries no
// annotations, so guarded members use Mutex and MutexLock below, which are std::mutex and std::unique_lock with
// the attributes the analysis needs.
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define ALLOT_TSA(x) __attribute__((x))
#else
#define ALLOT_TSA(x)
#endif

#define CAPABILITY(x) ALLOT_TSA(capability(x))
#define SCOPED_CAPABILITY ALLOT_TSA(scoped_lockable)
#define GUARDED_BY(x) ALLOT_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) ALLOT_TSA(pt_guarded_by(x))
#define REQUIRES(...) ALLOT_TSA(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) ALLOT_TSA(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) ALLOT_TSA(acquire_capability(__VA_ARGS__))
#define RELEASE(...) ALLOT_TSA(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) ALLOT_TSA(try_acquire_capability(__VA_ARGS__))
#define RETURN_CAPABILITY(x) ALLOT_TSA(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS ALLOT_TSA(no_thread_safety_analysis)

namespace allot {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // For std::condition_variable, through MutexLock::native().
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::unique_lock underneath, so a std::condition_variable can wait on it). Waits
// are written as loops around wait()/wait_until() in the function that holds the lock, not as predicates in
// lambdas: the analysis does not see that a lambda runs with the lock held.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.native()) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  // Lets go of the mutex before the end of the scope (and takes it again).
  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }
  // For condition_variable::wait*, which releases and retakes the mutex inside the call.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace allot
