#include "client/spec_json.h"

#include <cmath>

#include "config/after_json.h"
#include "config/log_rules_json.h"
#include "config/policy_json.h"
#include "view/state_json.h"

namespace allot::client {
namespace {
using nlohmann::json;

json topology_body(const TopologySpec& t) {
  json o = json::object();
  if (!t.required.empty()) o["required"] = t.required;
  if (!t.preferred.empty()) o["preferred"] = t.preferred;
  if (t.slice) o["slice"] = {{"level", t.slice->level}, {"size", t.slice->size}};
  if (!t.exclusive.empty()) o["exclusive"] = t.exclusive;
  return o;
}

void put_pod_set(json& o, const PodSetSpec& ps) {
  // An elastic pod set goes as the range it was written as (docs/jobs.md, "Elastic replicas").
  if (ps.min_replicas) o["replicas"] = {{"min", *ps.min_replicas}, {"max", ps.replicas}};
  else o["replicas"] = ps.replicas;
  if (!ps.instance_type.empty()) o["instance_type"] = ps.instance_type;
  o["per_replica"] = amount_body(ps.per_replica);
  if (!ps.topology.empty()) o["topology"] = topology_body(ps.topology);
}

// GiB with at most 9 decimals, which the job reader (config/yaml_read.cpp, read_decimal) takes back to the same MiB
// (9 decimals are within 5e-10 GiB of the exact value; 1 MiB is 0.0009765625 GiB, ten decimals, which it refuses).
json gib_of_mib(int64_t mib) {
  if (mib % 1024 == 0) return mib / 1024;
  return std::round(static_cast<double>(mib) / 1024.0 * 1e9) / 1e9;
}

}  // namespace

json amount_body(const AmountSpec& a) { return config::amount_json(a); }

json team_body(const TeamSpec& t) {
  json alloc = json::array();
  for (const auto& a : t.allocation) {
    json e = amount_body(a.amount);
    e["instance_type"] = a.instance_type;
    alloc.push_back(e);
  }
  json o = {{"name", t.name},
            {"fair_share_weight", t.fair_share_weight},
            {"allocation", alloc},
            {"sharing", {{"strategy", sharing_strategy_name(t.strategy)}, {"borrow_limit", t.borrow_limit}}},
            {"preempt_team_tasks", preempt_team_tasks_name(t.preempt_team_tasks)}};
  if (!t.containers.empty()) o["containers"] = view::team_containers_json(t.containers);
  if (!t.default_request.asks_nothing()) o["default_request"] = amount_body(t.default_request);
  config::put_time_limits(o, t.time_limits);
  config::put_user_limits(o, t.user_limits);
  if (!t.group.empty()) o["group"] = t.group;
  return o;
}

json policy_body(const PolicySpec& p) { return config::policy_json(p); }

json job_body(const JobSpec& j) {
  json o = {{"name", j.name}, {"team", j.team}};
  if (!j.priority.empty()) o["priority"] = j.priority;
  if (j.pod_sets.size() == 1 && j.pod_sets[0].name == "main") {
    put_pod_set(o, j.pod_sets[0]);
  } else {
    json sets = json::array();
    for (const auto& ps : j.pod_sets) {
      json s = {{"name", ps.name}};
      put_pod_set(s, ps);
      sets.push_back(s);
    }
    o["pod_sets"] = sets;
  }
  if (j.max_retries) o["max_retries"] = j.max_retries;
  if (j.checkpoint_interval_s) o["checkpoint_interval"] = j.checkpoint_interval_s;
  if (j.duration_s) o["duration"] = *j.duration_s;
  if (j.time_limit_s) o["time_limit"] = *j.time_limit_s;
  if (!j.command.empty()) o["command"] = j.command;
  if (!j.env.empty()) o["env"] = j.env;
  if (!j.labels.empty()) o["labels"] = j.labels;
  if (!j.plan.empty()) o["plan"] = j.plan;
  if (!j.reservation.empty()) o["reservation"] = j.reservation;
  if (j.completion_index) o["completion_index"] = true;
  if (!j.log_rules.empty()) o["log_rules"] = config::log_rules_json(j.log_rules);
  if (j.recovery != Recovery::kRestart) o["recovery"] = recovery_name(j.recovery);
  if (j.recovery_timeout_s) o["recovery_timeout"] = j.recovery_timeout_s;
  if (!j.membership_signal.empty()) o["membership_signal"] = j.membership_signal;
  if (!j.after.empty()) o["after"] = config::after_json(j.after);
  if (!j.user.empty()) o["user"] = j.user;  // the server checks it against the token's user
  if (j.array) o["array"] = {{"count", j.array->count}, {"parallel", j.array->parallel}};  // core/model/array.h
  if (!j.container.empty()) {
    const ContainerSpec& c = j.container;
    o["image"] = c.image;
    o["image_pull_policy"] = pull_policy_name(c.pull_policy);  // resolved when read: sent as the spec says it
    if (c.shm_mib) o["shm_size_gib"] = gib_of_mib(*c.shm_mib);
    if (!c.volumes.empty()) {
      json vols = json::array();
      for (const auto& v : c.volumes) {
        json e = {{"host_path", v.host_path}, {"path", v.path}};
        if (v.read_only) e["read_only"] = true;
        vols.push_back(e);
      }
      o["volumes"] = vols;
    }
    if (!c.args.empty()) o["args"] = c.args;
  }
  return o;
}

json team_body_from_view(const json& view) {
  json o = json::object();
  for (const char* k : {"name", "fair_share_weight", "allocation", "sharing", "preempt_team_tasks", "containers", "default_request",
                        "default_time_limit", "max_time_limit", "time_limit_resets_on_restart", "group"})
    if (view.contains(k)) o[k] = view[k];
  return o;
}

nlohmann::json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.Scalar()] = yaml_to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar: return node.Scalar();
    default: return nullptr;
  }
}

}  // namespace allot::client
