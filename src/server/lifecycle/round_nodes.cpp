#include "server/lifecycle/round_nodes.h"

#include <algorithm>

#include "server/lifecycle/node_silence.h"

namespace allot::server {

namespace {
// The quiet node's silence that makes a round act on it: the smaller of a missed heartbeat (suspicion,
// lifecycle_tick) and the timeout (time_out_nodes).
int64_t acts_past(const NodeInfo& info, int64_t timeout_ms) { return std::min(missed_heartbeat_after(info), timeout_ms); }
}  // namespace

bool lifecycle_may_act_on(const NodeInfo& info, int64_t silent_ms) {
  if (!info.agent) return false;
  const bool phase_may_time_out = info.cause == store::HealthCause::kHealthCheck || info.cause == store::HealthCause::kTimeout ||
                                  info.cause == store::HealthCause::kDeepCheck;
  return info.suspect || info.fault_since_ms != 0 || info.exit_judging_since_ms != 0 || phase_may_time_out ||
         silent_ms > missed_heartbeat_after(info);
}

bool round_may_act_on(const NodeInfo& info, int64_t silent_ms, int64_t timeout_ms) {
  return lifecycle_may_act_on(info, silent_ms) || info.fenced || (info.agent && silent_ms > timeout_ms);
}

const std::vector<RoundNodes::Entry>& RoundNodes::due(ServerState& st, int64_t now_ms, int64_t timeout_ms) {
  // A clock that went back (tests set it) is walked again too: the quiet nodes' times were measured on the other.
  const bool walk = st.round_nodes_changed || st.nodes.size() != walked_size_ || now_ms >= walk_again_at_ms_ ||
                    now_ms < walked_at_ms_;
  if (!walk) return due_;
  st.round_nodes_changed = false;
  walked_size_ = st.nodes.size();
  walked_at_ms_ = now_ms;
  ++walks_;
  due_.clear();
  int64_t again = INT64_MAX;
  for (auto& [name, info] : st.nodes) {
    const int64_t silent = silent_for(st, info, now_ms);
    if (round_may_act_on(info, silent, timeout_ms)) {
      due_.push_back({&name, &info});
    } else if (info.agent) {
      // Its silence passes acts_past at the first millisecond after this (heartbeats can only put it later).
      again = std::min(again, now_ms - silent + acts_past(info, timeout_ms) + 1);
    }
  }
  walk_again_at_ms_ = again;
  return due_;
}

}  // namespace allot::server
