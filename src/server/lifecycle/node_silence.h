#pragma once
// How long a node has been silent, measured against the server's own liveness, and the disruption rule
// (docs/resiliency.md, "A silent agent").
//
// A node's silence is what the server could have heard and did not: it counts from the node's last heartbeat or
// from the last moment the server itself could not hear (ServerState::hearing_since_ms), whichever is later. The
// server cannot hear while it stalls (the process stopped, a GC-like pause, a stuck disk, a VM migration: the
// writer did not run for longer than stall_gap()) or while it refuses connections at its limit (an agent's
// heartbeat may have been among them). After either, every node gets a fresh heartbeat timeout.
//
// The disruption rule, after Kubernetes' node lifecycle controller (which stops evicting in a full disruption):
// when at least `disruption_min_nodes` agents and at least `disruption_share` of all agents have missed their
// heartbeats at once while one of them is silent past the timeout, the cause is far more likely the server's side (its network, a switch, the server itself) than
// that many nodes failing together. Then no node is timed out: their jobs are neither restarted nor failed, the
// nodes stay suspect (nothing new is placed on them, node_lifecycle.h), and an event says why. Once fewer are
// silent every node's timeout starts afresh (the nodes come back a heartbeat or so apart; the last is no more to
// blame than the first), and a node still silent a whole timeout later is timed out as usual.
//
// ServerLiveness is shared: note_refused() from any thread (the HTTP server's refusals), the rest from the
// writer thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "server/options.h"
#include "server/writer/server_state.h"

namespace allot::server {

// Milliseconds `info`'s node has been silent at `now_ms`, as the server could hear it.
int64_t silent_for(const ServerState& st, const NodeInfo& info, int64_t now_ms);
// A node silent for longer than this missed a heartbeat and is suspect: two of its intervals and a little more.
int64_t missed_heartbeat_after(const NodeInfo& info);

// A gap between two rounds of the writer longer than this is a stall of the server: a quarter of the heartbeat
// timeout, and at least a second (an idle writer runs every tick; a long scheduler pass is not a stall).
std::chrono::milliseconds stall_gap(const ServerOptions& options);

// A node the writer's round found silent past the heartbeat timeout.
struct PastTimeout {
  const std::string* name;
  NodeInfo* info;
};

// Agents that missed their heartbeats (missed_heartbeat_after) against all agents, and whether the disruption
// rule holds the timeouts. Nodes that fall silent together cross the timeout a heartbeat interval or so apart;
// counting those that missed a heartbeat, not only those past the timeout, sees them together.
struct Disruption {
  size_t silent = 0;
  size_t agents = 0;
  bool held = false;
  bool operator==(const Disruption&) const = default;
};
// The rule holds only while some node of `past` (the nodes past the timeout this round) is expected to heartbeat.
// Most rounds none is, and then every agent's silence is counted only when `held_before` (the rule held at the last
// look): the counts are what the event ending a disruption says. Otherwise the answer is "not held", uncounted.
Disruption assess_disruption(ServerState& st, const ServerOptions& options, int64_t now_ms,
                             std::span<const PastTimeout> past, bool held_before);
// The event's text when the rule starts or stops holding timeouts.
std::string disruption_message(const Disruption& d, const ServerOptions& options);

class ServerLiveness {
 public:
  // Any thread: the server refused a connection at `at_ms` (options.clock) without reading it.
  void note_refused(int64_t at_ms);
  // The writer, at the start of each round: the time before which no node's silence counts, when it moved (a stall
  // since the last round, or a refusal since the last look), with why.
  struct Deaf {
    int64_t until_ms = 0;
    std::string why;
  };
  std::optional<Deaf> look(const ServerOptions& options, int64_t now_ms, std::chrono::steady_clock::time_point steady_now);

 private:
  std::atomic<int64_t> refused_at_ms_{0};
  int64_t refusals_seen_ms_ = 0;                        // writer thread
  int64_t last_refusal_said_ms_ = 0;                    // writer thread: refusals are said once per episode
  std::chrono::steady_clock::time_point last_round_{};  // writer thread
};

}  // namespace allot::server
