#include "core/model/state.h"

#include "core/model/overloaded.h"

#include <algorithm>
#include <utility>

#include "core/model/dependency.h"
#include "core/lifecycle/in_place.h"
#include "core/model/plans.h"
#include "core/model/request.h"
#include "core/lifecycle/time_limit.h"
#include "core/placement/topology_levels.h"
#include "core/quota/user_limits.h"

namespace allot {

ClusterState::ClusterState() : ClusterState(Catalog::builtin()) {}

ClusterState::ClusterState(Catalog c, std::vector<std::string> topology_levels)
    : catalog(std::move(c)), levels(std::move(topology_levels)) {
  if (levels.empty()) levels = default_topology_levels();
  for (auto& l : levels) l = canonical_level(l);
  // The hostname is always the finest level: placement ends on nodes.
  if (levels.back() != kHostnameLabel) levels.emplace_back(kHostnameLabel);
  tree = build_topology_tree(nodes, static_cast<int>(levels.size()));
  plan_idle.assign(catalog.size(), Resources{});
}

const Node* ClusterState::find_node(std::string_view name) const {
  auto it = node_by_name->find(name);
  return it == node_by_name->end() || nodes[it->second.index()].removed ? nullptr : &nodes[it->second.index()];
}
const Team* ClusterState::find_team(std::string_view name) const {
  auto it = team_by_name.find(std::string(name));
  return it == team_by_name.end() ? nullptr : &teams[it->second.index()];
}
const Job* ClusterState::find_job(std::string_view name) const {
  const JobId* id = job_by_name.find(std::string(name));
  return id ? &jobs[id->index()] : nullptr;
}

const Plan* ClusterState::find_plan(std::string_view name) const {
  auto it = plan_by_name.find(std::string(name));
  return it == plan_by_name.end() ? nullptr : &plans[it->second.index()];
}

std::string ClusterState::plan_names() const {
  std::vector<std::string> names;
  for (const auto& [name, id] : plan_by_name) names.push_back(name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none defined)" : out;
}

int ClusterState::priority_weight(std::string_view class_name) const {
  for (const auto& pc : policy.priority_classes)
    if (pc.name == class_name) return pc.weight;
  return -1;
}

std::string ClusterState::priority_class_names() const {
  std::string out;
  for (const auto& pc : policy.priority_classes) out += (out.empty() ? "" : ", ") + pc.name;
  return out.empty() ? "(none defined)" : out;
}

std::string ClusterState::team_names() const {
  std::vector<std::string> names;
  for (const auto& t : teams)
    if (!t.removed) names.push_back(t.spec.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none defined)" : out;
}


// --- Configuration -------------------------------------------------------------------------------------------

// Team::candidate_types for every team: the types of its allocation in its order, then every other type by
// name; a type that the cluster does not have and the team has no quota of is left out, and so is every MIG type
// (core/model/mig.h): a pod set without a type asks for whole accelerators, which a partitioned GPU does not offer.
// Called whenever an allocation, the catalog or the cluster's capacity changes.
static void refresh_candidate_types(ClusterState& s) {
  std::vector<TypeId> by_name;
  for (size_t i = 0; i < s.catalog.size(); ++i) by_name.emplace_back(static_cast<uint32_t>(i));
  std::sort(by_name.begin(), by_name.end(),
            [&](TypeId a, TypeId b) { return s.catalog.at(a).name < s.catalog.at(b).name; });
  for (Team& team : s.teams) {
    auto& out = team.candidate_types;
    out.clear();
    auto add = [&](TypeId t) {
      if (s.catalog.at(t).is_mig()) return;
      if (s.type_capacity(t).is_zero() && team.nominal[t.index()].is_zero()) return;
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    };
    for (const auto& a : team.spec.allocation)
      if (auto t = s.catalog.find(a.instance_type)) add(*t);
    for (TypeId t : by_name) add(t);
  }
}

// The cohort tree again after a team or the catalog changed. The checks that could refuse it ran before the
// change (set_policy, upsert_team), so it cannot fail here.
static void refresh_cohorts(ClusterState& s) {
  if (s.policy.groups.empty() && s.cohorts.empty()) return;
  auto tree = build_cohort_tree(s, s.policy.groups);
  if (tree) s.cohorts = std::move(*tree);
}

Status set_policy(ClusterState& s, const PolicySpec& policy) {
  for (size_t i = 0; i < policy.priority_classes.size(); ++i) {
    const auto& pc = policy.priority_classes[i];
    if (pc.name.empty()) return Error::invalid("a priority class needs a name");
    if (pc.weight < 0 || pc.weight > 100)
      return Error::invalid("priority class " + pc.name + ": weight must be 0..100, got " + std::to_string(pc.weight));
    for (size_t j = 0; j < i; ++j)
      if (policy.priority_classes[j].name == pc.name) return Error::invalid("priority class " + pc.name + " is defined twice");
  }
  if (policy.min_runtime_s < 0 || policy.starvation_threshold_s < 0)
    return Error::invalid("min_runtime and starvation_threshold must not be negative");
  // Jobs keep the weight they were submitted with only if their class still exists.
  for (const Job& j : s.jobs) {
    if (!is_active(j.state) || j.spec.priority.empty()) continue;
    bool found = false;
    for (const auto& pc : policy.priority_classes) found |= pc.name == j.spec.priority;
    if (!found)
      return Error::precondition("priority class " + j.spec.priority + " is used by active job " + j.spec.name +
                                 "; it cannot be removed");
  }
  // The groups must hold together and keep every team's group (cohort_tree.h); checked before anything changes.
  auto cohorts = build_cohort_tree(s, policy.groups);
  if (!cohorts) return cohorts.error();
  s.policy = policy;
  s.cohorts = std::move(*cohorts);
  for (Job& j : s.jobs)
    if (!j.spec.priority.empty()) j.priority = std::max(0, s.priority_weight(j.spec.priority));
  return ok_status();
}

Status upsert_team(ClusterState& s, const TeamSpec& spec) {
  if (spec.name.empty()) return Error::invalid("a team needs a name");
  if (spec.fair_share_weight < 0 || spec.fair_share_weight > 100)
    return Error::invalid("team " + spec.name + ": fair_share_weight must be 0..100, got " +
                          std::to_string(spec.fair_share_weight));
  if (spec.borrow_limit < 0 || spec.borrow_limit > 10000)
    return Error::invalid("team " + spec.name + ": borrow_limit must be 0..10000 percent, got " +
                          std::to_string(spec.borrow_limit));
  std::vector<Resources> nominal(s.catalog.size());
  std::vector<ResourceSet> unlimited(s.catalog.size());
  for (const auto& entry : spec.allocation) {
    auto type = s.catalog.lookup(entry.instance_type);
    if (!type) return Error::invalid("team " + spec.name + ": " + type.error().message);
    auto amount = resolve_allocation(s.catalog.at(*type), entry.amount);
    if (!amount) return Error::invalid("team " + spec.name + ", " + s.catalog.at(*type).name + ": " + amount.error().message);
    nominal[type->index()] += *amount;
    unlimited[type->index()].bits |= unlimited_resources(entry.amount).bits;
  }
  auto user_limits = resolve_user_limits(s.catalog, spec);
  if (!user_limits) return user_limits.error();
  if (s.cohorts.find(spec.name) >= 0)
    return Error::invalid("team " + spec.name + " has the name of a group; teams and groups need different names");
  if (!spec.group.empty() && s.cohorts.find(spec.group) < 0) {
    std::string names;
    for (const CohortGroup& g : s.cohorts.groups) names += (names.empty() ? "" : ", ") + g.spec.name;
    return Error::invalid("team " + spec.name + ": group " + spec.group + " is not defined; groups: " +
                          (names.empty() ? "none (the policy's groups define them)" : names));
  }
  auto it = s.team_by_name.find(spec.name);
  if (it == s.team_by_name.end()) {
    Team t;
    t.id = TeamId(static_cast<uint32_t>(s.teams.size()));
    it = s.team_by_name.emplace(spec.name, t.id).first;
    s.teams.push_back(std::move(t));
    s.usage.emplace_back(s.catalog.size());
  }
  Team& t = s.teams[it->second.index()];
  t.spec = spec;
  t.allocated = std::move(nominal);
  t.unlimited = std::move(unlimited);
  t.user_limits = std::move(*user_limits);
  t.removed = false;
  refresh_plan_quota(s);  // nominal = the allocation plus the team's Active plans
  refresh_candidate_types(s);
  refresh_cohorts(s);
  return ok_status();
}

Status remove_team(ClusterState& s, std::string_view name) {
  const Team* t = s.find_team(name);
  if (!t) return Error::not_found("no team named " + std::string(name) + "; teams: " + s.team_names());
  for (const Job& j : s.jobs)
    if (j.team == t->id && is_active(j.state))
      return Error::precondition("team " + std::string(name) + " still has active job " + j.spec.name);
  for (const Plan& p : s.plans)
    if (!p.deleted && p.state != PlanState::kExpired && p.spec.team == name)
      return Error::precondition("team " + std::string(name) + " owns plan " + p.spec.name + " (" +
                                 plan_state_name(p.state) + "); delete the plan first");
  // Teams keep their IDs (jobs refer to them); a removed team keeps no quota.
  Team& mt = s.teams[t->id.index()];
  mt.allocated.assign(s.catalog.size(), Resources{});
  mt.nominal.assign(s.catalog.size(), Resources{});
  mt.unlimited.assign(s.catalog.size(), ResourceSet{});
  mt.spec.allocation.clear();
  mt.spec.strategy = SharingStrategy::kDontLend;
  mt.spec.group.clear();
  mt.removed = true;
  refresh_candidate_types(s);
  refresh_cohorts(s);
  return ok_status();
}

Result<TypeId> add_instance_type(ClusterState& s, InstanceType type) {
  auto id = s.catalog.add(std::move(type));
  if (!id) return id;
  for (auto& u : s.usage) u.resize(s.catalog.size());
  s.capacity.resize(s.catalog.size());
  refresh_plan_quota(s);  // sizes every team's allocated and nominal tables, and the plans' idle pool
  refresh_candidate_types(s);
  refresh_cohorts(s);  // sizes the groups' tables
  return id;
}

// --- Nodes ---------------------------------------------------------------------------------------------------

// What follows the tree when nodes join or leave: the capacity per type, the versions caches key on, and the
// candidate types.
static void refresh_after_tree(ClusterState& s) {
  s.capacity.assign(s.catalog.size(), Resources{});
  for (const Node& n : s.nodes)
    if (!n.removed) s.capacity[n.type.index()] += s.catalog.at(n.type).capacity();
  ++s.shape_version;
  ++s.health_version;
  refresh_candidate_types(s);
}

static void rebuild_tree(ClusterState& s) {
  s.tree = build_topology_tree(s.nodes, static_cast<int>(s.levels.size()));
  refresh_after_tree(s);
}

static void refresh_usable(ClusterState& s, NodeId id) {
  s.room[id.index()].usable = s.nodes[id.index()].schedulable();
  ++s.health_version;
}

// One value per topology level, from the node's labels; the last is its name.
static std::vector<std::string> node_topology(const ClusterState& s, const Node& n) {
  std::vector<std::string> out;
  for (const auto& level : s.levels) {
    if (level == kHostnameLabel) {
      out.push_back(n.name);
    } else {
      auto it = n.labels.find(level);
      out.push_back(it == n.labels.end() ? "" : it->second);
    }
  }
  return out;
}

// Appends one node without rebuilding the tree (callers do, once per batch).
static Status append_node(ClusterState& s, const NodeSpec& spec) {
  if (spec.name.empty()) return Error::invalid("a node needs a name");
  if (s.find_node(spec.name)) return Error::exists("node " + spec.name + " is already in the cluster");
  auto type = s.catalog.lookup(spec.instance_type);
  if (!type) return Error::invalid("node " + spec.name + ": " + type.error().message);
  Node n;
  n.name = spec.name;
  n.type = *type;
  n.instance_group = spec.instance_group;
  for (const auto& [k, v] : spec.labels) n.labels[canonical_level(k)] = v;
  n.topology = node_topology(s, n);
  if (auto pl = n.labels.find(std::string(kPlanLabel)); pl != n.labels.end()) {
    const Plan* plan = s.find_plan(pl->second);
    const std::string where = "node " + spec.name + ": label " + std::string(kPlanLabel) + " names ";
    if (!plan) return Error::invalid(where + "unknown plan '" + pl->second + "'; plans: " + s.plan_names());
    if (plan->state == PlanState::kScheduled)
      return Error{ErrorCode::kFailedPrecondition,
                   where + "plan " + plan->spec.name + ", which has not started yet (it is Scheduled); a plan's nodes join "
                   "while it is Active",
                   ErrorReason::kPlanNotStarted};
    if (plan->state != PlanState::kActive)
      return Error::precondition(where + "plan " + plan->spec.name + ", which is " + plan_state_name(plan->state) +
                                 "; a plan's nodes join while it is Active");
    if (plan->type != n.type)
      return Error::invalid(where + "plan " + plan->spec.name + ", which reserves " + s.catalog.at(plan->type).name +
                            ", not " + s.catalog.at(n.type).name);
    if (plan_nodes_joined(s, plan->id) >= plan->spec.count)
      return Error::precondition(where + "plan " + plan->spec.name + ", whose " + std::to_string(plan->spec.count) +
                                 " nodes have all joined");
    n.plan = plan->id;
  }
  // A node that comes back under the same name (a replacement) gets a fresh ID; the old one stays removed.
  n.id = NodeId(static_cast<uint32_t>(s.nodes.size()));
  const InstanceType& it = s.catalog.at(n.type);
  NodeRoom r;
  r.type = n.type;
  r.free = it.capacity();
  r.accelerators_free = it.accelerators >= 64 ? ~uint64_t{0} : ((uint64_t{1} << it.accelerators) - 1);
  r.usable = true;
  s.node_by_name.edit()[n.name] = n.id;
  s.nodes.push_back(std::move(n));
  s.room.push_back(r);
  s.room_changed_at.push_back(0);
  return ok_status();
}

Status add_node(ClusterState& s, const NodeSpec& spec, Time now) { return add_nodes(s, {spec}, now); }

Status add_nodes(ClusterState& s, const std::vector<NodeSpec>& specs, Time now) {
  const size_t before = s.nodes.size();
  for (const NodeSpec& spec : specs) {
    if (auto st = append_node(s, spec); !st) {
      // All or nothing: take back the nodes this call appended.
      while (s.nodes.size() > before) {
        auto it = s.node_by_name->find(s.nodes.back().name);
        if (it != s.node_by_name->end() && it->second == s.nodes.back().id) s.node_by_name.edit().erase(s.nodes.back().name);
        s.nodes.pop_back();
        s.room.pop_back();
        s.room_changed_at.pop_back();
      }
      return st;
    }
  }
  for (size_t i = before; i < s.nodes.size(); ++i) s.room_changed_at[i] = now;
  if (s.node_batch > 0) {
    s.tree_stale = true;
  } else {
    // The tree is current for the nodes before these (outside a batch it always is): they are placed into it.
    add_to_topology_tree(s.tree, s.nodes, before);
    refresh_after_tree(s);
  }
  return ok_status();
}

void begin_node_batch(ClusterState& s) { ++s.node_batch; }

void end_node_batch(ClusterState& s) {
  if (s.node_batch == 0 || --s.node_batch > 0) return;
  if (s.tree_stale) rebuild_tree(s);
  s.tree_stale = false;
}

// Stops every active run that has a replica on `node`; `on_stop` decides what becomes of each job.
template <typename F>
static void stop_jobs_on(ClusterState& s, NodeId node, F on_stop) {
  // A copy (stopping a job changes the index), in ID order so that the jobs stop in submission order.
  const std::vector<JobId> running = s.running_jobs.sorted();
  for (JobId id : running) {
    Job& j = s.jobs[id.index()];
    bool here = false;
    for (const auto& ps : j.placement.pod_sets)
      for (const auto& r : ps.replicas) here |= r.node == node;
    if (here) on_stop(j);
  }
}

static void index_job(ClusterState& s, const Job& j, bool add) {
  if (!is_active(j.state)) {
    // A finished job is kept by when it finished (its last change), which retention compares with its cutoff;
    // only once retention is in use (keep_finished_index).
    if (j.compacted || !s.finished_indexed) return;
    const std::pair<Time, uint32_t> key{finished_at(j), j.id.index()};
    if (add) s.finished_jobs.insert(key);
    else s.finished_jobs.erase(key);
    return;
  }
  auto& set = j.state == JobState::kRunning ? s.running_jobs : s.waiting_jobs;
  if (add) set.insert(j.id);
  else set.erase(j.id);
}

void index_new_job(ClusterState& s, const Job& j) { index_job(s, j, true); }

void keep_finished_index(ClusterState& s) {
  if (s.finished_indexed) return;
  s.finished_indexed = true;
  for (const Job& j : s.jobs)
    if (!is_active(j.state)) index_job(s, j, true);
}

static void transition(ClusterState& s, Job& j, JobState to, Time now, SharedText reason, ReasonCode code) {
  index_job(s, j, false);
  j.history.push_back({now, j.state, to, reason});
  j.state = to;
  j.reason = std::move(reason);
  j.reason_code = code;
  j.feasible = true;
  if (is_waiting(to)) j.waiting_since = now;
  j.locality_wait_from.reset();  // a new waiting period (or none) counts its locality wait afresh
  index_job(s, j, true);
}

static void touch_nodes(ClusterState& s, const Placement& p, Time now) {
  for (const auto& ps : p.pod_sets)
    for (const auto& r : ps.replicas) s.room_changed_at[r.node.index()] = now;
}

static void stop_run(ClusterState& s, Job& j, Time now) {
  release(s.room, s.usage, s, j, j.placement);
  touch_nodes(s, j.placement, now);
  j.work_done_s += kept_work(j, now);
  j.run_before_s += std::max<int64_t>(0, now - j.started_at);  // toward its time limit (time_limit.h)
  j.placement = {};
  j.borrowing = false;
}

// A run ended by a failure: restart while max_retries allows, else fail for good.
static void fail_run(ClusterState& s, Job& j, Time now, const std::string& cause, ReasonCode code) {
  stop_run(s, j, now);
  if (j.restarts < j.spec.max_retries) {
    ++j.restarts;
    transition(s, j, JobState::kSuspended, now,
               cause + "; auto-resume restarts it from its last checkpoint (retry " + std::to_string(j.restarts) +
                   " of " + std::to_string(j.spec.max_retries) + ")",
               code);
  } else {
    transition(s, j, JobState::kFailed, now,
               cause + "; no retries left (max_retries " + std::to_string(j.spec.max_retries) + ")", code);
  }
}

Status remove_node(ClusterState& s, std::string_view name, Time now, std::string_view cause) {
  const Node* n = s.find_node(name);
  if (!n) return Error::not_found("no node named " + std::string(name) + " in the cluster");
  NodeId id = n->id;
  stop_jobs_on(s, id, [&](Job& j) {
    stop_run(s, j, now);
    transition(s, j, JobState::kSuspended, now,
               "node " + std::string(name) + " left the cluster" + (cause.empty() ? "" : ": " + std::string(cause)) +
                   "; the job waits to resume from its last checkpoint",
               ReasonCode::kNodeRemoved);
  });
  s.nodes.edit(id.index()).removed = true;
  s.node_by_name.edit().erase(std::string(name));
  refresh_usable(s, id);
  rebuild_tree(s);
  return ok_status();
}

Status fail_node(ClusterState& s, std::string_view name, Time now, NodeHealth to) {
  const Node* n = s.find_node(name);
  if (!n) return Error::not_found("no node named " + std::string(name) + " in the cluster");
  if (to == NodeHealth::kSchedulable) return Error::invalid("a failed node cannot be Schedulable");
  NodeId id = n->id;
  s.nodes.edit(id.index()).health = to;
  refresh_usable(s, id);
  stop_jobs_on(s, id, [&](Job& j) { fail_run(s, j, now, "node " + std::string(name) + " failed", ReasonCode::kNodeFailed); });
  return ok_status();
}

Status set_node_health(ClusterState& s, std::string_view name, NodeHealth health, Time now) {
  if (health != NodeHealth::kSchedulable) return fail_node(s, name, now, health);
  const Node* n = s.find_node(name);
  if (!n) return Error::not_found("no node named " + std::string(name) + " in the cluster");
  s.nodes.edit(n->id.index()).health = health;
  refresh_usable(s, n->id);
  return ok_status();
}

Status set_cordon(ClusterState& s, std::string_view name, bool cordoned) {
  const Node* n = s.find_node(name);
  if (!n) return Error::not_found("no node named " + std::string(name) + " in the cluster");
  s.nodes.edit(n->id.index()).cordoned = cordoned;
  refresh_usable(s, n->id);
  return ok_status();
}

Status set_node_suspect(ClusterState& s, std::string_view name, bool suspect) {
  const Node* n = s.find_node(name);
  if (!n) return Error::not_found("no node named " + std::string(name) + " in the cluster");
  s.nodes.edit(n->id.index()).suspect = suspect;
  refresh_usable(s, n->id);
  return ok_status();
}

// --- Jobs ----------------------------------------------------------------------------------------------------

Status cancel_job(ClusterState& s, std::string_view name, Time now) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (!is_active(j.state))
    return Error::precondition("job " + j.spec.name + " already ended (" + job_state_name(j.state) + ")");
  if (j.state == JobState::kRunning) stop_run(s, j, now);
  j.held = false;
  transition(s, j, JobState::kCancelled, now, "cancelled by request", ReasonCode::kCancelled);
  return ok_status();
}

