#pragma once
// The event stream behind /v1/events: the last N events in memory, numbered by the writer, published only
// once the batch that caused them is durable, with long-polling readers.
//
// Thread-safety: all members are safe to call from any thread.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "server/writer/server_state.h"
#include "common/thread_annotations.h"

namespace allot::server {

class EventLog {
 public:
  explicit EventLog(size_t capacity) : capacity_(capacity) {}

  void publish(std::vector<Event> events);

  struct Page {
    std::vector<Event> events;
    uint64_t next = 0;       // pass as `since` to read on
    bool truncated = false;  // events after `since` were dropped from memory before they were read
  };
  // Events numbered after `since`, at most `limit`; when there are none yet, waits up to `wait` for one.
  Page read(uint64_t since, std::chrono::milliseconds wait, size_t limit = 1000);

  // The number of the last event published (0 before the first): a reader that wants only what comes next, or
  // the last few, starts from it.
  uint64_t last();

  // Wakes every waiting reader (the server is stopping).
  void shutdown();

 private:
  const size_t capacity_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> ring_ GUARDED_BY(mu_);
  uint64_t last_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace allot::server
