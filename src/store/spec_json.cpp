#include "store/spec_json.h"

#include "config/after_json.h"
#include "config/log_rules_json.h"
#include "config/policy_json.h"

#include <stdexcept>

namespace allot::store {
using nlohmann::json;

namespace {

void put(json& j, const char* key, const std::optional<int64_t>& v) {
  if (v) j[key] = *v;
}
std::optional<int64_t> get_opt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<int64_t>();
}
template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  return it == j.end() ? fallback : it->get<T>();
}

SharingStrategy strategy_from(const std::string& s) {
  for (auto v : {SharingStrategy::kLendAndBorrow, SharingStrategy::kLend, SharingStrategy::kDontLend})
    if (s == sharing_strategy_name(v)) return v;
  throw std::invalid_argument("unknown sharing strategy " + s);
}
PreemptTeamTasks preempt_from(const std::string& s) {
  for (auto v : {PreemptTeamTasks::kLowerPriority, PreemptTeamTasks::kNever})
    if (s == preempt_team_tasks_name(v)) return v;
  throw std::invalid_argument("unknown preempt_team_tasks " + s);
}
TaskPrioritization prioritization_from(const std::string& s) {
  if (auto v = parse_task_prioritization(s)) return *v;
  throw std::invalid_argument("unknown task_prioritization " + s);
}
IdleCompute idle_from(const std::string& s) {
  if (auto v = parse_idle_compute(s)) return *v;
  throw std::invalid_argument("unknown idle_compute " + s);
}

PullPolicy pull_policy_from(const std::string& s) {
  for (PullPolicy v : kPullPolicies)
    if (s == pull_policy_name(v)) return v;
  throw std::invalid_argument("unknown pull policy " + s);
}
Capability capability_from(const std::string& s) {
  for (int i = 0; i < kCapabilityCount; ++i)
    if (s == capability_name(static_cast<Capability>(i))) return static_cast<Capability>(i);
  throw std::invalid_argument("unknown capability " + s);
}

// A job's container, present in records of jobs with an image only (older records have none).
json to_json(const ContainerSpec& c) {
  json vols = json::array();
  for (const auto& v : c.volumes) vols.push_back({{"host_path", v.host_path}, {"path", v.path}, {"read_only", v.read_only}});
  json j = {{"image", c.image}, {"pull_policy", pull_policy_name(c.pull_policy)}, {"volumes", vols}};
  if (c.shm_mib) j["shm_mib"] = *c.shm_mib;
  if (!c.args.empty()) j["args"] = c.args;  // absent without args, and in records written before them
  return j;
}
ContainerSpec container_from_json(const json& j) {
  ContainerSpec c;
  c.image = j.at("image").get<std::string>();
  c.pull_policy = pull_policy_from(j.at("pull_policy").get<std::string>());
  c.shm_mib = get_opt(j, "shm_mib");
  for (const auto& v : j.at("volumes"))
    c.volumes.push_back({v.at("host_path").get<std::string>(), v.at("path").get<std::string>(), v.at("read_only").get<bool>()});
  c.args = get_or<std::vector<std::string>>(j, "args", {});
  return c;
}

// A team's container settings, present in records of teams that have some only.
json to_json(const TeamContainerSettings& c) {
  json caps = json::array();
  for (Capability cap : c.capabilities) caps.push_back(capability_name(cap));
  json j = {{"host_paths", c.host_paths}, {"capabilities", caps}};
  if (!c.registry_auth_file.empty()) j["registry_auth_file"] = c.registry_auth_file;
  return j;
}
TeamContainerSettings team_containers_from_json(const json& j) {
  TeamContainerSettings c;
  c.host_paths = j.at("host_paths").get<std::vector<std::string>>();
  for (const auto& cap : j.at("capabilities")) c.capabilities.push_back(capability_from(cap.get<std::string>()));
  c.registry_auth_file = get_or<std::string>(j, "registry_auth_file", "");
  return c;
}

json to_json(const TopologySpec& t) {
  json j = json::object();
  if (!t.required.empty()) j["required"] = t.required;
  if (!t.preferred.empty()) j["preferred"] = t.preferred;
  if (t.slice) j["slice"] = {{"level", t.slice->level}, {"size", t.slice->size}};
  if (!t.exclusive.empty()) j["exclusive"] = t.exclusive;
  return j;
}
TopologySpec topology_from_json(const json& j) {
  TopologySpec t;
  t.required = get_or<std::string>(j, "required", "");
  t.preferred = get_or<std::string>(j, "preferred", "");
  if (j.contains("slice")) t.slice = SliceSpec{j.at("slice").at("level").get<std::string>(), j.at("slice").at("size").get<int>()};
  t.exclusive = get_or<std::string>(j, "exclusive", "");
  return t;
}

}  // namespace

