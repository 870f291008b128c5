#pragma once
// Restoring a snapshot (store/cluster_snapshot.h) adds every job ever submitted again, in ID order.
#include "core/model/state.h"

namespace allot {

// submit_job's checks and indexes, but the job keeps the priority weight it was submitted with, even when its
// class has since been removed (a class may go once no active job uses it). The caller then sets the job's
// recorded state, placement and history. A job that names a plan keeps the plan it was submitted on, `plan` (an
// ID: that plan may have ended or been deleted since, which a new submission would refuse).
Result<JobId> restore_submitted_job(ClusterState& s, const JobSpec& spec, Time submitted_at, int priority,
                                    PlanId plan = PlanId());

}  // namespace allot
