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
// replica is held until a failing peer node would have shown itself, and is then charged to that node. Any
// abnormal exit is also held while its own node's agent runs the checks it runs at once after it
// (HealthReport::exit_checks_running; the node is suspect meanwhile), and while a node of the run has a failed check
// whose window has not ended: that fault then fails the node, which restarts the job once, charged to the node.
//
// Every function here runs on the writer thread inside a batch (Txn).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/result.h"
#include "server/lifecycle/agent_reports.h"
#include "server/lifecycle/round_nodes.h"
#include "server/options.h"
#include "server/writer/writer.h"

namespace allot::server {

Result<HealthReport> parse_health_report(const nlohmann::json& health);

// Takes a heartbeat's report and moves the node along its lifecycle.
void on_health_report(Txn& txn, const ServerOptions& options, const std::string& node, const HealthReport& report);

// Whether the same health report as the node's last one (as NodeInfo holds it) would change nothing when it came
// again: a heartbeat that carries it may then be answered off the write path (heartbeat_board.h). Kept in step
// with on_health_report, which it mirrors branch by branch.
bool same_health_changes_nothing(const ServerState& st, const std::string& node);

// What the heartbeat answer orders the agent to do: reboot and/or run the deep check.
struct NodeOrders {
  bool reboot = false;
  bool deep_check = false;
  bool operator==(const NodeOrders&) const = default;
};
NodeOrders orders_for(const ServerState& st, const std::string& node);

// A node registered: a new one that `replaces` a failed node retires it; a replacement (or with
// deep_check_new_nodes any new node) waits Unschedulable for its deep check.
Status on_register(Txn& txn, const ServerOptions& options, const std::string& node, bool is_new, const std::string& replaces);

// An abnormal exit (non-zero, or lost) of `j`'s replica on `node`: marks the node as judging it when its agent's
// checks run, and returns true when the exit is held (see above); the tick finishes the job later.
bool hold_exit(Txn& txn, const Job& job, const std::string& node, const std::string& reason);

// Suspicion, faults whose window ended, timeouts of reboots, deep checks and silent agents (of `nodes`: every node it
// may act on, RoundNodes::due), held exits. Returns true when a node's suspicion changed (the scheduler must look again).
bool lifecycle_tick(Txn& txn, const ServerOptions& options, const std::vector<RoundNodes::Entry>& nodes);

// The node becomes UnschedulablePendingReplacement and, with a provisioner, a replacement is asked for.
void request_replacement(Txn& txn, const ServerOptions& options, const std::string& node, store::HealthCause cause,
                         const std::string& reason);

// gpu-1 -> gpu-1-r1 -> gpu-1-r2: the name a replacement of `node` registers with (free in the cluster).
std::string replacement_name(const ClusterState& s, const std::string& node);

}  // namespace allot::server
