#pragma once
// Stops before starts (docs/scheduling.md, "Stops before starts"): the replicas of a run are handed to agents
// (listed in their nodes' run lists, heartbeat_board.h) only once nothing they would overlap may still run:
//  - every replica of an earlier run of the same job is confirmed stopped, wherever it ran, so a restart never
//    runs beside the run it replaces (two ranks 0 on one MASTER_PORT, two writers of one checkpoint);
//  - every replica of another job's ended run on the same nodes is confirmed stopped, so a preemptor never
//    shares a device with the victim it displaced while that victim runs out its stop grace;
//  - a rank that an in-place recovery moved (in_place_recovery.h) reaches its new node only once its process on
//    each node it left is confirmed stopped, so the run's other ranks never meet two of it (the same run, the same
//    attempt: the rule above does not see it).
// A replica is confirmed stopped when its node's agent sends a heartbeat that does not report it running, or when
// its node is fenced: the server timed the node out, by which time the agent or its watchdog has killed the
// node's replicas (agent/fencing.h), or it was out of service already and its agent fell silent past the timeout
// (NodeInfo::fenced), or the node left the cluster and the heartbeat timeout has passed since (a replacement retires
// the failed node and revokes its credential at once, while its agent may still be stopping the replica:
// ServerState::left_live_ms), or it has no agent.
//
// The core is not involved: it admits and places as before, and the capacity it gave the new run is the new
// run's. Only the processes wait, and the job's description says for what (start_waits()). The simulator runs
// no processes, so a stop is confirmed the moment it is decided there and scenario results are unchanged.
//
// Not journaled. A server that starts from the journal (a restart, a new leader, a state rebuilt after a failed
// write) knows of no stop under way, so it recovers them (Recovery): until every node with an agent has been heard
// once since (its heartbeat says what still runs there) or the heartbeat timeout has passed since (an agent that
// heard nothing for that long has fenced itself, agent/fencing.h), every run it hands out is *held*: listed, so
// that replicas already running keep running, but marked so that no agent starts one of it (`hold`). What a heard
// node still runs of another run (an earlier attempt of a Running job, a rank moved off it since) becomes a stop to
// confirm like any other, and the runs it blocks stay held until it is confirmed.
// Admission checks hold a run the same way (admission_checks.h): it is handed out only once every check that
// applies to it has answered ready; check_waits() says which it waits for.
// Thread-safety: a part of ServerState, the writer's.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/state.h"
#include "view/preemption_json.h"

namespace allot::server {

struct ServerState;
struct ReplicaReport;

struct StartGate {
  struct Handed {
    int attempt = 0;
    std::vector<std::string> nodes;  // of its replicas
    bool hold = false;               // handed out during a recovery: listed, but none of it may start yet
    // Each rank's node, the ranks its agents have reported exited (an exited replica of a run never runs again), and
    // the nodes a rank was moved off (its old process there is not covered by these reports): a node whose every
    // rank of the run has exited needs no confirmation when the run ends (a replacement may cut its agent off first).
    std::vector<std::string> rank_nodes;
    std::set<int> exited_ranks;
    std::set<std::string> moved_from;
  };
  // Since the server started from the journal: the nodes not heard yet, and when the last of them has fenced
  // itself if it is alive at all (ms, the server's clock).
  struct Recovery {
    int64_t until_ms = 0;
    std::set<std::string> unheard;
  };
  struct Ended {
    std::string job, team;
    std::set<std::string> nodes;  // where replicas of the run may still be alive
  };
  // A rank moved in place: its process on `from` may still run (it is stopped when its agent hears it is no
  // longer placed there).
  struct Moved {
    int attempt = 0;
    std::string job, team;
  };
  std::unordered_map<uint32_t, Handed> handed;     // by job index: the run whose replicas the agents were given
  // By (job index, rank, node it left): moved ranks held from their new node until their old process is confirmed
  // stopped there. A rank moved twice waits for both nodes it left.
  std::map<std::tuple<uint32_t, int, std::string>, Moved> moved;
  std::map<std::pair<uint32_t, int>, Ended> ended;  // by (job index, attempt): runs whose stops are not all confirmed
  // Heartbeats the writer read in this batch: per node, the (job, attempt) of every replica reported running
  // (attempt -1: the agent sent none). advance_start_gate() confirms stops with them once the batch's decisions
  // are made, so a heartbeat that reports the exit ending a run also confirms its own node.
  std::map<std::string, std::set<std::pair<std::string, int>>> heard;
  // The same heartbeats by rank: (job, attempt, rank) of every replica reported running (attempt -1: none sent).
  std::map<std::string, std::set<std::tuple<std::string, int, int>>> heard_ranks;
  uint64_t seen_event = 0;  // advance_start_gate() looks at the jobs again only after new events or heartbeats
  std::optional<Recovery> recovery;
};

// Whether the replicas of `j`'s current run are handed to its nodes' agents.
bool handed_out(const ServerState& st, const Job& j);
// Whether `j`'s current run is handed out held: its replicas are listed but none may start (a recovery).
bool start_held(const ServerState& st, const Job& j);
// The server starts from the journal at `now_ms` (a restart, a new leader, a rebuilt state): it forgets what it
// handed out and recovers the stops under way (StartGate::Recovery) until `now_ms + heartbeat_timeout_ms`.
void begin_start_recovery(ServerState& st, int64_t now_ms, int64_t heartbeat_timeout_ms);
// Whether rank `rank` of `j`'s current run waits for its old process on a node it was moved from.
bool held_after_move(const ServerState& st, const Job& j, int rank);
// An in-place recovery moved rank `rank` of `j`'s current run off `from`: its new node gets it only once its
// process on `from` is confirmed stopped (a heartbeat of `from` that does not report it running, or `from`
// fenced). `to` is its new node: the run's nodes now include it, so that a later restart waits for it too.
void hold_moved_rank(ServerState& st, const Job& j, int rank, const std::string& from, const std::string& to);
// Whether `node` has replicas of ended runs not yet confirmed stopped (its heartbeats then go to the writer).
bool awaits_stops_on(const ServerState& st, const std::string& node);
// A heartbeat of `node`, read by the writer: the replicas of ended runs it does not report running are
// confirmed stopped (by the next advance_start_gate()).
void note_heartbeat(ServerState& st, const std::string& node, const std::vector<ReplicaReport>& reports);
// After every batch's decisions, before its answers (`now_ms`: the server's clock): runs that ended leave `handed`
// for `ended`; the batch's heartbeats, fenced and departed nodes confirm stops; runs whose way is clear are handed
// out (held while a recovery lasts, and released once it is over and nothing blocks them). Names every node whose
// heartbeat answer changed in st.nodes_touched.
void advance_start_gate(ServerState& st, int64_t now_ms);
// What a Running job that is not handed out yet waits for: [{"job" (null when `sees` hides the team), "team",
// "attempt", "nodes"}], and what its moved ranks wait for (the same, with "rank"); empty when it does not wait.
nlohmann::json start_waits(const ServerState& st, const Job& j, const view::SeesTeamJobs& sees);
// What a run held by a recovery waits for besides stops: {"nodes" (the first kRecoveryNodesShown not heard yet, by
// name), "count" (all of them), "until_ms" (the recovery's deadline)}; null when it is not held by one.
inline constexpr size_t kRecoveryNodesShown = 20;
nlohmann::json recovery_waits(const ServerState& st, const Job& j);

}  // namespace allot::server
