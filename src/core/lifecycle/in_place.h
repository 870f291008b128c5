#pragma once
// Recovery in place (docs/resiliency.md, "Recovery in place"; HyperPod's checkpointless training, torchft): when a
// node of a running job with `recovery: in_place` fails, only the job's replicas on that node are placed again,
// each alone, on a free node as close to the failed one as the topology allows; the other replicas keep their
// placements and keep running. The run stays the same run (no retry is used, the restart is the node's), in a new
// membership epoch, whose surviving replicas are told the new membership and whose new ranks copy the state from a
// peer. When the lost replicas do not all fit, the job restarts as any other (fail_node), and when the new ones are
// not running within the job's recovery_timeout the server ends the run the same way (fall_back_from_in_place).
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model.h"
#include "core/model/result.h"

namespace allot {

struct ClusterState;

// One replica placed again: which (pod set, index in rank order) and where it runs now.
struct ReplicaMove {
  size_t pod_set = 0;
  size_t index = 0;
  ReplicaBinding to;
};

// A recovery of one job from the failure of one node: every replica of the job on `failed`, moved.
struct InPlaceRecovery {
  JobId job;
  NodeId failed;
  std::vector<ReplicaMove> moves;  // in (pod set, index) order
};

// The recoveries a failure of `failed` allows, in job ID order: one per running job with recovery in_place that has
// a replica there and whose every replica there fits elsewhere at once. Each lost replica goes to a usable node
// other than `failed` with room for it (same type, amounts and accelerators; an empty node for whole-node replicas),
// inside the domain the job's topology request binds it to (its required, slice or exclusive level), preferring the
// node that shares the most topology levels with `failed`, then the node that comes first by name. The recoveries
// are planned one after another on a scratch copy of the room, so two jobs never get the same room. Jobs left out
// restart as fail_node restarts them. Pure: the state is not changed.
std::vector<InPlaceRecovery> plan_in_place_recoveries(const ClusterState& s, NodeId failed);

// Applies one recovery (planned above, or read back from the journal): the moved replicas leave `failed` and take
// room on their new nodes, the job's membership epoch goes up by one, and its recoveries list it. The job stays
// Running, its run and kept work as they were; no retry is used. Refused, changing nothing, when the job is not
// running with recovery in_place, a move names a replica that is not on `failed`, leaves one of its replicas there,
// or names a node that is removed, unhealthy, the failed one, or without room.
Status recover_in_place(ClusterState& s, const InPlaceRecovery& r, Time now);

// A node fails as the simulator sees it: every recovery plan_in_place_recoveries allows is applied, then
// fail_node restarts the jobs still on the node. The server does the same in journaled steps (a record per
// recovery, then the node's health change), so that replay applies the recoveries as they were planned.
Status fail_node_in_place(ClusterState& s, std::string_view name, Time now, NodeHealth to);

// The job's in-place recovery did not finish within its recovery_timeout (the server measures it): the run ends as
// a node failure does (fail_node: a restart from the last checkpoint while max_retries allows), reason node_failed,
// its text saying why. Refused for a job that is not running or has not recovered in place in this run.
Status fall_back_from_in_place(ClusterState& s, std::string_view job, Time now, const std::string& why);

}  // namespace allot
