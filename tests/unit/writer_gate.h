#pragma once
// A gate for the writer's test hook (ServerOptions::before_batch): while held, the batch that has just started
// waits in pass(), so a test can check what is answered while the writer is busy (reads, heartbeats).
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace allot::server::test {

class WriterGate {
 public:
  // The hook: returns at once unless held; then waits until released.
  void pass() {
    std::unique_lock lock(mu_);
    if (!hold_) return;
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold_; });
    held_ = false;
  }
  void hold() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void release() {
    std::lock_guard lock(mu_);
    hold_ = false;
    cv_.notify_all();
  }
  // Waits until the writer is held in a batch (bounded: the test's ctest timeout).
  void wait_held() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return held_; });
  }
  // The same with a bound of its own, for a hook that a change elsewhere could stop being reached: false when
  // nothing was held within `limit` (the test then fails with a message instead of hanging).
  bool wait_held_for(std::chrono::milliseconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return held_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  bool held_ = false;
};

}  // namespace allot::server::test
