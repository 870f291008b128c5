#pragma once
// What the server tells agents and learns from them. A Running job's placement becomes one assignment per
// replica: ranks in placement order (pod sets in order, replicas in order), LOCAL_RANK counted among the
// job's replicas on the same node, MASTER_ADDR the address of rank 0's node, MASTER_PORT from the job's
// number and attempt (rendezvous_port.h), devices and CPUs from the binding. Exits reported by agents end the run: any non-zero
// exit fails it ("replica R exited with code C", auto-resumed while max_retries allows), all replicas
// exiting 0 finish it. An image the agent cannot pull fails it too ("image pull: <image>: <answer>"), charged to the
// job like any failure and never to the node.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/lifecycle/agent_reports.h"
#include "server/options.h"
#include "server/lifecycle/rendezvous_port.h"
#include "server/writer/writer.h"

namespace allot::server {

// {"replicas": [{"job", "rank", "state": "running"|"pulling"|"exited"|"lost"|"not_started", "exit_code"?, "attempt"?,
//   "cpus"?, "failure"?: {"reason": "image_pull", "message"}, "cause"?, "port"?}]}: an exited replica has an exit_code
//   or a failure; a not_started one its cause (docs/api.md).
Result<std::vector<ReplicaReport>> parse_heartbeat(const nlohmann::json& body);

// Ends the runs that the reported exits complete or fail. Exits of other runs, of replicas placed on other
// nodes, or of jobs no longer running are ignored (agents report exits until the replica leaves their run
// list, so a report can arrive late or twice). A rank 0 not started because its port was in use requeues the job
// (rendezvous_port.h).
void apply_exits(Txn& txn, const std::string& node, const std::vector<ReplicaReport>& reports, const ServerOptions& options);

// Keeps which replicas of the current attempt pull their image (ServerState::pulls): a pulling report adds one,
// any other report of it removes it; the first pulling report of an attempt is the event "pulling image I on node
// N". Only replicas placed on `node` count. A pulling replica is neither running nor exited: nothing times it out.
void note_pulls(Txn& txn, const std::string& node, const std::vector<ReplicaReport>& reports);
// The nodes where replicas of `j`'s current run pull its image, in name order; empty when none does.
std::vector<std::string> pulling_nodes(const ServerState& st, const Job& j);

// Keeps which replicas of each Running job's current attempt have started (ServerState::starts), for the gang start
// timeout (start_timeouts.h): a replica reported running, or exited (it ran), counts; pulling its image or not
// started does not. Only replicas placed on `node` count, and only while the policy sets a start_timeout.
void note_starts(Txn& txn, const std::string& node, const std::vector<ReplicaReport>& reports);

// Keeps the CPUs that running replicas of the current attempt report, for the job's description. Only
// replicas placed on `node` count: an agent speaks for its own node.
void note_replica_cpus(Txn& txn, const std::string& node, const std::vector<ReplicaReport>& reports);

// The "container" of a replica's assignment when its job names an image (docs/api.md, "Agents"): {"image",
// "pull_policy": "IfNotPresent"|"Always"|"Never", "shm_mib", "volumes": [{"host_path", "path", "read_only"}],
// "cap_add": [capability names the team's settings allow], "auth_file"? (the team's registry auth file), "args"? (the
// job's args: argv items after the image, for its entrypoint or the job's command)}.
nlohmann::json container_assignment(const ClusterState& s, const Job& j, const PodSetPlacement& ps);

// The assignment of one replica of a Running job to its node's agent: rank `rank` of `j`, the `local_rank`-th of
// its replicas on that node, placed by `r` in pod set `ps` (heartbeat_board.h builds the run list of these).
nlohmann::json replica_assignment(const ServerState& st, const ServerOptions& options, const Job& j, int rank, int local_rank,
                                  const PodSetPlacement& ps, const ReplicaBinding& r);

}  // namespace allot::server