NodeHealth node_health_from_name(const std::string& s) {
  for (auto v : {NodeHealth::kSchedulable, NodeHealth::kUnschedulable, NodeHealth::kUnschedulablePendingReboot,
                 NodeHealth::kUnschedulablePendingReplacement})
    if (s == node_health_name(v)) return v;
  throw std::invalid_argument("unknown node health " + s);
}

json to_json(const Resources& r) {
  return {{"accelerators", r.accelerators}, {"vcpu_milli", r.vcpu_milli}, {"memory_mib", r.memory_mib}};
}
Resources resources_from_json(const json& j) {
  return {j.at("accelerators").get<int64_t>(), j.at("vcpu_milli").get<int64_t>(), j.at("memory_mib").get<int64_t>()};
}

json to_json(const AmountSpec& a) {
  json j = json::object();
  put(j, "instances", a.instances);
  put(j, "accelerators", a.accelerators);
  put(j, "vcpu_milli", a.vcpu_milli);
  put(j, "memory_mib", a.memory_mib);
  if (a.whole_node) j["whole_node"] = true;
  if (a.vcpu_unlimited) j["vcpu_unlimited"] = true;
  if (a.memory_unlimited) j["memory_unlimited"] = true;
  return j;
}
AmountSpec amount_from_json(const json& j) {
  AmountSpec a;
  a.instances = get_opt(j, "instances");
  a.accelerators = get_opt(j, "accelerators");
  a.vcpu_milli = get_opt(j, "vcpu_milli");
  a.memory_mib = get_opt(j, "memory_mib");
  a.whole_node = get_or(j, "whole_node", false);
  a.vcpu_unlimited = get_or(j, "vcpu_unlimited", false);
  a.memory_unlimited = get_or(j, "memory_unlimited", false);
  return a;
}

json to_json(const TeamSpec& t) {
  json alloc = json::array();
  for (const auto& a : t.allocation) alloc.push_back({{"instance_type", a.instance_type}, {"amount", to_json(a.amount)}});
  json j = {{"name", t.name},
            {"fair_share_weight", t.fair_share_weight},
            {"allocation", alloc},
            {"strategy", sharing_strategy_name(t.strategy)},
            {"borrow_limit", t.borrow_limit},
            {"preempt_team_tasks", preempt_team_tasks_name(t.preempt_team_tasks)}};
  if (!t.containers.empty()) j["containers"] = to_json(t.containers);  // absent before teams had container settings
  if (!t.default_request.asks_nothing()) j["default_request"] = to_json(t.default_request);  // absent: none (and in older records)
  config::put_time_limits(j, t.time_limits);  // absent when unset, and before teams had time limits
  config::put_user_limits(j, t.user_limits);  // absent when none, and before teams had user limits
  if (!t.group.empty()) j["group"] = t.group;  // absent when none, and before groups existed
  return j;
}
TeamSpec team_from_json(const json& j) {
  TeamSpec t;
  t.name = j.at("name").get<std::string>();
  t.fair_share_weight = j.at("fair_share_weight").get<int>();
  for (const auto& a : j.at("allocation"))
    t.allocation.push_back({a.at("instance_type").get<std::string>(), amount_from_json(a.at("amount"))});
  t.strategy = strategy_from(j.at("strategy").get<std::string>());
  t.borrow_limit = j.at("borrow_limit").get<int>();
  t.preempt_team_tasks = preempt_from(j.at("preempt_team_tasks").get<std::string>());
  if (j.contains("containers")) t.containers = team_containers_from_json(j.at("containers"));
  if (j.contains("default_request")) t.default_request = amount_from_json(j.at("default_request"));
  t.time_limits = config::time_limits_from_json(j);
  t.user_limits = config::user_limits_from_json(j);
  t.group = j.value("group", std::string());
  return t;
}

