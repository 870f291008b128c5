#include "config/policy_json.h"

namespace allot::config {

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
  return out;
}

}  // namespace allot::config