Status end_for_dependency(ClusterState& s, std::string_view name, std::string_view after, Time now) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (!is_waiting(j.state) || ever_ran(j))
    return Error::precondition("job " + j.spec.name + " is " + job_state_name(j.state) +
                               (ever_ran(j) ? " and has run" : "") + "; only a waiting job that never ran ends for a dependency");
  size_t which = j.spec.after.size();
  for (size_t i = 0; i < j.spec.after.size() && i < j.after.size(); ++i)
    if (j.spec.after[i].job == after) which = i;
  if (which == j.spec.after.size())
    return Error::precondition("job " + j.spec.name + " does not depend on a job named " + std::string(after));
  if (dependency_state(s.jobs[j.after[which].index()], j.spec.after[which].condition) != DependencyState::kNever)
    return Error::precondition("job " + j.spec.name + "'s dependency on " + std::string(after) + " can still hold");
  j.held = false;
  transition(s, j, JobState::kCancelled, now, dependency_never_text(s, j, which), ReasonCode::kDependencyNever);
  return ok_status();
}

Status finish_job(ClusterState& s, std::string_view name, Time now, bool succeeded, std::string reason) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (j.state != JobState::kRunning)
    return Error::precondition("job " + j.spec.name + " is not running (" + job_state_name(j.state) + ")");
  if (succeeded) {
    stop_run(s, j, now);
    transition(s, j, JobState::kSucceeded, now, reason.empty() ? "finished" : reason, ReasonCode::kFinished);
  } else {
    fail_run(s, j, now, reason.empty() ? "the job failed" : reason, ReasonCode::kFailed);
  }
  return ok_status();
}

