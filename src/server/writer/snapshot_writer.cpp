#include "server/writer/snapshot_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/thread_priority.h"
#include "server/writer/state_snapshot.h"

namespace allot::server {

void SnapshotWriter::finish() {
  if (thread_.joinable()) thread_.join();
}

void SnapshotWriter::maybe_write(ServerState& state, ViewPublisher& views) {
  if (!options_.use_snapshots) return;
  if (thread_.joinable()) {
    if (writing_) return;  // one at a time: the next is considered once this one is written
    thread_.join();
    if (const uint64_t seq = written_seq_.exchange(0)) {
      last_seq_ = std::max(last_seq_, seq);
      ++written_;
    }
  }
  if (state.last_seq <= last_seq_) return;
  if (state.last_seq < options_.snapshot_min_records) return;  // replaying a journal this short is as fast
  const auto now = std::chrono::steady_clock::now();
  if (last_at_ == std::chrono::steady_clock::time_point{}) last_at_ = now;
  const bool by_count = options_.snapshot_every_records > 0 && state.last_seq - last_seq_ >= options_.snapshot_every_records;
  const bool by_time = options_.snapshot_interval.count() > 0 && now - last_at_ >= options_.snapshot_interval;
  if (!by_count && !by_time) return;
  // The events in memory go with it, so that /v1/events after a restart still shows what led up to it; they are
  // taken here, with the state, so that both end at the same point.
  const uint64_t ring = options_.event_ring;
  auto page = events_.read(state.last_event > ring ? state.last_event - ring : 0, std::chrono::milliseconds(0), ring);
  std::shared_ptr<const ServerState> taken = views.current(state);
  last_at_ = now;
  writing_ = true;
  // The store serialises the snapshot's transaction with the journal's (store.h: safe from several threads).
  thread_ = std::thread([this, state = std::move(taken), events = std::move(page.events), raised = thread_raised()] {
    back_to_process_priority(raised, "the snapshot thread");  // not the writer's priority (thread_priority.h)
    const auto start = std::chrono::steady_clock::now();
    const std::string body = encode_state_snapshot(*state, events);
    if (auto st = store_.put_snapshot(state->last_seq, body); !st) {
      spdlog::error("cannot write a snapshot at journal record {}: {}", state->last_seq, st.error().message);
    } else {
      spdlog::info("snapshot at journal record {} written ({} bytes) in {:.3f} s, off the writer thread", state->last_seq,
                   body.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      written_seq_ = state->last_seq;
    }
    writing_ = false;
  });
}

}  // namespace allot::server
