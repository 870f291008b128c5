#pragma once
// Jobs with an expected duration (simulator) finish when their work is done. The scenario runner and the trace
// replay both advance the virtual clock to the next completion and finish the jobs that are done, in the order
// they completed.
#include <optional>
#include <vector>

#include "core/model/state.h"

namespace allot::sim {

// When the next running job with a duration completes its work (never before `now`); nullopt when none runs.
std::optional<Time> next_completion(const ClusterState& s, Time now);

// The running jobs whose work is done by `now`, in the order they completed (ties in ID order, so in
// submission order).
std::vector<JobId> completed_by(const ClusterState& s, Time now);

}  // namespace allot::sim
