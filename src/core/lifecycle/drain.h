#pragma once
// Draining a node: an administrator takes a node out of service without failing it.
#include <string_view>
#include <vector>

#include "core/model/state.h"

namespace allot {

// Cordons the node and suspends every job that runs a replica on it, as a preemption: each keeps its
// checkpointed work and its place in the queue and resumes on other nodes when the scheduler admits it
// again. Returns the jobs it suspended, in ID order. A drained node stays cordoned until uncordoned.
Result<std::vector<JobId>> drain_node(ClusterState& s, std::string_view name, Time now);

}  // namespace allot
