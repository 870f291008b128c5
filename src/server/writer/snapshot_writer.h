#pragma once
// The leader's snapshots of its state (docs/deployment.md, "Snapshots"; the format: state_snapshot.h): one is
// written when snapshot_every_records records or snapshot_interval have passed since the last one, once the
// journal holds snapshot_min_records (options.h). The state is taken on the writer's thread (the read view when it
// is current, else a copy, which then serves as the view too); encoding and writing it take time in proportion to
// the state (10,000 jobs: about a second) and run on a thread of their own, one snapshot at a time, so that no
// batch waits for them. A failed snapshot loses nothing (the journal holds every change) and is tried again at
// the next batch.
//
// Threads: writing() and written() from any thread; everything else from the writer's thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "server/writer/event_log.h"
#include "server/options.h"
#include "server/writer/view_publisher.h"
#include "store/store.h"

namespace allot::server {

class SnapshotWriter {
 public:
  SnapshotWriter(const ServerOptions& options, store::Store& store, EventLog& events)
      : options_(options), store_(store), events_(events) {}
  ~SnapshotWriter() { finish(); }
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // The snapshot a replay of the journal started from: the next one is due counting from it.
  void note_read(uint64_t seq) { last_seq_ = seq; }
  // After a durable batch of the leader, once it was answered: starts writing a snapshot of `state` when one is
  // due and none is being written.
  void maybe_write(ServerState& state, ViewPublisher& views);
  // Waits for the snapshot being written, if any: it is finished, not cut off.
  void finish();

  bool writing() const { return writing_; }
  uint64_t written() const { return written_; }  // since this server started, counted once the writer took note

 private:
  const ServerOptions& options_;
  store::Store& store_;
  EventLog& events_;
  uint64_t last_seq_ = 0;  // the journal record of the newest snapshot read or written
  std::chrono::steady_clock::time_point last_at_{};
  // The snapshot being written: the thread, whether it still runs, and the journal record of the one it wrote (0
  // while none or when the write failed), which the writer takes when it joins the thread.
  std::thread thread_;
  std::atomic<bool> writing_{false};
  std::atomic<uint64_t> written_seq_{0};
  std::atomic<uint64_t> written_{0};
};

}  // namespace allot::server