Status end_remote_job(ClusterState& s, std::string_view name, Time now, bool succeeded, std::string reason) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (!j.spec.multicluster || !is_waiting(j.state))
    return Error::precondition("job " + j.spec.name + " is not a waiting job of a worker cluster (" + job_state_name(j.state) + ")");
  j.held = false;
  transition(s, j, succeeded ? JobState::kSucceeded : JobState::kFailed, now, std::move(reason),
             succeeded ? ReasonCode::kFinished : ReasonCode::kFailed);
  return ok_status();
}

Status exceed_time_limit(ClusterState& s, std::string_view name, Time now) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (j.state != JobState::kRunning)
    return Error::precondition("job " + j.spec.name + " is not running (" + job_state_name(j.state) + ")");
  const auto at = time_limit_at(j);
  if (!at) return Error::precondition("job " + j.spec.name + " has no time limit");
  if (*at > now)
    return Error::precondition("job " + j.spec.name + " reaches its time limit at " + std::to_string(*at) + ", not by " + std::to_string(now));
  const int64_t used = time_used(j, now);
  stop_run(s, j, now);
  transition(s, j, JobState::kFailed, now,
             "DeadlineExceeded: it ran " + std::to_string(used) + " s" + (j.time_limit_resets ? " in this run" : "") +
                 ", its time limit is " + std::to_string(j.time_limit_s) + " s; stopped, no retry",
             ReasonCode::kDeadlineExceeded);
  return ok_status();
}

