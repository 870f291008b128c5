#pragma once
// What the server tells agents and learns from them. A Running job's placement becomes one assignment per
// replica: ranks in placement order (pod sets in order, replicas in order), LOCAL_RANK counted among the
// job's replicas on the same node, MASTER_ADDR the address of rank 0's node, MASTER_PORT from the job's
// number (options.h), devices and CPUs from the binding. Exits reported by agents end the run: any non-zero
// exit fails it ("replica R exited with code C", auto-resumed while max_retries allows), all replicas
// exiting 0 finish it.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/options.h"
#include "server/writer.h"

namespace allot::server {

// One replica as an agent reports it in a heartbeat.
struct ReplicaReport {
  std::string job;
  int rank = 0;
  bool exited = false;
  int exit_code = 0;            // when exited
  std::optional<int> attempt;   // the assignment's attempt it belongs to, when the agent sends it
  std::string cpus;             // running: the CPUs it is bound to ("0-3,8"), when the agent sends them
};

// {"replicas": [{"job", "rank", "state": "running"|"exited", "exit_code"?, "attempt"?, "cpus"?}]}
Result<std::vector<ReplicaReport>> parse_heartbeat(const nlohmann::json& body);

int master_port(const ServerOptions& options, JobId job);

// Ends the runs that the reported exits complete or fail. Exits of other runs, of replicas placed on other
// nodes, or of jobs no longer running are ignored (agents report exits until the replica leaves their run
// list, so a report can arrive late or twice).
void apply_exits(Txn& txn, const std::string& node, const std::vector<ReplicaReport>& reports);

// Keeps the CPUs that running replicas of the current attempt report, for the job's description. Only
// replicas placed on `node` count: an agent speaks for its own node.
void note_replica_cpus(Txn& txn, const std::string& node, const std::vector<ReplicaReport>& reports);

// {"run": [assignment], "stop": [{"job", "rank"}]}: every replica placed on the node, and those the agent
// runs that are not (or no longer, or of an older attempt).
nlohmann::json heartbeat_answer(const ServerState& st, const ServerOptions& options, const std::string& node,
                                const std::vector<ReplicaReport>& reports);

}  // namespace allot::server
