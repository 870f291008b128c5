#include "view/state_json.h"

#include "core/model/array.h"
#include "core/model/dependency.h"
#include "core/model/overloaded.h"

#include "core/model/plans.h"
#include "core/quota/quota.h"
#include "core/lifecycle/time_limit.h"
#include "core/placement/topology_levels.h"

namespace allot::view {
using nlohmann::json;

namespace {

json amount(int64_t v, int64_t unit) {
  if (v % unit == 0) return v / unit;
  return static_cast<double>(v) / static_cast<double>(unit);
}

}  // namespace

json request_json(const AmountSpec& a) {
  json o = json::object();
  if (a.whole_node) o["whole_node"] = true;
  if (a.accelerators) o["accelerators"] = *a.accelerators;
  if (a.vcpu_milli) o["vcpu"] = amount(*a.vcpu_milli, 1000);
  if (a.memory_mib) o["memory_gib"] = amount(*a.memory_mib, 1024);
  return o;
}

json resources_json(const Resources& r) {
  return {{"accelerators", r.accelerators}, {"vcpu", amount(r.vcpu_milli, 1000)}, {"memory_gib", amount(r.memory_mib, 1024)}};
}

// Ranks count over the whole job, pod set after pod set (0..N-1), as the RANK its processes get
// (heartbeat_board.cpp numbers them the same way).
json placement_json(const ClusterState& s, const Placement& p) {
  json out = json::array();
  int rank = 0;
  for (const auto& ps : p.pod_sets) {
    json replicas = json::array();
    for (const auto& r : ps.replicas)
      replicas.push_back({{"rank", rank++},
                          {"node", s.nodes[r.node.index()].name},
                          {"accelerators", r.accelerators},
                          {"numa_domains", r.numa_domains},
                          {"cpus", r.cpus}});
    out.push_back({{"instance_type", s.catalog.at(ps.type).name},
                   {"per_replica", resources_json(ps.per_replica)},
                   {"replicas", replicas}});
  }
  return out;
}

json job_json(const ClusterState& s, const Job& j, bool with_history, Times times) {
  json nodes = json::array();
  for (NodeId n : j.placement.nodes()) nodes.push_back(s.nodes[n.index()].name);
  json o = {{"name", j.spec.name},
            {"team", s.teams[j.team.index()].spec.name},
            {"priority", j.spec.priority},
            {"priority_weight", j.priority},
            // A class removed from the policy after the job ended (an active job's class cannot be removed).
            {"priority_class_deleted", !j.spec.priority.empty() && s.priority_weight(j.spec.priority) < 0},
            {"state", job_state_name(j.state)},
            {"reason", j.reason},
            {"reason_code", reason_code_name(j.reason_code)},
            {"feasible", j.feasible},
            {"submitted_at", time_json(j.submitted_at, times)},
            {"nodes", nodes},
            {"node_count", nodes.size()},
            {"borrowing", j.borrowing},
            {"preemptions", j.preemptions},
            {"restarts", j.restarts},
            {"work_done_s", j.work_done_s},
            {"placement", placement_json(s, j.placement)}};
  if (!j.spec.user.empty()) o["user"] = j.spec.user;  // who submitted it (core/quota/user_limits.h); absent: no user
  if (j.held) o["held"] = true;
  if (j.spec.multicluster) {  // a manager's job (docs/multicluster.md): where its copy is
    auto ref = [](const RemoteCopyRef& c) { return c.worker.empty() ? json(nullptr) : json{{"worker", c.worker}, {"copy", c.copy}}; };
    json stale = json::array();
    for (const auto& c : j.remote.stale) stale.push_back(ref(c));
    o["cluster"] = {{"copy", ref(j.remote.live)}, {"last_copy", ref(j.remote.last)}, {"running", j.remote.running},
                    {"dispatches", j.remote.dispatches}, {"stale", std::move(stale)}};
  }
  // Gang start timeouts (core/lifecycle/start_timeout.h): how many, and while waiting, when its backoff ends.
  if (j.start_timeouts > 0) {
    o["start_timeouts"] = j.start_timeouts;
    if (is_waiting(j.state)) o["backoff_until"] = time_json(j.backoff_until, times);
  }
  // Recovery in place (core/lifecycle/in_place.h): the mode and bound, the current run's membership epoch, every recovery.
  if (j.spec.recovery == Recovery::kInPlace) {
    json rec = {{"mode", recovery_name(j.spec.recovery)}, {"timeout_s", j.spec.recovery_bound_s()},
                {"membership_epoch", j.membership_epoch}};
    if (!j.spec.membership_signal.empty()) rec["signal"] = j.spec.membership_signal;
    json list = json::array();
    for (const auto& r : j.recoveries)
      list.push_back({{"at", time_json(r.at, times)}, {"node", r.node}, {"epoch", r.epoch}, {"replicas", r.replicas}});
    rec["recoveries"] = std::move(list);
    o["recovery"] = std::move(rec);
  }
  o["labels"] = j.spec.labels;
  if (j.state == JobState::kRunning) o["started_at"] = time_json(j.started_at, times);
  if (j.spec.duration_s) o["duration_s"] = *j.spec.duration_s;
  if (j.time_limit_s > 0) o["time_limit_s"] = j.time_limit_s;  // resolved: its own, or its team's or class's default
  if (!j.spec.plan.empty()) o["plan"] = j.spec.plan;
  // The reservation it names (its spec key `reservation`; the view's `reservation` is the backfill reservation it holds).
  if (!j.spec.reservation.empty()) o["uses_reservation"] = j.spec.reservation;
  // A task of a job array (core/model/array.h): its array, index, and the array's count and parallelism.
  if (j.spec.array && j.spec.array->index)
    o["array"] = {{"name", j.spec.array->name}, {"index", *j.spec.array->index}, {"count", j.spec.array->count},
                  {"parallel", j.spec.array->parallel}};
  // Dependencies (core/model/dependency.h): each job named, its condition and whether it holds, waits or never will (a
  // job that has run no longer looks at them: every one reads as it is now). Absent without any.
  if (j.depends) {
    json after = json::array();
    for (size_t i = 0; i < j.after.size() && i < j.spec.after.size(); ++i) {
      const Job& target = s.jobs[j.after[i].index()];
      const DependencyCondition c = j.spec.after[i].condition;
      json e = {{"job", j.spec.after[i].job}, {"condition", dependency_condition_name(c)},
                {"state", dependency_state_name(dependency_state(target, c))}};
      if (!target.compacted) e["job_state"] = job_state_name(target.state);
      after.push_back(std::move(e));
    }
    o["after"] = std::move(after);
  }
  if (!j.spec.container.empty()) {
    // The container as the spec resolved it (docs/jobs.md, "Images"); shm_mib absent: the default per replica.
    const ContainerSpec& c = j.spec.container;
    json vols = json::array();
    for (const auto& v : c.volumes) vols.push_back({{"host_path", v.host_path}, {"path", v.path}, {"read_only", v.read_only}});
    o["container"] = {{"image", c.image}, {"pull_policy", pull_policy_name(c.pull_policy)}, {"volumes", vols}};
    if (c.shm_mib) o["container"]["shm_mib"] = *c.shm_mib;
    if (!c.args.empty()) o["container"]["args"] = c.args;  // absent: the image's own CMD (or none after a command)
  }
  json ps = json::array();
  for (const auto& p : j.spec.pod_sets) {
    json t = json::object();
    if (!p.topology.required.empty()) t["required"] = short_level(canonical_level(p.topology.required));
    if (!p.topology.preferred.empty()) t["preferred"] = short_level(canonical_level(p.topology.preferred));
    if (p.topology.slice) t["slice"] = {{"level", short_level(canonical_level(p.topology.slice->level))}, {"size", p.topology.slice->size}};
    if (!p.topology.exclusive.empty()) t["exclusive"] = short_level(canonical_level(p.topology.exclusive));
    ps.push_back({{"name", p.name}, {"replicas", p.replicas}, {"instance_type", p.instance_type}, {"topology", t},
                  {"per_replica", request_json(p.per_replica)}});
    if (p.min_replicas) ps.back()["min_replicas"] = *p.min_replicas;
  }
  o["pod_sets"] = ps;
  o["max_retries"] = j.spec.max_retries;
  o["retries_used"] = j.restarts;  // restarts after failures are what max_retries bounds (core/model/state.cpp)
  // Only elastic jobs say so, so that fixed jobs read as they always did.
  if (j.elastic()) {
    o["elastic"] = {{"pod_set", j.pod_sets[static_cast<size_t>(j.elastic_pod_set)].name},
                    {"min", j.min_size()},
                    {"max", j.max_size()},
                    {"current", j.size()}};
    json r = json::array();
    for (const auto& x : j.resizes)
      r.push_back({{"at", time_json(x.at, times)}, {"from", x.from}, {"to", x.to}, {"cause", resize_cause_name(x.cause)}, {"reason", x.reason}});
    o["resizes"] = r;
  }
  if (with_history) {
    json h = json::array();
    for (const auto& t : j.history)
      h.push_back({{"at", time_json(t.at, times)}, {"from", job_state_name(t.from)}, {"to", job_state_name(t.to)}, {"reason", t.reason}});
    o["history"] = h;
  }
  return o;
}

void add_time_limit(json& view, const Job& j, Time now, Times times) {
  const auto left = time_left(j, now);
  if (!left) return;
  view["time_limit_s"] = j.time_limit_s;
  view["time_used_s"] = time_used(j, now);
  view["time_left_s"] = *left;
  if (j.time_limit_resets) view["time_limit_resets_on_restart"] = true;
  if (auto at = time_limit_at(j)) view["time_limit_at"] = time_json(*at, times);
}

// A team's quota on one type: "unlimited" for the resources its allocation leaves unlimited.
static json quota_json(const Resources& r, ResourceSet unlimited) {
  json j = resources_json(r);
  if (unlimited.has(Resource::kVcpu)) j["vcpu"] = "unlimited";
  if (unlimited.has(Resource::kMemory)) j["memory_gib"] = "unlimited";
  return j;
}

Resources team_usage_total(const ClusterState& s, TeamId team) {
  Resources r;
  for (const auto& u : s.usage[team.index()]) r += u;
  return r;
}

Resources team_borrowed_total(const ClusterState& s, TeamId team) {
  Resources r;
  for (size_t t = 0; t < s.catalog.size(); ++t) r += borrowed(s, s.usage, team, TypeId(static_cast<uint32_t>(t)));
  return r;
}

Resources team_lent_total(const ClusterState& s, TeamId team) {
  Resources r;
  for (size_t t = 0; t < s.catalog.size(); ++t) r += lent_by_team(s, s.usage, TypeId(static_cast<uint32_t>(t)))[team.index()];
  return r;
}

Resources team_nominal_total(const ClusterState& s, TeamId team) {
  Resources r;
  for (const auto& n : s.teams[team.index()].nominal) r += n;
  return r;
}

json team_containers_json(const TeamContainerSettings& c) {
  json caps = json::array();
  for (Capability cap : c.capabilities) caps.push_back(capability_name(cap));
  json o = {{"host_paths", c.host_paths}, {"capabilities", caps}};
  if (!c.registry_auth_file.empty()) o["registry_auth_file"] = c.registry_auth_file;
  return o;
}

json team_json(const ClusterState& s, const Team& t) {
  json alloc = json::array();
  for (const auto& a : t.spec.allocation) {
    json e = {{"instance_type", a.instance_type}};
    if (a.amount.instances) e["instances"] = *a.amount.instances;
    if (a.amount.accelerators) e["accelerators"] = *a.amount.accelerators;
    if (a.amount.vcpu_milli) e["vcpu"] = amount(*a.amount.vcpu_milli, 1000);
    if (a.amount.memory_mib) e["memory_gib"] = amount(*a.amount.memory_mib, 1024);
    if (a.amount.vcpu_unlimited) e["vcpu"] = "unlimited";
    if (a.amount.memory_unlimited) e["memory_gib"] = "unlimited";
    alloc.push_back(e);
  }
  // Per instance type, since amounts of different types do not add up (8 H100s and 4 A10Gs are not 12 of
  // anything): the types the team has quota for or uses.
  json types = json::array();
  for (size_t ty = 0; ty < s.catalog.size(); ++ty) {
    const TypeId type(static_cast<uint32_t>(ty));
    const Resources nominal = ty < t.nominal.size() ? t.nominal[ty] : Resources{};
    const Resources usage = s.usage[t.id.index()][ty];
    const ResourceSet unlimited = ty < t.unlimited.size() ? t.unlimited[ty] : ResourceSet{};
    if (nominal.is_zero() && usage.is_zero() && unlimited.empty()) continue;
    types.push_back({{"instance_type", s.catalog.at(type).name},
                     {"nominal", quota_json(nominal, unlimited)},
                     {"max", quota_json(team_max(t, type), unlimited)},
                     {"usage", resources_json(usage)},
                     {"borrowed", resources_json(borrowed(s, s.usage, t.id, type))},
                     {"lent", resources_json(lent_by_team(s, s.usage, type)[t.id.index()])}});
  }
  const Share share = fair_share_value(s, s.usage, t.id);
  int pending = 0, running = 0, suspended = 0;
  for (const Job& j : s.jobs) {
    if (j.team != t.id) continue;
    pending += j.state == JobState::kPending;
    running += j.state == JobState::kRunning;
    suspended += j.state == JobState::kSuspended;
  }
  json o = {{"name", t.spec.name},
            {"fair_share_weight", t.spec.fair_share_weight},
            {"allocation", alloc},
            {"sharing", {{"strategy", sharing_strategy_name(t.spec.strategy)}, {"borrow_limit", t.spec.borrow_limit}}},
            {"preempt_team_tasks", preempt_team_tasks_name(t.spec.preempt_team_tasks)},
            {"nominal", resources_json(team_nominal_total(s, t.id))},
            {"usage", resources_json(team_usage_total(s, t.id))},
            {"borrowed", resources_json(team_borrowed_total(s, t.id))},
            {"lent", resources_json(team_lent_total(s, t.id))},
            {"instance_types", types},
            // borrowed dominant share / weight (core/quota/quota.h); null when the weight is 0 (infinite)
            {"share", share.den == 0 ? json(nullptr) : json(static_cast<double>(share.num) / static_cast<double>(share.den))},
            {"jobs", {{"pending", pending}, {"running", running}, {"suspended", suspended}}}};
  if (!t.spec.containers.empty()) o["containers"] = team_containers_json(t.spec.containers);
  if (!t.spec.default_request.asks_nothing()) o["default_request"] = request_json(t.spec.default_request);
  // The team's cohort group (docs/scheduling.md, "Cohort trees"); absent when none.
  if (!t.spec.group.empty()) o["group"] = t.spec.group;
  // Time limits (docs/teams-and-policy.md, "Time limits"), in the keys of the teams file; absent when unset.
  const TimeLimitSettings& tl = t.spec.time_limits;
  if (tl.default_s) o["default_time_limit"] = *tl.default_s;
  if (tl.max_s) o["max_time_limit"] = *tl.max_s;
  if (tl.resets_on_restart) o["time_limit_resets_on_restart"] = true;
  // Per-user limits (docs/teams-and-policy.md, "Per-user limits"), in the keys of the teams file; absent when none.
  if (!t.spec.user_limits.empty()) {
    json limits = json::array();
    for (const UserLimitSpec& l : t.spec.user_limits) {
      json e = {{"user", l.user}};
      if (l.running_jobs) e["running_jobs"] = *l.running_jobs;
      if (l.pending_jobs) e["pending_jobs"] = *l.pending_jobs;
      if (!l.accelerators.empty()) e["accelerators"] = l.accelerators;
      limits.push_back(std::move(e));
    }
    o["user_limits"] = std::move(limits);
  }
  return o;
}

json node_json(const ClusterState& s, const Node& n) {
  const NodeRoom& r = s.room[n.id.index()];
  json topo = json::object();
  for (size_t l = 0; l + 1 < s.levels.size(); ++l)
    if (!n.topology[l].empty()) topo[short_level(s.levels[l])] = n.topology[l];
  json o = {{"name", n.name},
            {"instance_type", s.catalog.at(n.type).name},
            {"instance_group", n.instance_group},
            {"health", node_health_name(n.health)},
            {"cordoned", n.cordoned},
            {"labels", n.labels},
            {"topology", topo},
            {"capacity", resources_json(s.catalog.at(n.type).capacity())},
            {"free", resources_json(r.free)},
            {"replicas", r.replicas}};
  if (n.plan.valid()) o["plan"] = s.plans[n.plan.index()].spec.name;
  if (const Reservation* held = reservation_holding(s, n.id)) {  // only nodes an Active reservation holds
    o["reservation"] = {{"name", held->spec.name}, {"team", held->spec.team}};
    if (!held->spec.user.empty()) o["reservation"]["user"] = held->spec.user;
  }
  return o;
}

json plan_json(const ClusterState& s, const Plan& p, Times times) {
  json nodes = json::array();
  for (const Node& n : s.nodes)
    if (!n.removed && n.plan == p.id) nodes.push_back(n.name);
  json jobs = json::array();
  for (const Job& j : s.jobs)
    if (j.plan == p.id && is_active(j.state)) jobs.push_back(j.spec.name);
  return {{"name", p.spec.name},
          {"instance_type", s.catalog.at(p.type).name},
          {"count", p.spec.count},
          {"start", time_json(p.spec.start, times)},
          {"end", time_json(p.spec.end, times)},
          {"grace_s", p.spec.grace_s},
          {"team", p.spec.team},
          {"labels", p.spec.labels},
          {"state", plan_state_name(p.state)},
          {"capacity", resources_json(s.catalog.at(p.type).capacity() * static_cast<int64_t>(p.spec.count))},
          {"nodes", nodes},
          {"nodes_joined", nodes.size()},
          {"jobs", jobs}};
}

json decision_json(const ClusterState& s, const Decision& d) {
  return std::visit(
      Overloaded{
          [&](const AdmitDecision& a) -> json {
            return {{"kind", "admit"},
                    {"job", s.jobs[a.job.index()].spec.name},
                    {"reason", a.reason.str()},
                    {"borrowing", a.borrowing},
                    {"placement", placement_json(s, a.placement)}};
          },
          [&](const PreemptDecision& p) -> json {
            return {{"kind", "preempt"},
                    {"job", s.jobs[p.job.index()].spec.name},
                    {"reason", p.reason.str()},
                    {"rule", preemption_rule_name(p.rule)},
                    {"preemptor", s.jobs[p.preemptor.index()].spec.name}};
          },
          [&](const ResizeDecision& r) -> json {
            json out = {{"kind", "resize"},
                        {"job", s.jobs[r.job.index()].spec.name},
                        {"reason", r.reason.str()},
                        {"cause", resize_cause_name(r.cause)},
                        {"from", r.from},
                        {"to", r.to},
                        {"borrowing", r.borrowing},
                        {"placement", placement_json(s, r.placement)}};
            if (r.for_job.valid()) out["for"] = s.jobs[r.for_job.index()].spec.name;
            if (r.cause == ResizeCause::kShrink) out["rule"] = preemption_rule_name(r.rule);
            return out;
          },
      },
      d);
}

json array_json(const ClusterState& s, const ArrayTasks& a, const std::function<bool(const Job&)>& counted, Times times) {
  const ArrayCounts c = count_array(s, a, counted);
  json tasks = json::object();
  for (JobState st : kJobStates) tasks[job_state_name(st)] = c.by_state[static_cast<size_t>(st)];
  json o = {{"name", a.name},
            {"kind", "array"},
            {"state", c.total ? job_state_name(array_state(c)) : "none"},
            {"array", {{"count", c.count}, {"parallel", c.parallel}}},
            {"tasks", std::move(tasks)},
            {"task_count", c.total},
            {"summary", array_counts_text(c)}};
  if (c.total) {
    const Job& first = s.jobs[c.first.index()];
    o["team"] = s.teams[c.team.index()].spec.name;
    o["priority"] = first.spec.priority;
    o["submitted_at"] = time_json(first.submitted_at, times);
  }
  return o;
}

}  // namespace allot::view