json to_json(const PolicySpec& p) { return config::policy_json(p); }
PolicySpec policy_from_json(const json& j) {
  PolicySpec p;
  p.task_prioritization = prioritization_from(j.at("task_prioritization").get<std::string>());
  p.idle_compute = idle_from(j.at("idle_compute").get<std::string>());
  p.idle_pool = j.at("idle_pool").get<bool>();
  for (const auto& pc : j.at("priority_classes")) {
    PriorityClassSpec c{pc.at("name").get<std::string>(), pc.at("weight").get<int>()};
    if (pc.contains("locality_wait")) c.locality_wait_s = pc.at("locality_wait").get<int64_t>();
    c.time_limits = config::time_limits_from_json(pc);
    p.priority_classes.push_back(std::move(c));
  }
  // Journals written before the policy had one writer (config/policy_json.h) say min_runtime_s and
  // starvation_threshold_s; they must still replay.
  p.min_runtime_s = (j.contains("min_runtime") ? j.at("min_runtime") : j.at("min_runtime_s")).get<int64_t>();
  p.starvation_threshold_s =
      (j.contains("starvation_threshold") ? j.at("starvation_threshold") : j.at("starvation_threshold_s")).get<int64_t>();
  p.fair_share_preemption = j.value("fair_share_preemption", false);  // absent before the switch existed
  p.elastic_grow_delay_s = get_or<int64_t>(j, "elastic_grow_delay", PolicySpec{}.elastic_grow_delay_s);
  p.locality_wait_s = get_or<int64_t>(j, "locality_wait", 0);  // absent when not set (config/policy_json.cpp)
  p.groups = config::groups_from_json(j);
  p.start_timeout_s = get_or<int64_t>(j, "start_timeout", 0);    // these three too
  p.start_backoff_s = get_or<int64_t>(j, "start_backoff", PolicySpec{}.start_backoff_s);
  p.start_backoff_max_s = get_or<int64_t>(j, "start_backoff_max", PolicySpec{}.start_backoff_max_s);
  p.backfill = j.value("backfill", false);  // absent when off
  p.backfill_min_priority = get_or<int>(j, "backfill_min_priority", 0);  // absent when 0
  return p;
}

json to_json(const NodeSpec& n) {
  return {{"name", n.name}, {"instance_type", n.instance_type}, {"instance_group", n.instance_group}, {"labels", n.labels}};
}
NodeSpec node_from_json(const json& j) {
  NodeSpec n;
  n.name = j.at("name").get<std::string>();
  n.instance_type = j.at("instance_type").get<std::string>();
  n.instance_group = get_or<std::string>(j, "instance_group", "");
  n.labels = get_or<std::map<std::string, std::string>>(j, "labels", {});
  return n;
}

