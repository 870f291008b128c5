#pragma once
// The writer's clock for capacity plans (core/model/plans.h): every step whose time has come (a plan starting, its
// grace period beginning, its end) is applied in time order and journaled as a plan_step record, so that what it
// did (jobs checkpointed and requeued, nodes leaving) replays exactly. Only the leader calls it.
//
// With a provisioner (`allot server --provisioner CMD`, server/outside/provisioner.h), a plan that starts has its nodes
// started for it: one provisioner run per node <plan>-1 .. <plan>-N not in the cluster, with ALLOT_PLAN set and a
// join token of its own valid until the plan's end. Without one, the plan's agents are started by whoever runs
// the machines (`allot agent --plan NAME`). At the end the nodes leave either way, and their agents, refused
// when they try to join again, exit.
#include "server/options.h"
#include "server/writer/writer.h"

namespace allot::server {

// Returns whether any step was applied.
bool step_plans(Txn& txn, const ServerOptions& options);

}  // namespace allot::server
