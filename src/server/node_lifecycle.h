#pragma once
// The life of a node in the live server (docs/resiliency.md), in HyperPod's terms:
//
//   Schedulable --failed check (on_failure: reboot)--> UnschedulablePendingReboot --reboot, checks pass--> Schedulable
//        |                                                  | the fault survives, or no healthy report in time
//        |--failed check (on_failure: replace)------------> UnschedulablePendingReplacement --provisioner-->
//        |--silent agent (timeout) --> UnschedulablePendingReboot --silent for replace_silent_after--^
//   a replacement registers: the failed node is retired; the new one is Unschedulable until its deep check
//   passes (a failed deep check sends it to replacement in turn).
//
// One fault, one restart: a failed check is acted on `fault_window` after it is first reported, and a node whose
// agent missed a heartbeat or reported a fault is suspect at once (core: Node::suspect), so nothing is placed
// there; several nodes failing within one window restart each job once. A non-zero exit of a multi-node job's
// replica is held until a failing peer node would have shown itself, and is then charged to that node.
//
// Every function here runs on the writer thread inside a batch (Txn).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "server/options.h"
#include "server/writer.h"

namespace allot::server {

// The "health" object of a heartbeat: {"checks": [{name, status, detail, on_failure, at_ms}], "configured",
// "boot", "deep_check": {"status": none|running|passed|failed, "detail"}}.
struct HealthReport {
  std::vector<NodeCheck> checks;
  size_t configured = 0;
  int boot = 0;
  std::string deep_status = "none", deep_detail;
};
Result<HealthReport> parse_health_report(const nlohmann::json& health);

// Takes a heartbeat's report and moves the node along its lifecycle.
void on_health_report(Txn& txn, const ServerOptions& options, const std::string& node, const HealthReport& report);

// What the heartbeat answer orders the agent to do: {"reboot": true} and/or {"deep_check": true}, or nothing.
void add_orders(const ServerState& st, const std::string& node, nlohmann::json& answer);

// A node registered: a new one that `replaces` a failed node retires it; a replacement (or with
// deep_check_new_nodes any new node) waits Unschedulable for its deep check.
Status on_register(Txn& txn, const ServerOptions& options, const std::string& node, bool is_new, const std::string& replaces);

// True when the exit is held (see above); the tick finishes the job later.
bool hold_exit(Txn& txn, const Job& job, const std::string& node, const std::string& reason);

// Suspicion, faults whose window ended, timeouts of reboots, deep checks and silent agents, held exits.
// Returns true when a node's suspicion changed (the scheduler must look again).
bool lifecycle_tick(Txn& txn, const ServerOptions& options);

// The node becomes UnschedulablePendingReplacement and, with a provisioner, a replacement is asked for.
void request_replacement(Txn& txn, const ServerOptions& options, const std::string& node, store::HealthCause cause,
                         const std::string& reason);

// gpu-1 -> gpu-1-r1 -> gpu-1-r2: the name a replacement of `node` registers with (free in the cluster).
std::string replacement_name(const ClusterState& s, const std::string& node);

}  // namespace allot::server