json to_json(const JobSpec& s) {
  json pod_sets = json::array();
  for (const auto& ps : s.pod_sets)
  {
    json out = {{"name", ps.name},
                {"replicas", ps.replicas},
                {"instance_type", ps.instance_type},
                {"per_replica", to_json(ps.per_replica)},
                {"topology", to_json(ps.topology)}};
    // Only elastic pod sets say min_replicas, so fixed jobs' records read as they always did.
    if (ps.min_replicas) out["min_replicas"] = *ps.min_replicas;
    pod_sets.push_back(std::move(out));
  }
  json j = {{"name", s.name},
            {"team", s.team},
            {"priority", s.priority},
            {"pod_sets", pod_sets},
            {"max_retries", s.max_retries},
            {"checkpoint_interval_s", s.checkpoint_interval_s},
            {"command", s.command},
            {"env", s.env}};
  if (s.duration_s) j["duration_s"] = *s.duration_s;
  if (s.time_limit_s) j["time_limit_s"] = *s.time_limit_s;  // absent without one, and before jobs had limits
  if (!s.labels.empty()) j["labels"] = s.labels;  // absent in records written before jobs had labels
  if (!s.plan.empty()) j["plan"] = s.plan;  // absent in records written before plans, and for jobs without one
  if (!s.reservation.empty()) j["reservation"] = s.reservation;  // absent: none (and in records written before)
  if (!s.container.empty()) j["container"] = to_json(s.container);  // absent for bare processes and older records
  if (s.completion_index) j["completion_index"] = true;  // absent: false (and in older records)
  if (!s.log_rules.empty()) j["log_rules"] = config::log_rules_json(s.log_rules);  // absent: none (and in older records)
  // Absent: restart, the default (and in older records).
  if (s.recovery != Recovery::kRestart) j["recovery"] = recovery_name(s.recovery);
  if (s.recovery_timeout_s) j["recovery_timeout_s"] = s.recovery_timeout_s;
  if (!s.membership_signal.empty()) j["membership_signal"] = s.membership_signal;
  if (!s.after.empty()) j["after"] = config::after_json(s.after);  // absent: none (and in older records)
  if (!s.user.empty()) j["user"] = s.user;  // absent: no user (and in older records)
  if (s.multicluster) j["multicluster"] = true;  // absent: false (a job of no manager's team, and older records)
  // Absent: not an array (and in older records). A task says its array's name and its index (core/model/array.h).
  if (s.array) {
    json a = {{"count", s.array->count}, {"parallel", s.array->parallel}};
    if (s.array->index) {
      a["name"] = s.array->name;
      a["index"] = *s.array->index;
    }
    j["array"] = std::move(a);
  }
  return j;
}
JobSpec job_from_json(const json& j) {
  JobSpec s;
  s.name = j.at("name").get<std::string>();
  s.team = j.at("team").get<std::string>();
  s.priority = get_or<std::string>(j, "priority", "");
  for (const auto& p : j.at("pod_sets")) {
    PodSetSpec ps;
    ps.name = p.at("name").get<std::string>();
    ps.replicas = p.at("replicas").get<int>();
    if (p.contains("min_replicas")) ps.min_replicas = p.at("min_replicas").get<int>();
    ps.instance_type = get_or<std::string>(p, "instance_type", "");
    ps.per_replica = amount_from_json(p.at("per_replica"));
    ps.topology = topology_from_json(p.at("topology"));
    s.pod_sets.push_back(std::move(ps));
  }
  s.max_retries = get_or(j, "max_retries", 0);
  s.checkpoint_interval_s = get_or<int64_t>(j, "checkpoint_interval_s", 0);
  s.duration_s = get_opt(j, "duration_s");
  s.time_limit_s = get_opt(j, "time_limit_s");
  s.command = get_or<std::vector<std::string>>(j, "command", {});
  s.env = get_or<std::map<std::string, std::string>>(j, "env", {});
  s.labels = get_or<std::map<std::string, std::string>>(j, "labels", {});
  s.plan = get_or<std::string>(j, "plan", "");
  s.reservation = get_or<std::string>(j, "reservation", "");
  if (j.contains("container")) s.container = container_from_json(j.at("container"));
  s.completion_index = get_or(j, "completion_index", false);
  if (j.contains("log_rules")) s.log_rules = config::log_rules_from_json(j.at("log_rules"));
  if (j.contains("recovery")) {
    const std::string r = j.at("recovery").get<std::string>();
    bool known = false;
    for (Recovery k : kRecoveries)
      if (r == recovery_name(k)) s.recovery = k, known = true;
    if (!known) throw std::invalid_argument("unknown recovery '" + r + "' (restart, in_place)");
  }
  s.recovery_timeout_s = get_or<int64_t>(j, "recovery_timeout_s", 0);
  s.membership_signal = get_or<std::string>(j, "membership_signal", "");
  if (j.contains("after")) s.after = config::after_from_json(j.at("after"));
  s.user = get_or<std::string>(j, "user", "");
  s.multicluster = get_or(j, "multicluster", false);
  if (j.contains("array")) {
    const json& a = j.at("array");
    ArraySpec array{.count = a.at("count").get<int>(), .parallel = a.at("parallel").get<int>()};
    if (a.contains("index")) {
      array.name = a.at("name").get<std::string>();
      array.index = a.at("index").get<int>();
    }
    s.array = std::move(array);
  }
  return s;
}

json to_json(const PlanSpec& p) {
  return {{"name", p.name},   {"instance_type", p.instance_type}, {"count", p.count}, {"start", p.start},
          {"end", p.end},     {"grace_s", p.grace_s},             {"team", p.team},   {"labels", p.labels}};
}

PlanSpec plan_from_json(const json& j) {
  PlanSpec p;
  p.name = j.at("name").get<std::string>();
  p.instance_type = j.at("instance_type").get<std::string>();
  p.count = j.at("count").get<int>();
  p.start = j.at("start").get<Time>();
  p.end = j.at("end").get<Time>();
  p.grace_s = get_or<int64_t>(j, "grace_s", 0);
  p.team = get_or<std::string>(j, "team", "");
  p.labels = get_or<std::map<std::string, std::string>>(j, "labels", {});
  return p;
}

json to_json(const ReservationSpec& r) {
  json out = {{"name", r.name}, {"team", r.team}, {"start", r.start}, {"end", r.end}};
  if (!r.user.empty()) out["user"] = r.user;
  if (!r.nodes.empty()) out["nodes"] = r.nodes;
  if (!r.instance_type.empty()) out["instance_type"] = r.instance_type;
  if (r.count > 0) out["count"] = r.count;
  return out;
}

ReservationSpec reservation_from_json(const json& j) {
  ReservationSpec r;
  r.name = j.at("name").get<std::string>();
  r.team = j.at("team").get<std::string>();
  r.user = get_or<std::string>(j, "user", "");
  r.nodes = get_or<std::vector<std::string>>(j, "nodes", {});
  r.instance_type = get_or<std::string>(j, "instance_type", "");
  r.count = get_or<int>(j, "count", 0);
  r.start = j.at("start").get<Time>();
  r.end = j.at("end").get<Time>();
  return r;
}

}  // namespace allot::store
