#pragma once
// The writer's clock for capacity plans (core/plans.h): every step whose time has come (a plan starting, its
// grace period beginning, its end) is applied in time order and journaled as a plan_step record, so that what it
// did (jobs checkpointed and requeued, nodes leaving) replays exactly. Only the leader calls it.
#include "server/writer.h"

namespace allot::server {

// Returns whether any step was applied.
bool step_plans(Txn& txn);

}  // namespace allot::server