Status fire_log_rule(ClusterState& s, std::string_view name, Time now, const LogRuleFiring& firing) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (j.state != JobState::kRunning)
    return Error::precondition("job " + j.spec.name + " is not running (" + job_state_name(j.state) + ")");
  if (!log_rule_pattern(j.spec.log_rules, firing.kind, firing.index))
    return Error::invalid("job " + j.spec.name + " has no rule " + log_rule_name(firing.kind, firing.index));
  const std::string why = log_rule_reason(j.spec.log_rules, firing);
  switch (firing.kind) {
    case LogRuleKind::kHung: fail_run(s, j, now, why, ReasonCode::kHung); break;
    case LogRuleKind::kRestart: fail_run(s, j, now, why, ReasonCode::kLogRestart); break;
    case LogRuleKind::kFail:
      stop_run(s, j, now);
      transition(s, j, JobState::kFailed, now, why + "; failed without retry", ReasonCode::kLogFail);
      break;
  }
  return ok_status();
}

// Declared in core/lifecycle/in_place.h; here beside fail_run, whose restart it is.
Status fall_back_from_in_place(ClusterState& s, std::string_view name, Time now, const std::string& why) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (j.state != JobState::kRunning)
    return Error::precondition("job " + j.spec.name + " is not running (" + job_state_name(j.state) + ")");
  if (j.membership_epoch == 0)
    return Error::precondition("job " + j.spec.name + " has not recovered in place in its current run");
  fail_run(s, j, now, why, ReasonCode::kNodeFailed);
  return ok_status();
}

