#pragma once
// Capacity plans (flexible training plans): capacity reserved for a period. A plan's state follows from time:
//
//   Scheduled --start--> Active --(end - grace)--> Ending --end--> Expired
//
// Active: the plan's nodes may join (the simulator adds them, named <plan>-1 .. <plan>-N; in the server they are
// the agents that register with --plan NAME); the owning team's nominal quota rises by the plan's capacity
// (count x one instance), or, without an owner, that capacity joins the idle pool. Ending: every job with a
// replica on the plan's nodes is checkpointed and requeued (Suspended, reason code plan_ending), the nodes take
// no new work and the quota goes back. Expired: the nodes leave the cluster.
//
// The core gets time as a value and never looks at a clock: drivers ask next_plan_step() what is due and apply
// it with apply_plan_step(), an operation they journal like any other. A job that names a plan runs on that
// plan's nodes only, and waits (plan_pending) until the plan is Active and its nodes have joined.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/explanation.h"
#include "core/model/state.h"

namespace allot {

// The node label that ties a node to its plan (`allot agent --plan NAME` sets it).
inline constexpr std::string_view kPlanLabel = "allot.dev/plan";
// In the error that refuses a plan's node before its plan starts: an agent started early waits and tries again
// (agent/agent.cpp) instead of giving up, as it does on any other refusal.

// The state a plan's times give at `now`.
PlanState plan_state_at(const PlanSpec& spec, Time now);
// When the plan reaches `state` (its start, end - grace, end); Scheduled: its start.
Time plan_state_time(const PlanSpec& spec, PlanState state);

// Adds a plan in state Scheduled (drivers step it to the state its times give). Checks the name, the instance
// type, count 1..10000, start < end, 0 <= grace <= end - start, the owning team (if any) and the labels.
Status add_plan(ClusterState& s, const PlanSpec& spec);

// The next step of any plan, earliest first (ties: plan ID): the plan, the state it moves to, and when.
struct PlanStep {
  PlanId plan;
  PlanState to = PlanState::kActive;
  Time at = 0;
};
std::optional<PlanStep> next_plan_step(const ClusterState& s);

// What a step (or a deletion) did: the jobs it suspended (in ID order) and the nodes that left.
struct PlanStepOutcome {
  std::vector<JobId> suspended;
  std::vector<std::string> nodes_left;
};
// Moves a plan one state on; `to` must be the state after its current one. Ending suspends the jobs on its
// nodes (they keep their checkpointed work and their place in the queue) and cordons the nodes; Expired removes
// them. Quota follows the new state. `now` is when it is applied (the jobs' transitions carry it).
Result<PlanStepOutcome> apply_plan_step(ClusterState& s, PlanId plan, PlanState to, Time now);
// Ends a plan now, whatever its state (its jobs are suspended, its nodes leave), and forgets its name: jobs that
// named it wait for good (plan_ended) and a new plan may take the name.
Result<PlanStepOutcome> delete_plan(ClusterState& s, std::string_view name, Time now);

// The nodes the simulator adds when a plan starts: <plan>-1 .. <plan>-N of its type, with its labels and the plan
// label.
std::vector<NodeSpec> plan_node_specs(const ClusterState& s, const Plan& plan);
// Nodes of the plan that are in the cluster now.
int plan_nodes_joined(const ClusterState& s, PlanId plan);

// Why a job that names a plan cannot run now because of its plan (it is not Active, or was deleted), or nothing.
// `joined_short` also reports an Active plan whose nodes have not all joined (asked once placement failed).
std::optional<Explanation> plan_gate(const ClusterState& s, const Job& job, bool joined_short = false);

// Recomputes every team's nominal quota (its allocation plus the Active plans it owns) and the idle pool's share
// of ownerless Active plans. Called by every change of an allocation, the catalog or a plan's state.
void refresh_plan_quota(ClusterState& s);

}  // namespace allot
