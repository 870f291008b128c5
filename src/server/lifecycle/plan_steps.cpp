#include "server/lifecycle/plan_steps.h"

#include <spdlog/spdlog.h>

#include "auth/token.h"
#include "core/model/plans.h"

namespace allot::server {
namespace {

// Asks the provisioner for every node of a plan that has just started and is not in the cluster.
void provision_plan_nodes(Txn& txn, const Plan& plan) {
  for (const NodeSpec& n : plan_node_specs(txn.cluster(), plan)) {
    if (txn.cluster().find_node(n.name)) continue;
    auto labels = n.labels;
    labels.erase(std::string(kPlanLabel));  // the agent sets it from --plan
    ProvisionRequest req{n.name, n.instance_type, std::move(labels), n.name, "plan " + plan.spec.name + " starts", "", plan.spec.name};
    auth::IssuedToken t = auth::issue_token();
    store::TokenRecord rec{t.id, t.secret_hash, auth::Role::kAgentJoin, {}, "", plan.spec.end, "node " + n.name + " of plan " + plan.spec.name,
                           /*max_nodes=*/1};
    if (auto st = txn.apply(store::CreateToken{std::move(rec)}); !st) {
      spdlog::error("plan {}: cannot make a join token for node {}: {}", plan.spec.name, n.name, st.error().message);
      continue;
    }
    req.join_token = t.bearer;
    txn.state().provision_queue.push_back(std::move(req));
  }
}

}  // namespace

bool step_plans(Txn& txn, const ServerOptions& options) {
  bool any = false;
  AsServer as(txn);  // plan steps and the join tokens of provisioned plan nodes are the server's own records
  while (auto step = next_plan_step(txn.cluster())) {
    if (step->at > txn.now()) break;
    const std::string name = txn.cluster().plans[step->plan.index()].spec.name;
    auto st = txn.apply(store::PlanStepRecord{name, plan_state_name(step->to)});
    if (!st) {
      spdlog::error("plan {}: cannot move to {}: {}", name, plan_state_name(step->to), st.error().message);
      break;
    }
    spdlog::info("plan {} is {}", name, plan_state_name(step->to));
    any = true;
    // A plan created after its end is refused, but one whose whole life passed while no leader ran steps through
    // Active to Expired here: its nodes are asked for only if it is still Active once caught up.
    if (step->to == PlanState::kActive && !options.provisioner.empty() &&
        plan_state_at(txn.cluster().plans[step->plan.index()].spec, txn.now()) == PlanState::kActive)
      provision_plan_nodes(txn, txn.cluster().plans[step->plan.index()]);
  }
  return any;
}

}  // namespace allot::server