Status time_out_start(ClusterState& s, std::string_view name, Time now, int64_t backoff_s, const std::string& why) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (j.state != JobState::kRunning)
    return Error::precondition("job " + j.spec.name + " is not running (" + job_state_name(j.state) + ")");
  if (backoff_s < 0) return Error::invalid("job " + j.spec.name + ": a start backoff of " + std::to_string(backoff_s) + " s");
  stop_run(s, j, now);
  ++j.preemptions;  // a run ended without using a retry, as a preemption's does: the next run is a new attempt
  ++j.start_timeouts;
  j.backoff_until = now + backoff_s;
  transition(s, j, JobState::kSuspended, now,
             "start timeout: " + why + "; requeued without using a retry, it may run again from t=" +
                 std::to_string(j.backoff_until) + " (backoff " + std::to_string(backoff_s) + " s after start timeout " +
                 std::to_string(j.start_timeouts) + ")",
             ReasonCode::kStartTimeout);
  return ok_status();
}

Status requeue_for_admission_check(ClusterState& s, std::string_view name, Time now, int64_t backoff_s,
                                   const std::string& check, const std::string& message) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (j.state != JobState::kRunning)
    return Error::precondition("job " + j.spec.name + " is not running (" + job_state_name(j.state) + ")");
  if (backoff_s < 0) return Error::invalid("job " + j.spec.name + ": an admission check backoff of " + std::to_string(backoff_s) + " s");
  stop_run(s, j, now);
  ++j.preemptions;  // a run ended without using a retry: the next run is a new attempt
  j.backoff_until = now + backoff_s;
  transition(s, j, JobState::kSuspended, now,
             "admission check " + check + " answered retry" + (message.empty() ? "" : ": " + message) +
                 "; requeued without using a retry, it may run again from t=" + std::to_string(j.backoff_until) +
                 " (backoff " + std::to_string(backoff_s) + " s)",
             ReasonCode::kAdmissionCheckRetry);
  return ok_status();
}

