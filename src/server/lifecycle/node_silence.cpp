#include "server/lifecycle/node_silence.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace allot::server {

int64_t silent_for(const ServerState& st, const NodeInfo& info, int64_t now_ms) {
  return now_ms - std::max(info.last_heartbeat_ms, st.hearing_since_ms);
}

int64_t missed_heartbeat_after(const NodeInfo& info) { return 2 * info.heartbeat_interval_ms + 200; }

std::chrono::milliseconds stall_gap(const ServerOptions& options) {
  return std::max(std::chrono::milliseconds(1000), options.heartbeat_timeout / 4);
}

namespace {
// A node waiting for its replacement is not expected to heartbeat: it counts neither way.
const Node* expected_to_heartbeat(ServerState& st, const std::string& name, NodeInfo& info) {
  const Node* n = info.agent ? node_of(st.cluster, name, info) : nullptr;
  return n && n->health != NodeHealth::kUnschedulablePendingReplacement ? n : nullptr;
}
}  // namespace

Disruption assess_disruption(ServerState& st, const ServerOptions& options, int64_t now_ms,
                             std::span<const PastTimeout> past, bool held_before) {
  // Only while some node is past the timeout is there a timeout to hold.
  const bool past_timeout =
      std::any_of(past.begin(), past.end(), [&](const PastTimeout& p) { return expected_to_heartbeat(st, *p.name, *p.info); });
  Disruption d;
  if (!past_timeout && !held_before) return d;
  const int64_t limit = options.heartbeat_timeout.count();
  for (auto& [name, info] : st.nodes) {
    if (!expected_to_heartbeat(st, name, info)) continue;
    ++d.agents;
    if (silent_for(st, info, now_ms) > std::min(limit, missed_heartbeat_after(info))) ++d.silent;
  }
  d.held = past_timeout && options.disruption_min_nodes > 0 && d.silent >= options.disruption_min_nodes &&
           static_cast<double>(d.silent) >= options.disruption_share * static_cast<double>(d.agents);
  return d;
}

std::string disruption_message(const Disruption& d, const ServerOptions& options) {
  const std::string counts = std::to_string(d.silent) + " of " + std::to_string(d.agents) + " nodes";
  const std::string rule = "at least " + std::to_string(options.disruption_min_nodes) + " nodes and " +
                           std::to_string(static_cast<int>(std::lround(options.disruption_share * 100))) + "% of them";
  if (d.held)
    return counts + " have missed their heartbeats at once, some for more than the " +
           std::to_string(options.heartbeat_timeout.count()) + " ms timeout (" + rule + "): a disruption on the server's side is more likely than that many failed nodes, so "
           "no node is timed out: their jobs are neither restarted nor failed, and the silent nodes stay suspect (nothing "
           "new is placed on them) until they heartbeat again or fewer are silent";
  return "disruption over: " + counts + " missing heartbeats now (the rule holds at " + rule +
         "); every node's heartbeat timeout starts afresh, and a node still silent a whole timeout from now is timed "
         "out as usual";
}

void ServerLiveness::note_refused(int64_t at_ms) {
  int64_t seen = refused_at_ms_.load();
  while (at_ms > seen && !refused_at_ms_.compare_exchange_weak(seen, at_ms)) {
  }
}

std::optional<ServerLiveness::Deaf> ServerLiveness::look(const ServerOptions& options, int64_t now_ms,
                                                         std::chrono::steady_clock::time_point steady_now) {
  // The gap is measured on the steady clock: tests move options.clock forward to make nodes silent, which is no stall.
  const auto last = std::exchange(last_round_, steady_now);
  if (last != std::chrono::steady_clock::time_point{} && steady_now - last > stall_gap(options)) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(steady_now - last).count();
    return Deaf{now_ms, "the server did not run for " + std::to_string(ms) +
                            " ms (the process was stopped or starved): heartbeats sent meanwhile were not heard, so "
                            "every node's heartbeat timeout starts afresh"};
  }
  const int64_t refused = refused_at_ms_.load();
  if (refused <= refusals_seen_ms_) return std::nullopt;
  refusals_seen_ms_ = refused;
  Deaf out{refused, ""};
  // One event per episode of refusals (none for a heartbeat timeout before), not one per round.
  if (refused - last_refusal_said_ms_ > options.heartbeat_timeout.count())
    out.why = "the server refused connections at its limit (--max-connections): heartbeats among them are not counted "
              "as missed, and every node's heartbeat timeout starts afresh from the last refusal";
  last_refusal_said_ms_ = refused;
  return out;
}

}  // namespace allot::server
