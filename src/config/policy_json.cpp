#include "config/policy_json.h"

#include <cmath>

namespace allot::config {
namespace {

// 1500 milli-vCPU -> 1.5; whole amounts stay integers so the YAML readers see `2`, not `2.0`.
nlohmann::json scaled(int64_t v, int64_t unit) {
  if (v % unit == 0) return v / unit;
  return static_cast<double>(v) / static_cast<double>(unit);
}

int64_t unscaled(const nlohmann::json& v, int64_t unit) {
  if (v.is_number_integer()) return v.get<int64_t>() * unit;
  return static_cast<int64_t>(std::llround(v.get<double>() * static_cast<double>(unit)));
}

}  // namespace

nlohmann::json amount_json(const AmountSpec& a) {
  nlohmann::json o = nlohmann::json::object();
  if (a.whole_node) o["whole_node"] = true;
  if (a.instances) o["instances"] = *a.instances;
  if (a.accelerators) o["accelerators"] = *a.accelerators;
  if (a.vcpu_milli) o["vcpu"] = scaled(*a.vcpu_milli, 1000);
  if (a.memory_mib) o["memory_gib"] = scaled(*a.memory_mib, 1024);
  if (a.vcpu_unlimited) o["vcpu"] = "unlimited";
  if (a.memory_unlimited) o["memory_gib"] = "unlimited";
  return o;
}

nlohmann::json groups_json(const std::vector<GroupSpec>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const GroupSpec& g : groups) {
    nlohmann::json alloc = nlohmann::json::array();
    for (const AllocationSpec& a : g.allocation) {
      nlohmann::json e = amount_json(a.amount);
      e["instance_type"] = a.instance_type;
      alloc.push_back(std::move(e));
    }
    nlohmann::json o = {{"name", g.name}, {"fair_share_weight", g.fair_share_weight}};
    if (!g.parent.empty()) o["parent"] = g.parent;
    if (!alloc.empty()) o["allocation"] = std::move(alloc);
    if (g.borrow_limit) o["borrow_limit"] = *g.borrow_limit;
    if (g.lend_limit) o["lend_limit"] = *g.lend_limit;
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<GroupSpec> groups_from_json(const nlohmann::json& policy) {
  std::vector<GroupSpec> out;
  if (!policy.contains("groups")) return out;
  for (const auto& o : policy.at("groups")) {
    GroupSpec g;
    g.name = o.at("name").get<std::string>();
    g.parent = o.value("parent", std::string());
    g.fair_share_weight = o.value("fair_share_weight", GroupSpec{}.fair_share_weight);
    if (o.contains("borrow_limit")) g.borrow_limit = o.at("borrow_limit").get<int>();
    if (o.contains("lend_limit")) g.lend_limit = o.at("lend_limit").get<int>();
    if (o.contains("allocation"))
      for (const auto& e : o.at("allocation")) {
        AllocationSpec a{.instance_type = e.at("instance_type").get<std::string>(), .amount = {}};
        if (e.contains("instances")) a.amount.instances = e.at("instances").get<int64_t>();
        if (e.contains("accelerators")) a.amount.accelerators = e.at("accelerators").get<int64_t>();
        if (e.contains("vcpu")) a.amount.vcpu_milli = unscaled(e.at("vcpu"), 1000);
        if (e.contains("memory_gib")) a.amount.memory_mib = unscaled(e.at("memory_gib"), 1024);
        g.allocation.push_back(std::move(a));
      }
    out.push_back(std::move(g));
  }
  return out;
}

void put_time_limits(nlohmann::json& out, const TimeLimitSettings& t) {
  if (t.default_s) out["default_time_limit"] = *t.default_s;
  if (t.max_s) out["max_time_limit"] = *t.max_s;
  if (t.resets_on_restart) out["time_limit_resets_on_restart"] = true;
}

TimeLimitSettings time_limits_from_json(const nlohmann::json& j) {
  TimeLimitSettings t;
  if (j.contains("default_time_limit")) t.default_s = j.at("default_time_limit").get<int64_t>();
  if (j.contains("max_time_limit")) t.max_s = j.at("max_time_limit").get<int64_t>();
  t.resets_on_restart = j.value("time_limit_resets_on_restart", false);
  return t;
}

void put_user_limits(nlohmann::json& out, const std::vector<UserLimitSpec>& limits) {
  if (limits.empty()) return;
  nlohmann::json list = nlohmann::json::array();
  for (const UserLimitSpec& l : limits) {
    nlohmann::json e = {{"user", l.user}};
    if (l.running_jobs) e["running_jobs"] = *l.running_jobs;
    if (l.pending_jobs) e["pending_jobs"] = *l.pending_jobs;
    if (!l.accelerators.empty()) e["accelerators"] = l.accelerators;
    list.push_back(std::move(e));
  }
  out["user_limits"] = std::move(list);
}

std::vector<UserLimitSpec> user_limits_from_json(const nlohmann::json& team) {
  std::vector<UserLimitSpec> out;
  if (!team.contains("user_limits")) return out;
  for (const auto& e : team.at("user_limits")) {
    UserLimitSpec l;
    l.user = e.at("user").get<std::string>();
    if (e.contains("running_jobs")) l.running_jobs = e.at("running_jobs").get<int64_t>();
    if (e.contains("pending_jobs")) l.pending_jobs = e.at("pending_jobs").get<int64_t>();
    if (e.contains("accelerators")) l.accelerators = e.at("accelerators").get<std::map<std::string, int64_t>>();
    out.push_back(std::move(l));
  }
  return out;
}

nlohmann::json policy_json(const PolicySpec& p) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& pc : p.priority_classes) {
    nlohmann::json c = {{"name", pc.name}, {"weight", pc.weight}};
    if (pc.locality_wait_s) c["locality_wait"] = *pc.locality_wait_s;  // absent: the policy's
    put_time_limits(c, pc.time_limits);
    classes.push_back(std::move(c));
  }
  nlohmann::json out = {{"task_prioritization", task_prioritization_name(p.task_prioritization)},
          {"idle_compute", idle_compute_name(p.idle_compute)},
          {"idle_pool", p.idle_pool},
          {"priority_classes", classes},
          {"min_runtime", p.min_runtime_s},
          {"starvation_threshold", p.starvation_threshold_s},
          {"fair_share_preemption", p.fair_share_preemption},
          {"elastic_grow_delay", p.elastic_grow_delay_s}};
  // Written only when set, so policies (and journals) without a locality wait read as they always have.
  if (p.locality_wait_s > 0) out["locality_wait"] = p.locality_wait_s;
  // The same for the gang start timeout and its backoff (docs/resiliency.md, "Gang start timeout").
  if (p.start_timeout_s > 0) out["start_timeout"] = p.start_timeout_s;
  if (p.start_backoff_s != PolicySpec{}.start_backoff_s) out["start_backoff"] = p.start_backoff_s;
  if (p.start_backoff_max_s != PolicySpec{}.start_backoff_max_s) out["start_backoff_max"] = p.start_backoff_max_s;
  if (p.backfill) out["backfill"] = true;  // and backfill (docs/scheduling.md, "Backfill")
  if (p.backfill_min_priority > 0) out["backfill_min_priority"] = p.backfill_min_priority;
  if (!p.groups.empty()) out["groups"] = groups_json(p.groups);  // and groups (core/quota/cohort_tree.h)
  return out;
}

}  // namespace allot::config