Status reject_by_admission_check(ClusterState& s, std::string_view name, Time now, const std::string& check,
                                 const std::string& message) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (j.state != JobState::kRunning)
    return Error::precondition("job " + j.spec.name + " is not running (" + job_state_name(j.state) + ")");
  stop_run(s, j, now);
  transition(s, j, JobState::kFailed, now,
             "admission check " + check + " rejected it" + (message.empty() ? "" : ": " + message) + "; no retry",
             ReasonCode::kAdmissionCheckRejected);
  return ok_status();
}

// --- Decisions -----------------------------------------------------------------------------------------------

Status admit_job(ClusterState& s, JobId id, const Placement& placement, bool borrowing, Time now, RefText reason) {
  if (id.index() >= s.jobs.size()) return Error::not_found("no job with id " + std::to_string(id.value));
  Job& j = s.jobs[id.index()];
  if (!is_waiting(j.state)) return Error::precondition("job " + j.spec.name + " is not waiting");
  charge(s.room, s.usage, s, j, placement);
  touch_nodes(s, placement, now);
  j.placement = placement;
  j.borrowing = borrowing;
  j.started_at = now;
  j.membership_epoch = 0;  // a new run starts a new membership (core/lifecycle/in_place.h)
  if (j.time_limit_resets) j.run_before_s = 0;  // each run has the whole limit (time_limit.h)
  transition(s, j, JobState::kRunning, now, std::move(reason), ReasonCode::kAdmitted);
  return ok_status();
}

