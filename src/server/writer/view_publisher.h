#pragma once
// The published read view of the writer's state (writer.h): an immutable copy, shared as
// std::shared_ptr<const ServerState>, from which read-only requests are answered on their own threads, never in
// the writer's batch: so neither the time it takes to render (a page of 5,000 jobs: tens to hundreds of
// milliseconds) nor the number of readers costs the writer anything but the copy.
//
// A read needs a view at least as new as every change answered before it arrived (read-your-writes): the writer
// counts the batches that changed the state (`changes_`) before it answers them, and a read that finds the view
// older than that count asks for a fresh one and waits for it. The writer publishes one after a batch, before
// answering it, when a read has asked since the last copy (and wakes for it when idle). The copy shares with the
// view before it what the writer has not changed since (the job table's chunks, the per-job maps' shards, the
// audit entries: server_state.h, view_of), so it costs what changed plus the state's smaller tables (50,000
// queued jobs: a few milliseconds; a whole copy took tens to hundreds). Should it be costly all the same, then,
// as with scheduler passes, a copy that took d is followed by the next only once the writer has spent
// kViewSpacing * d on other work: under a stream of reads the writer spends at most about 1 / (1 + kViewSpacing)
// of its time copying, one copy serves every read waiting for it, and heartbeats and submissions are not held
// back by it. A copy that takes under a millisecond is never held back.
//
// Threads: fresh() and stats() from any thread; everything else from the writer's thread, which alone replaces
// the view. The view and the counts are guarded by mu_, never held while a copy is made.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/writer/server_state.h"
#include "common/thread_annotations.h"

namespace allot::server {

class ViewPublisher {
 public:
  // Reads answered from the view, and views published, so far (for tests and benchmarks).
  struct Stats {
    uint64_t reads_from_view = 0;
    uint64_t views_published = 0;
    double copy_seconds = 0;  // the writer's time spent copying the state for views
    double max_copy_seconds = 0;
    // The job table's chunks the views copied, and those they shared with the view before (server_state.h,
    // view_of): a view costs the chunks changed since the last one.
    uint64_t chunks_copied = 0;
    uint64_t chunks_shared = 0;
  };
  // A read's view, or why there is none (the reader answers 503 with it).
  struct Fresh {
    std::shared_ptr<const ServerState> view;
    std::string unavailable;
  };

  // A view that shows every change counted before the call; when the current one is older, `wake_writer` asks the
  // writer for a fresh one (false: the writer stops) and the call waits for it up to `timeout`. Any thread.
  Fresh fresh(const std::function<bool()>& wake_writer, std::chrono::milliseconds timeout) EXCLUDES(mu_);
  Stats stats() const EXCLUDES(mu_);

  // The rest from the writer's thread.
  // Whether a read waits for a view the writer has not published yet.
  bool wanted() const EXCLUDES(mu_);
  // No copy is made before then (the last one was costly); the idle writer wakes for it when wanted().
  std::chrono::steady_clock::time_point next_copy() const { return next_copy_; }
  // Readers that wait for a fresh view are answered 503 with `why` (non-empty), or wait again (empty).
  void close(std::string why) EXCLUDES(mu_);
  // After a batch, before its answers go out: counts a change of `state` (when `changed`) and, when a read asked
  // for a view and the spacing allows, publishes a copy of it. Never when `publishable` is false (a state that
  // waits for a rebuild holds changes nobody acknowledged).
  void publish(bool changed, ServerState& state, bool publishable) EXCLUDES(mu_);
  // The view when it shows `state` as it is now, else a copy of it, published as the view (for a snapshot). After
  // publish() for the batch.
  std::shared_ptr<const ServerState> current(ServerState& state) EXCLUDES(mu_);

 private:
  // Whether the view (if any) misses some of the first `changes` changes.
  bool older_than(uint64_t changes) const REQUIRES(mu_) { return !view_ || view_changes_ < changes; }
  // Makes `fresh` the view, showing the changes counted up to `generation`; drops the one it replaces.
  void install(std::shared_ptr<const ServerState> fresh, uint64_t generation, const JobTable::ViewCost& cost,
               double copy_seconds) EXCLUDES(mu_);

  mutable Mutex mu_;
  std::condition_variable published_;  // woken at each publish and when the views are closed
  std::shared_ptr<const ServerState> view_ GUARDED_BY(mu_);
  uint64_t changes_ GUARDED_BY(mu_) = 0;       // batches that changed the state
  uint64_t view_changes_ GUARDED_BY(mu_) = 0;  // the view shows every change counted up to this
  bool wanted_ GUARDED_BY(mu_) = false;        // a read waits for a fresher view
  std::string closed_ GUARDED_BY(mu_);         // why waiting readers get 503; empty: open
  Stats stats_ GUARDED_BY(mu_);
  // The writer's thread only: the view it last published (the same as view_, read without the lock to share
  // the chunks it has not changed since), and when it may copy next.
  std::shared_ptr<const ServerState> last_;
  std::chrono::steady_clock::time_point next_copy_{};
};

}  // namespace allot::server
