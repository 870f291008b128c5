#include "server/writer/event_log.h"

namespace allot::server {

void EventLog::publish(std::vector<Event> events) {
  if (events.empty()) return;
  {
    MutexLock lock(mu_);
    for (auto& e : events) {
      last_ = e.seq;
      ring_.push_back(std::move(e));
    }
    while (ring_.size() > capacity_) ring_.pop_front();
  }
  cv_.notify_all();
}

EventLog::Page EventLog::read(uint64_t since, std::chrono::milliseconds wait, size_t limit) {
  MutexLock lock(mu_);
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!stopping_ && last_ <= since)
    if (cv_.wait_until(lock.native(), until) == std::cv_status::timeout) break;
  Page page;
  page.next = since;
  if (!ring_.empty() && ring_.front().seq > since + 1 && last_ > since) page.truncated = true;
  // Numbers are consecutive in the ring, so the first event after `since` is found by arithmetic.
  size_t first = 0;
  if (!ring_.empty() && since >= ring_.front().seq) first = static_cast<size_t>(since - ring_.front().seq + 1);
  for (size_t i = first; i < ring_.size() && page.events.size() < limit; ++i) {
    page.events.push_back(ring_[i]);
    page.next = ring_[i].seq;
  }
  return page;
}

uint64_t EventLog::last() {
  MutexLock lock(mu_);
  return last_;
}

void EventLog::shutdown() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

}  // namespace allot::server