Status resize_job(ClusterState& s, const ResizeDecision& d, Time now) {
  if (d.job.index() >= s.jobs.size()) return Error::not_found("no job with id " + std::to_string(d.job.value));
  Job& j = s.jobs[d.job.index()];
  if (j.state != JobState::kRunning) return Error::precondition("job " + j.spec.name + " is not running");
  if (!j.elastic()) return Error::precondition("job " + j.spec.name + " is not elastic; only elastic jobs resize");
  const size_t e = static_cast<size_t>(j.elastic_pod_set);
  if (d.placement.pod_sets.size() != j.pod_sets.size() || d.to < j.min_size() || d.to > j.max_size() ||
      d.placement.pod_sets[e].replicas.size() != static_cast<size_t>(d.to))
    return Error::invalid("resize of job " + j.spec.name + " to " + std::to_string(d.to) + " replicas: the size must be " +
                          std::to_string(j.min_size()) + ".." + std::to_string(j.max_size()) +
                          " and the placement must hold that many replicas of pod set " + j.pod_sets[e].name);
  const int from = j.size();
  stop_run(s, j, now);
  charge(s.room, s.usage, s, j, d.placement);
  touch_nodes(s, d.placement, now);
  j.placement = d.placement;
  j.borrowing = d.borrowing;
  j.started_at = now;
  j.reason = SharedText(d.reason);
  j.resizes.push_back({now, from, d.to, d.cause, j.reason});
  return ok_status();
}

Status preempt_job(ClusterState& s, JobId id, Time now, RefText reason, ReasonCode code) {
  if (id.index() >= s.jobs.size()) return Error::not_found("no job with id " + std::to_string(id.value));
  Job& j = s.jobs[id.index()];
  if (j.state != JobState::kRunning) return Error::precondition("job " + j.spec.name + " is not running");
  stop_run(s, j, now);
  ++j.preemptions;
  transition(s, j, JobState::kSuspended, now, std::move(reason), code);
  return ok_status();
}

Status apply_decision(ClusterState& s, const Decision& d, Time now) {
  return std::visit(
      Overloaded{
          [&](const AdmitDecision& a) { return admit_job(s, a.job, a.placement, a.borrowing, now, a.reason); },
          [&](const PreemptDecision& p) { return preempt_job(s, p.job, now, p.reason); },
          [&](const ResizeDecision& r) { return resize_job(s, r, now); },
      },
      d);
}

void explain_waiting(ClusterState& s, const std::vector<WaitingReason>& reasons) {
  // A job is written only when its explanation changed: most waiting jobs keep theirs from pass to pass, and
  // a write marks the job's chunk of the table changed, which the next view then copies (job_table.h, view_of).
  for (const WaitingReason& w : reasons) {
    if (w.job.index() >= s.jobs.size()) continue;
    const Job& seen = std::as_const(s.jobs)[w.job.index()];
    if (!is_waiting(seen.state)) continue;
    SharedText reason = w.text;
    if (seen.state == JobState::kSuspended && !seen.history.empty() && seen.history.back().to == JobState::kSuspended)
      reason = seen.history.back().reason.ref_text() + "; waiting: " + w.text.ref_text();
    if (seen.reason == reason && seen.reason_code == w.code && seen.feasible == w.feasible) continue;
    Job& j = s.jobs[w.job.index()];
    j.reason = std::move(reason);
    j.reason_code = w.code;
    j.feasible = w.feasible;
  }
}

Status start_locality_wait(ClusterState& s, JobId job, Time from) {
  if (job.index() >= s.jobs.size()) return Error::invalid("no job with id " + std::to_string(job.index()));
  Job& j = s.jobs[job.index()];
  if (!is_waiting(j.state))
    return Error::invalid("job " + j.spec.name + " is " + std::string(job_state_name(j.state)) +
                          ", not waiting: its locality wait cannot start");
  if (j.locality_wait_from)
    return Error::invalid("job " + j.spec.name + "'s locality wait started already at t=" + std::to_string(*j.locality_wait_from));
  j.locality_wait_from = from;
  return ok_status();
}

// --- Derived values ------------------------------------------------------------------------------------------

// Work done in `elapsed` seconds of running: elapsed * size / max for an elastic job (its throughput scales
// with its replicas), elapsed for any other.
static int64_t work_in(const Job& j, int64_t elapsed) {
  if (!j.elastic()) return elapsed;
  return elapsed * j.size() / j.max_size();
}

