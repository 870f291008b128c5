#include "core/model/plans.h"

#include <algorithm>

#include "core/placement/topology_levels.h"

namespace allot {
namespace {

inline constexpr int kMaxPlanNodes = 10000;

PlanState next_state(PlanState s) {
  switch (s) {
    case PlanState::kScheduled: return PlanState::kActive;
    case PlanState::kActive: return PlanState::kEnding;
    case PlanState::kEnding:
    case PlanState::kExpired: return PlanState::kExpired;
  }
  return PlanState::kExpired;
}

std::vector<NodeId> plan_nodes(const ClusterState& s, PlanId plan) {
  std::vector<NodeId> out;
  for (const Node& n : s.nodes)
    if (!n.removed && n.plan == plan) out.push_back(n.id);
  return out;
}

// Ending: every job with a replica on the plan's nodes is checkpointed and requeued, and the nodes take no new
// work. `why` starts the jobs' reason ("plan X ends at ...").
Status end_plan_work(ClusterState& s, PlanId plan, const std::string& why, Time now, PlanStepOutcome& out) {
  const std::vector<NodeId> nodes = plan_nodes(s, plan);
  for (JobId id : s.running_jobs.sorted()) {
    const Job& j = s.jobs[id.index()];
    bool here = false;
    for (NodeId n : j.placement.nodes()) here |= std::find(nodes.begin(), nodes.end(), n) != nodes.end();
    if (here) out.suspended.push_back(id);
  }
  for (JobId id : out.suspended) {
    auto st = preempt_job(s, id, now, why + ": the job was checkpointed and requeued; it resumes from its last checkpoint",
                          ReasonCode::kPlanEnding);
    if (!st) return st;
  }
  for (NodeId n : nodes)
    if (auto st = set_cordon(s, s.nodes[n.index()].name, true); !st) return st;
  return ok_status();
}

Status remove_plan_nodes(ClusterState& s, PlanId plan, Time now, PlanStepOutcome& out) {
  for (NodeId n : plan_nodes(s, plan)) {
    const std::string name = s.nodes[n.index()].name;
    if (auto st = remove_node(s, name, now); !st) return st;
    out.nodes_left.push_back(name);
  }
  return ok_status();
}

}  // namespace

PlanState plan_state_at(const PlanSpec& p, Time now) {
  if (now >= p.end) return PlanState::kExpired;
  if (now >= p.end - p.grace_s) return PlanState::kEnding;
  if (now >= p.start) return PlanState::kActive;
  return PlanState::kScheduled;
}

Time plan_state_time(const PlanSpec& p, PlanState state) {
  switch (state) {
    case PlanState::kScheduled:
    case PlanState::kActive: return p.start;
    case PlanState::kEnding: return p.end - p.grace_s;
    case PlanState::kExpired: return p.end;
  }
  return p.end;
}

Status add_plan(ClusterState& s, const PlanSpec& spec) {
  if (auto st = check_name(NameKind::kPlan, spec.name); !st) return st;
  const std::string where = "plan " + spec.name;
  if (s.find_plan(spec.name)) return Error::exists(where + " already exists; delete it first or choose another name");
  auto type = s.catalog.lookup(spec.instance_type);
  if (!type) return Error::invalid(where + ": " + type.error().message);
  if (spec.count < 1 || spec.count > kMaxPlanNodes)
    return Error::invalid(where + ": count must be 1.." + std::to_string(kMaxPlanNodes) + ", got " + std::to_string(spec.count));
  if (spec.start < 0 || spec.end <= spec.start)
    return Error::invalid(where + ": end (" + std::to_string(spec.end) + ") must come after start (" +
                          std::to_string(spec.start) + "), and start must not be negative");
  if (spec.grace_s < 0 || spec.grace_s > spec.end - spec.start)
    return Error::invalid(where + ": grace must be 0.." + std::to_string(spec.end - spec.start) +
                          " seconds (the plan's length), got " + std::to_string(spec.grace_s));
  if (!spec.team.empty() && !s.find_team(spec.team))
    return Error::invalid(where + ": unknown team '" + spec.team + "'; teams: " + s.team_names());
  for (const auto& [k, v] : spec.labels) {
    if (k.empty() || v.empty()) return Error::invalid(where + ": labels need a key and a value");
    if (canonical_level(k) == kHostnameLabel || k == kPlanLabel)
      return Error::invalid(where + ": label " + k + " is set by allot for each node; give topology labels only");
  }
  Plan p;
  p.id = PlanId(static_cast<uint32_t>(s.plans.size()));
  p.spec = spec;
  p.type = *type;
  s.plan_by_name[spec.name] = p.id;
  s.plans.push_back(std::move(p));
  return ok_status();
}

std::optional<PlanStep> next_plan_step(const ClusterState& s) {
  std::optional<PlanStep> best;
  for (const Plan& p : s.plans) {
    if (p.deleted || p.state == PlanState::kExpired) continue;
    const PlanState to = next_state(p.state);
    const Time at = plan_state_time(p.spec, to);
    if (!best || at < best->at) best = PlanStep{p.id, to, at};
  }
  return best;
}

Result<PlanStepOutcome> apply_plan_step(ClusterState& s, PlanId id, PlanState to, Time now) {
  if (id.index() >= s.plans.size()) return Error::not_found("no plan with id " + std::to_string(id.value));
  Plan& p = s.plans[id.index()];
  if (p.deleted) return Error::precondition("plan " + p.spec.name + " was deleted");
  if (p.state == PlanState::kExpired || to != next_state(p.state))
    return Error::precondition("plan " + p.spec.name + " is " + plan_state_name(p.state) + "; it cannot move to " +
                               plan_state_name(to) + " (Scheduled, Active, Ending, Expired, one step at a time)");
  PlanStepOutcome out;
  p.state = to;
  if (to == PlanState::kEnding) {
    auto st = end_plan_work(s, id, "plan " + p.spec.name + " ends (its grace period of " + std::to_string(p.spec.grace_s) + " s before the end has begun)", now, out);
    if (!st) return st.error();
  } else if (to == PlanState::kExpired) {
    if (auto st = remove_plan_nodes(s, id, now, out); !st) return st.error();
  }
  refresh_plan_quota(s);
  return out;
}

Result<PlanStepOutcome> delete_plan(ClusterState& s, std::string_view name, Time now) {
  const Plan* cp = s.find_plan(name);
  if (!cp) return Error::not_found("no plan named " + std::string(name) + "; plans: " + s.plan_names());
  const PlanId id = cp->id;
  PlanStepOutcome out;
  if (cp->state == PlanState::kActive || cp->state == PlanState::kEnding) {
    auto st = end_plan_work(s, id, "plan " + std::string(name) + " was deleted", now, out);
    if (!st) return st.error();
  }
  if (auto st = remove_plan_nodes(s, id, now, out); !st) return st.error();
  Plan& p = s.plans[id.index()];
  p.deleted = true;
  p.state = PlanState::kExpired;
  s.plan_by_name.erase(p.spec.name);
  refresh_plan_quota(s);
  return out;
}

std::vector<NodeSpec> plan_node_specs(const ClusterState& s, const Plan& plan) {
  std::vector<NodeSpec> out;
  for (int i = 1; i <= plan.spec.count; ++i) {
    NodeSpec n;
    n.name = plan.spec.name + "-" + std::to_string(i);
    n.instance_type = s.catalog.at(plan.type).name;
    n.labels = plan.spec.labels;
    n.labels[std::string(kPlanLabel)] = plan.spec.name;
    out.push_back(std::move(n));
  }
  return out;
}

int plan_nodes_joined(const ClusterState& s, PlanId plan) { return static_cast<int>(plan_nodes(s, plan).size()); }

std::optional<Explanation> plan_gate(const ClusterState& s, const Job& job, bool joined_short) {
  if (!job.plan.valid()) return std::nullopt;
  const Plan& p = s.plans[job.plan.index()];
  const std::string name = "plan " + p.spec.name;
  if (p.deleted)
    return explain(ReasonCode::kPlanEnded, name + " was deleted; the job cannot run: cancel it, or submit it again naming another plan", false);
  switch (p.state) {
    case PlanState::kScheduled:
      return explain(ReasonCode::kPlanPending, "waits for " + name + " to start (it is Scheduled)");
    case PlanState::kActive:
      if (joined_short) {
        const int joined = plan_nodes_joined(s, p.id);
        if (joined < p.spec.count)
          return explain(ReasonCode::kPlanPending, "waits for " + name + "'s nodes to join (" + std::to_string(joined) +
                                                       " of " + std::to_string(p.spec.count) + " joined)");
      }
      return std::nullopt;
    case PlanState::kEnding:
    case PlanState::kExpired:
      return explain(ReasonCode::kPlanEnded, name + (p.state == PlanState::kEnding ? " is ending (its grace period has begun)" : " has expired") +
                                                 "; the job cannot run: cancel it, or submit it again naming another plan",
                     false);
  }
  return std::nullopt;
}

void refresh_plan_quota(ClusterState& s) {
  s.plan_idle.assign(s.catalog.size(), Resources{});
  for (Team& t : s.teams) {
    t.allocated.resize(s.catalog.size());
    t.unlimited.resize(s.catalog.size());
    t.nominal = t.allocated;
  }
  for (const Plan& p : s.plans) {
    if (p.deleted || p.state != PlanState::kActive) continue;
    const Resources capacity = s.catalog.at(p.type).capacity() * static_cast<int64_t>(p.spec.count);
    const Team* owner = p.spec.team.empty() ? nullptr : s.find_team(p.spec.team);
    if (owner) s.teams[owner->id.index()].nominal[p.type.index()] += capacity;
    else s.plan_idle[p.type.index()] += capacity;
  }
}

}  // namespace allot
