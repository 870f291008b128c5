// Job submission: every check a user's spec must pass before it joins the queue, with messages that say what
// was wrong and what is allowed. A rejected submission changes nothing.
#include <optional>
#include <set>

#include "core/model/array.h"
#include "core/model/dependency.h"
#include "core/lifecycle/job_restore.h"
#include "core/model/plans.h"
#include "core/model/request.h"
#include "core/model/state.h"
#include "core/lifecycle/time_limit.h"
#include "core/placement/topology_levels.h"
#include "core/quota/user_limits.h"

namespace allot {
namespace {

inline constexpr int kMaxReplicas = 100000;

std::string level_names(const ClusterState& s) {
  std::string out;
  for (const auto& l : s.levels) out += (out.empty() ? "" : ", ") + short_level(l);
  return out;
}

Result<int> level_index(const ClusterState& s, const std::string& name, const std::string& where) {
  auto l = find_level(s.levels, name);
  if (!l) return Error::invalid(where + ": unknown topology level '" + name + "'; levels: " + level_names(s));
  return *l;
}

Result<TopologyRequest> resolve_topology(const ClusterState& s, const TopologySpec& t, int replicas, const std::string& where) {
  TopologyRequest r;
  if (!t.required.empty() && !t.preferred.empty())
    return Error::invalid(where + ": topology takes required or preferred, not both");
  if (!t.required.empty() || !t.preferred.empty()) {
    auto l = level_index(s, t.required.empty() ? t.preferred : t.required, where);
    if (!l) return l.error();
    r.mode = t.required.empty() ? TopologyRequest::Mode::kPreferred : TopologyRequest::Mode::kRequired;
    r.level = *l;
  }
  if (t.slice) {
    auto l = level_index(s, t.slice->level, where + ", slice");
    if (!l) return l.error();
    if (t.slice->size < 1 || t.slice->size > replicas || replicas % t.slice->size != 0)
      return Error::invalid(where + ": slice size must divide the replica count (" + std::to_string(replicas) +
                            "), got " + std::to_string(t.slice->size));
    if (r.level >= 0 && *l < r.level)
      return Error::invalid(where + ": the slice level must be at or below the " +
                            std::string(r.mode == TopologyRequest::Mode::kRequired ? "required" : "preferred") + " level");
    r.slice_level = *l;
    r.slice_size = t.slice->size;
  }
  if (!t.exclusive.empty()) {
    auto l = level_index(s, t.exclusive, where + ", exclusive");
    if (!l) return l.error();
    r.exclusive_level = *l;
  }
  return r;
}

// Everything placement looks at on an empty cluster, and nothing else (not the team, not the name): the pod sets,
// and the plan whose nodes it is limited to.
std::string shape_key(const std::vector<PodSet>& pod_sets, PlanId plan) {
  std::string key = plan.valid() ? "plan " + std::to_string(plan.value) : "";
  for (const PodSet& ps : pod_sets) {
    const auto& a = ps.per_replica;
    const auto& t = ps.topology;
    key += "|" + std::to_string(ps.replicas) + (ps.min_replicas != ps.replicas ? "/" + std::to_string(ps.min_replicas) : "") + "," + (ps.type ? std::to_string(ps.type->index()) : "-") + "," +
           std::to_string(a.accelerators.value_or(-1)) + "," + std::to_string(a.vcpu_milli.value_or(-1)) + "," +
           std::to_string(a.memory_mib.value_or(-1)) + "," + (a.whole_node ? "w" : "p") + "," +
           std::to_string(static_cast<int>(t.mode)) + "," + std::to_string(t.level) + "," +
           std::to_string(t.slice_level) + "," + std::to_string(t.slice_size) + "," + std::to_string(t.exclusive_level);
  }
  return key;
}

}  // namespace

// `restored_priority`: a job restored from a snapshot keeps the weight it had, whether or not its class is
// still defined (a class may be removed once no active job uses it); otherwise the class must exist.
// `restored_plan`: restoring a snapshot, the plan the job was submitted on (its ID: the plan may since have ended,
// been deleted, or its name taken by a later plan), checked against the spec's plan name.
static Result<JobId> add_job(ClusterState& s, const JobSpec& spec, Time now, std::optional<int> restored_priority,
                             PlanId restored_plan = PlanId()) {
  if (spec.name.empty()) return Error::invalid("a job needs a name");
  if (spec.name.size() > 253) return Error::invalid("job name is longer than 253 characters");
  if (s.find_job(spec.name)) return Error::exists("a job named " + spec.name + " already exists");
  // Arrays (array.h): the submission is made into its tasks before it reaches here; task 0 checks the whole array.
  if (auto st = check_array(spec); !st) return st.error();
  if (spec.array && !spec.array->index)
    return Error::invalid("job " + spec.name + " is an array submission: its tasks are submitted, not it (core/model/array.h)");
  if (!restored_priority) {
    if (spec.array && *spec.array->index == 0) {
      if (auto st = check_array_names(s, spec); !st) return st.error();
    } else if (!spec.array && find_array(s, spec.name)) {
      return Error::exists("job " + spec.name + ": an array of that name exists");
    }
  }
  const Team* team = s.find_team(spec.team);
  if (!team) return Error::invalid("job " + spec.name + ": unknown team '" + spec.team + "'; teams: " + s.team_names());
  int priority = restored_priority.value_or(0);
  if (restored_priority) {
    if (priority < 0 || priority > 100)
      return Error::invalid("job " + spec.name + ": priority weight must be 0..100, got " + std::to_string(priority));
  } else if (!spec.priority.empty()) {
    priority = s.priority_weight(spec.priority);
    if (priority < 0)
      return Error::invalid("job " + spec.name + ": unknown priority class '" + spec.priority +
                            "'; priority classes: " + s.priority_class_names());
  }
  if (spec.pod_sets.empty()) return Error::invalid("job " + spec.name + " has no replicas to run");
  if (spec.max_retries < 0 || spec.max_retries > 1000)
    return Error::invalid("job " + spec.name + ": max_retries must be 0..1000");
  if (spec.checkpoint_interval_s < 0) return Error::invalid("job " + spec.name + ": checkpoint_interval must be >= 0");
  if (spec.duration_s && *spec.duration_s < 0) return Error::invalid("job " + spec.name + ": duration must be >= 0");
  if (auto st = check_log_rules(spec.log_rules); !st) return Error::invalid("job " + spec.name + ": " + st.error().message);
  if (!spec.user.empty())
    if (auto st = check_user_name(spec.user, "job " + spec.name); !st) return st.error();
  // The user's pending_jobs limit (user_limits.h) refuses a new submission; a restored job was accepted then.
  // Task 0 of an array counts every task of it, the other tasks none (they were counted with it).
  if (!restored_priority && (!spec.array || *spec.array->index == 0))
    if (auto st = check_pending_limit(s, *team, spec, spec.array ? spec.array->count : 1); !st) return st.error();
  // A restored job keeps the limit it was given (the snapshot says it); a new one is checked against the maxima.
  ResolvedTimeLimit limit;
  if (!restored_priority) {
    auto r = resolve_time_limit(s, *team, spec);
    if (!r) return r.error();
    limit = *r;
  }

  // A plan's nodes are never reserved, so a job naming a plan and a reservation could never run.
  if (!restored_priority && !spec.reservation.empty() && !spec.plan.empty())
    return Error::invalid("job " + spec.name + ": names plan " + spec.plan + " and reservation " + spec.reservation +
                          "; a plan's nodes are never reserved, so name one or the other");
  Job j;
  if (restored_priority && !spec.plan.empty()) {
    if (!restored_plan.valid() || restored_plan.index() >= s.plans.size() || s.plans[restored_plan.index()].spec.name != spec.plan)
      return Error::invalid("job " + spec.name + ": plan " + spec.plan + " is not the plan with the recorded ID");
    j.plan = restored_plan;
  } else if (!spec.plan.empty()) {
    const Plan* plan = s.find_plan(spec.plan);
    if (!plan) return Error::invalid("job " + spec.name + ": unknown plan '" + spec.plan + "'; plans: " + s.plan_names());
    if (plan->state == PlanState::kEnding || plan->state == PlanState::kExpired)
      return Error::precondition("job " + spec.name + ": plan " + spec.plan + " is " + plan_state_name(plan->state) +
                                 "; its nodes take no new work. Name a Scheduled or Active plan, or none");
    j.plan = plan->id;
  }
  // A reservation it names must exist and admit it (reservations.h); a restored job keeps it whatever became of
  // the reservation since (it waits, reason reservation_ended, when it is gone).
  if (!restored_priority)
    if (auto st = check_named_reservation(s, spec, team->id); !st) return st.error();
  // A restored job keeps the IDs its names were resolved to at submission (the snapshot says them, and the names
  // may mean other jobs by now); a new one resolves them here (dependency.h).
  if (!restored_priority) {
    auto after = resolve_dependencies(s, spec, team->id);
    if (!after) return after.error();
    j.after = std::move(*after);
    j.depends = !j.after.empty();
  }
  j.spec = spec;
  j.team = team->id;
  // A pod set that asks for nothing (a manifest without resource requests) gets the team's default request,
  // as a LimitRange default would give it; without one it is refused, naming the setting.
  for (auto& ps : j.spec.pod_sets) {
    if (!ps.per_replica.asks_nothing()) continue;
    if (team->spec.default_request.asks_nothing())
      return Error::invalid("job " + spec.name + ", pod set " + ps.name + ": asks for no resources, and team " + spec.team +
                            " has no default_request; give per_replica (a manifest: resources.requests or limits), or ask "
                            "an admin to set the team's default_request (docs/teams-and-policy.md)");
    ps.per_replica = team->spec.default_request;
  }
  j.priority = priority;
  j.time_limit_s = limit.limit_s;
  j.time_limit_resets = limit.resets_on_restart;
  std::set<std::string> names;
  for (const auto& ps : j.spec.pod_sets) {
    std::string where = "job " + spec.name + ", pod set " + ps.name;
    if (!names.insert(ps.name).second) return Error::invalid(where + " is named twice");
    if (ps.replicas < 1 || ps.replicas > kMaxReplicas)
      return Error::invalid(where + ": replicas must be 1.." + std::to_string(kMaxReplicas) + ", got " +
                            std::to_string(ps.replicas));
    PodSet p;
    p.name = ps.name;
    p.replicas = ps.replicas;
    p.min_replicas = ps.replicas;
    if (ps.min_replicas) {
      if (*ps.min_replicas < 1 || *ps.min_replicas > ps.replicas)
        return Error::invalid(where + ": min replicas must be 1.." + std::to_string(ps.replicas) + " (the max), got " +
                              std::to_string(*ps.min_replicas));
      if (j.elastic())
        return Error::invalid(where + ": only one pod set of a job may be elastic (" +
                              j.pod_sets[static_cast<size_t>(j.elastic_pod_set)].name + " already is)");
      if (*ps.min_replicas < ps.replicas) {
        p.min_replicas = *ps.min_replicas;
        j.elastic_pod_set = static_cast<int>(j.pod_sets.size());
      }
    }
    p.per_replica = ps.per_replica;
    if (!ps.instance_type.empty()) {
      auto type = s.catalog.lookup(ps.instance_type);
      if (!type) return Error::invalid(where + ": " + type.error().message);
      p.type = *type;
      auto amount = resolve_replica(s.catalog.at(*type), ps.per_replica);
      if (!amount) return Error::invalid(where + ": " + amount.error().message);
    } else if (ps.per_replica.instances) {
      return Error::invalid(where + ": instances is for allocations; a replica asks for whole_node");
    } else if (!ps.per_replica.whole_node && !ps.per_replica.accelerators && !ps.per_replica.vcpu_milli &&
               !ps.per_replica.memory_mib) {
      return Error::invalid(where + ": per_replica asks for nothing; give accelerators, vcpu, memory_gib or whole_node");
    }
    auto topo = resolve_topology(s, ps.topology, ps.replicas, where);
    if (!topo) return topo.error();
    // Every size an elastic pod set takes must divide into whole slices; sizes in between that do not are
    // skipped, but the smallest must be one.
    if (p.min_replicas != p.replicas && topo->slice_size > 0 && p.min_replicas % topo->slice_size != 0)
      return Error::invalid(where + ": min replicas (" + std::to_string(p.min_replicas) +
                            ") must be a multiple of the slice size (" + std::to_string(topo->slice_size) + ")");
    p.topology = *topo;
    j.pod_sets.push_back(std::move(p));
  }
  j.shape = s.shape_ids.try_emplace(shape_key(j.pod_sets, j.plan), static_cast<uint32_t>(s.shape_ids.size())).first->second;
  j.id = JobId(static_cast<uint32_t>(s.jobs.size()));
  j.arrival = s.next_arrival++;
  j.submitted_at = now;
  // After earlier jobs of this name (ClusterState::attempts_used), or after every folded one when the name is
  // not listed (it may have been folded away: ClusterState::attempts_folded).
  if (auto used = s.attempts_used.find(spec.name); used != s.attempts_used.end()) {
    j.attempt_base = used->second;
  } else {
    j.attempt_base = s.attempts_folded;
    j.attempt_folded = s.attempts_folded;  // not shown to people: a name never used starts at attempt 0 (model.h)
  }
  j.waiting_since = now;
  j.state = JobState::kPending;
  j.reason = s.submitted_reason;
  if (j.spec.multicluster) {  // the manager's scheduler passes it over (start_timeout.h, passed_over)
    j.reason = std::string("waiting to be dispatched to a worker cluster");
    j.reason_code = ReasonCode::kDispatched;
  }
  j.history.push_back({now, JobState::kPending, JobState::kPending, s.submitted_history});
  if (j.spec.array) j.array = note_array_task(s, j);
  s.job_by_name.insert_or_assign(spec.name, j.id);
  s.jobs.push_back(std::move(j));
  index_new_job(s, s.jobs.back());
  return s.jobs.back().id;
}

Result<JobId> submit_job(ClusterState& s, const JobSpec& spec, Time now) { return add_job(s, spec, now, std::nullopt); }

Result<JobId> restore_submitted_job(ClusterState& s, const JobSpec& spec, Time submitted_at, int priority, PlanId plan) {
  return add_job(s, spec, submitted_at, priority, plan);
}

}  // namespace allot