int64_t kept_work(const Job& j, Time now) {
  if (j.state != JobState::kRunning) return 0;
  int64_t elapsed = std::max<int64_t>(0, now - j.started_at);
  int64_t ci = j.spec.checkpoint_interval_s;
  return work_in(j, ci > 0 ? elapsed / ci * ci : elapsed);
}

int64_t run_time_for(const Job& j, int64_t work) {
  if (!j.elastic() || j.size() == 0) return work;
  const int64_t size = j.size(), max = j.max_size();
  return (work * max + size - 1) / size;
}

int64_t remaining_work(const Job& j, Time now) {
  if (!j.spec.duration_s) return 0;
  int64_t done = j.work_done_s + (j.state == JobState::kRunning ? work_in(j, std::max<int64_t>(0, now - j.started_at)) : 0);
  return std::max<int64_t>(0, *j.spec.duration_s - done);
}

RoomTable room_from_state(const ClusterState& s) { return s.room; }

// Marks (owner = job) or clears (owner = none) every node of the exclusive domains a placement uses.
static void mark_exclusive(RoomTable& room, const ClusterState& s, const Job& job, const Placement& p, JobId owner) {
  for (size_t i = 0; i < p.pod_sets.size() && i < job.pod_sets.size(); ++i) {
    int level = job.pod_sets[i].topology.exclusive_level;
    if (level < 0) continue;
    for (const auto& r : p.pod_sets[i].replicas) {
      int d = s.tree.ancestor(r.node, level);
      std::vector<int> stack = {d};
      while (!stack.empty()) {
        int x = stack.back();
        stack.pop_back();
        if (x < 0) continue;
        const auto& dom = s.tree.domains[x];
        // Clearing takes only this job's marks: after a node's layers changed (set_network_layers) two exclusive
        // jobs may share a domain, and one ending must not free the other's nodes.
        if (dom.children.empty() && dom.node.valid() && (owner.valid() || room[dom.node.index()].exclusive_owner == job.id))
          room[dom.node.index()].exclusive_owner = owner;
        for (int c : dom.children) stack.push_back(c);
      }
    }
  }
}

void charge(RoomTable& room, UsageTable& usage, const ClusterState& s, const Job& job, const Placement& p) {
  for (const auto& ps : p.pod_sets) {
    for (const auto& r : ps.replicas) {
      NodeRoom& nr = room[r.node.index()];
      nr.free -= ps.per_replica;
      for (int a : r.accelerators) nr.accelerators_free &= ~(uint64_t{1} << a);
      ++nr.replicas;
    }
    usage[job.team.index()][ps.type.index()] += ps.per_replica * static_cast<int64_t>(ps.replicas.size());
  }
  mark_exclusive(room, s, job, p, job.id);
}

void release(RoomTable& room, UsageTable& usage, const ClusterState& s, const Job& job, const Placement& p) {
  for (const auto& ps : p.pod_sets) {
    for (const auto& r : ps.replicas) {
      NodeRoom& nr = room[r.node.index()];
      nr.free += ps.per_replica;
      for (int a : r.accelerators) nr.accelerators_free |= uint64_t{1} << a;
      --nr.replicas;
    }
    usage[job.team.index()][ps.type.index()] -= ps.per_replica * static_cast<int64_t>(ps.replicas.size());
  }
  mark_exclusive(room, s, job, p, JobId{});
}

Status set_network_layers(ClusterState& s, const std::vector<NodeLayers>& changes) {
  // Checked before anything changes: an error leaves the state as it was.
  std::set<std::string> seen;
  for (const NodeLayers& c : changes) {
    if (!s.find_node(c.node)) return Error::not_found("no node named " + c.node + " in the cluster");
    if (!seen.insert(c.node).second) return Error::invalid("node " + c.node + " is given network layers twice");
    if (auto st = check_network_layers(c.layers); !st) return Error::invalid("node " + c.node + ": " + st.error().message);
  }
  for (const NodeLayers& c : changes) {
    Node& n = s.nodes.edit(s.find_node(c.node)->id.index());
    for (int l = 1; l <= kMaxNetworkLayers; ++l) n.labels.erase(network_layer_key(l));
    for (size_t l = 0; l < c.layers.size(); ++l) n.labels[network_layer_key(static_cast<int>(l) + 1)] = c.layers[l];
    n.topology = node_topology(s, n);
  }
  rebuild_tree(s);
  // Running jobs keep their nodes. A topology-exclusive one holds, from now on, the domain its replicas are in
  // under the new layers, so that the marks and their release at its end walk the same tree.
  for (NodeRoom& r : s.room) r.exclusive_owner = JobId{};
  for (JobId id : s.running_jobs.sorted()) {
    const Job& j = s.jobs[id.index()];
    mark_exclusive(s.room, s, j, j.placement, j.id);
  }
  return ok_status();
}

}  // namespace allot
