#pragma once
// Which nodes the writer's per-batch rounds (lifecycle_tick, Writer::time_out_nodes) look at.
//
// Both rounds run after every batch, and on most batches nothing about most nodes lets them act: the node is heard
// in time, not suspect, with no fault or abnormal exit being judged, in no phase that times out, not fenced. At
// 10,000 nodes walking all of them twice a batch was 37% of the writer's time with jobs starting and 70% with only
// heartbeats coming in, for nothing. So a round looks only at the nodes it may act on, found by one walk over all
// nodes, which is made again only when
// - something a round looks at changed for some node (ServerState::round_nodes_changed: suspicion, a fault, an
//   exit judged, a health change, an agent, its heartbeat interval, a node added or removed), or
// - time alone may have made a quiet node silent: at the earliest time one of them could miss a heartbeat (its
//   last heartbeat, or the server's hearing_since_ms, plus missed_heartbeat_after or the timeout, the smaller).
// Heartbeats only make nodes quieter (later last heartbeats), so they need no walk. The nodes come in the table's
// order, as a walk over the whole table meets them, so the rounds act in the same order as before.
//
// The writer's thread only, on the writer's state.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/writer/server_state.h"

namespace allot::server {

// lifecycle_tick may act on this node, silent for `silent_ms`: an agent's node that is suspect, has a fault or an
// abnormal exit being judged, missed a heartbeat, or is in a phase that times out (a reboot ordered by a check or a
// timeout, a deep check). Any other node it skips.
bool lifecycle_may_act_on(const NodeInfo& info, int64_t silent_ms);
// Either round may act on it: lifecycle_tick as above, or time_out_nodes (fenced, or an agent's node silent past the
// heartbeat timeout `timeout_ms`).
bool round_may_act_on(const NodeInfo& info, int64_t silent_ms, int64_t timeout_ms);

class RoundNodes {
 public:
  using Entry = std::pair<const std::string*, NodeInfo*>;
  // The nodes a round at `now_ms` may act on (and perhaps some it no longer may: they are skipped as before), in
  // the table's order; `timeout_ms` is the heartbeat timeout. Walks every node only when needed (above). The list
  // stays valid until the state's nodes change (which makes the next call walk again).
  const std::vector<Entry>& due(ServerState& st, int64_t now_ms, int64_t timeout_ms);

  uint64_t walks() const { return walks_; }

 private:
  std::vector<Entry> due_;
  int64_t walk_again_at_ms_ = INT64_MIN;  // no walk yet
  int64_t walked_at_ms_ = 0;
  size_t walked_size_ = 0;
  uint64_t walks_ = 0;
};

}  // namespace allot::server
