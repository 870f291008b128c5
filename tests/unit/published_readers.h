#pragma once
// For the tests of copy-on-write structures: two reader threads keep taking the newest published copy of a T and
// count what they find torn in it, while the test's own thread (the owner) changes its live state and publishes
// new copies, as the server's writer publishes read views.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace allot::test_support {

template <class T>
class PublishedReaders {
 public:
  // `torn_in(copy)`: how many inconsistencies one read of a copy finds (0 when it is whole).
  PublishedReaders(std::shared_ptr<const T> first, std::function<int(const T&)> torn_in) : published_(std::move(first)) {
    for (int r = 0; r < 2; ++r)
      readers_.emplace_back([this, torn_in] {
        while (!stop_) {
          std::shared_ptr<const T> copy;
          {
            std::lock_guard lock(mu_);
            copy = published_;
          }
          torn_ += torn_in(*copy);
        }
      });
  }
  ~PublishedReaders() { stop(); }
  // The copy published last. Owner's thread only: it alone publishes.
  const T* latest() const { return published_.get(); }
  void publish(std::shared_ptr<const T> next) {
    std::lock_guard lock(mu_);
    published_ = std::move(next);
  }
  // Stops the readers and returns how many torn reads they counted.
  int stop() {
    stop_ = true;
    for (auto& t : readers_)
      if (t.joinable()) t.join();
    return torn_.load();
  }

 private:
  std::mutex mu_;
  std::shared_ptr<const T> published_;  // guarded by mu_ (read unlocked by the owner, its only writer)
  std::atomic<bool> stop_{false};
  std::atomic<int> torn_{0};
  std::vector<std::thread> readers_;
};

}  // namespace allot::test_support
