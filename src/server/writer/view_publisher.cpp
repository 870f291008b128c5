#include "server/writer/view_publisher.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <utility>

#include "server/thread_priority.h"

namespace allot::server {

namespace {
constexpr auto kCheapView = std::chrono::milliseconds(1);  // copies shorter than this are made after every batch
constexpr int kViewSpacing = 3;                            // else the writer works 3 times as long between copies

// Drops a view the writer replaced. Destroying a copy of a large state can take as long as making it, so when no
// reader holds it any more (this reference is the last) it is destroyed on a thread of its own, not on the
// writer's; a reader still holding it destroys it when done.
void drop_view(std::shared_ptr<const ServerState> old) {
  if (!old || old.use_count() > 1) return;
  try {
    std::thread([old = std::move(old), raised = thread_raised()]() mutable {
      back_to_process_priority(raised, "the thread that drops a view");  // not the writer's priority
      old.reset();
    }).detach();
  } catch (const std::system_error&) {
    // No thread to be had: the view went with the failed thread's function, destroyed here on the writer's.
  }
}
}  // namespace

ViewPublisher::Fresh ViewPublisher::fresh(const std::function<bool()>& wake_writer, std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  // Every batch answered before now has been counted: publish() runs before a batch's answers go out.
  const uint64_t needed = changes_;
  if (older_than(needed)) {
    if (!closed_.empty()) return {nullptr, closed_};
    wanted_ = true;
    lock.unlock();
    if (!wake_writer()) return {nullptr, "the server is stopping"};
    lock.lock();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool timed_out = false;
    while (older_than(needed) && closed_.empty() && !timed_out)
      timed_out = published_.wait_until(lock.native(), deadline) == std::cv_status::timeout;
    if (older_than(needed))
      return {nullptr, closed_.empty() ? "no view of the state was published within the request timeout; retry" : closed_};
  }
  ++stats_.reads_from_view;
  return {view_, ""};
}

ViewPublisher::Stats ViewPublisher::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

bool ViewPublisher::wanted() const {
  MutexLock lock(mu_);
  return wanted_ && view_changes_ != changes_;
}

void ViewPublisher::close(std::string why) {
  {
    MutexLock lock(mu_);
    closed_ = std::move(why);
  }
  published_.notify_all();
}

void ViewPublisher::publish(bool changed, ServerState& state, bool publishable) {
  bool want;
  uint64_t generation;
  {
    MutexLock lock(mu_);
    if (changed) ++changes_;
    generation = changes_;
    want = wanted_ && view_changes_ != changes_;
  }
  if (!want || !publishable) return;
  const auto start = std::chrono::steady_clock::now();
  if (start < next_copy_) return;  // the last copy was costly: readers wait until then (the writer wakes for it)
  // The copy is made outside the lock: readers meanwhile find the view stale and wait for this one.
  JobTable::ViewCost cost;
  auto copy = view_of(state, last_.get(), &cost);
  const auto end = std::chrono::steady_clock::now();
  next_copy_ = end - start < kCheapView ? end : end + kViewSpacing * (end - start);
  {
    MutexLock lock(mu_);
    wanted_ = false;
  }
  install(std::move(copy), generation, cost, std::chrono::duration<double>(end - start).count());
}

std::shared_ptr<const ServerState> ViewPublisher::current(ServerState& state) {
  uint64_t generation;
  {
    MutexLock lock(mu_);
    if (view_ && view_changes_ == changes_) return view_;
    generation = changes_;
  }
  JobTable::ViewCost cost;
  std::shared_ptr<const ServerState> copy = view_of(state, last_.get(), &cost);
  install(copy, generation, cost, 0);
  return copy;
}

void ViewPublisher::install(std::shared_ptr<const ServerState> fresh, uint64_t generation, const JobTable::ViewCost& cost,
                            double copy_seconds) {
  std::shared_ptr<const ServerState> old;
  {
    MutexLock lock(mu_);
    old = std::exchange(view_, fresh);
    view_changes_ = generation;
    ++stats_.views_published;
    if (copy_seconds > 0) {
      stats_.copy_seconds += copy_seconds;
      stats_.max_copy_seconds = std::max(stats_.max_copy_seconds, copy_seconds);
    }
    stats_.chunks_copied += cost.chunks_copied;
    stats_.chunks_shared += cost.chunks_shared;
  }
  last_ = std::move(fresh);  // lets go of the writer's second reference to the old view
  published_.notify_all();
  drop_view(std::move(old));
}

}  // namespace allot::server
