#include "core/lifecycle/time_limit.h"

#include <algorithm>

namespace allot {
namespace {

// The smaller of two optional limits (unset: no limit).
std::optional<int64_t> stricter(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

const PriorityClassSpec* class_of(const ClusterState& s, const JobSpec& spec) {
  if (spec.priority.empty()) return nullptr;
  for (const PriorityClassSpec& c : s.policy.priority_classes)
    if (c.name == spec.priority) return &c;
  return nullptr;
}

}  // namespace

Result<ResolvedTimeLimit> resolve_time_limit(const ClusterState& s, const Team& team, const JobSpec& spec) {
  const TimeLimitSettings& t = team.spec.time_limits;
  const PriorityClassSpec* pc = class_of(s, spec);
  const TimeLimitSettings none;
  const TimeLimitSettings& c = pc ? pc->time_limits : none;
  const std::optional<int64_t> max = stricter(t.max_s, c.max_s);
  ResolvedTimeLimit r;
  r.resets_on_restart = t.resets_on_restart || c.resets_on_restart;
  if (spec.time_limit_s) {
    if (*spec.time_limit_s < 1)
      return Error::invalid("job " + spec.name + ": time_limit must be at least 1 second, got " + std::to_string(*spec.time_limit_s));
    if (max && *spec.time_limit_s > *max) {
      // Whose maximum: the team's, the class's, or both (equal).
      const bool team_max = t.max_s && *t.max_s == *max;
      const bool class_max = c.max_s && *c.max_s == *max;
      std::string whose = team_max ? "team " + team.spec.name : "";
      if (class_max) whose += (whose.empty() ? "" : " and ") + std::string("priority class ") + pc->name;
      return Error::invalid("job " + spec.name + ": time_limit " + std::to_string(*spec.time_limit_s) + " s is above the maximum of " +
                            whose + " (max_time_limit " + std::to_string(*max) + " s); give a time_limit of 1.." +
                            std::to_string(*max) + " s, or none for the default");
    }
    r.limit_s = *spec.time_limit_s;
    return r;
  }
  std::optional<int64_t> def = stricter(t.default_s, c.default_s);
  if (def && max) def = std::min(*def, *max);
  if (!def && max) def = max;  // a maximum without a default: a job without a limit gets the maximum
  r.limit_s = def.value_or(0);
  return r;
}

int64_t time_used(const Job& job, Time now) {
  return job.run_before_s + (job.state == JobState::kRunning ? std::max<int64_t>(0, now - job.started_at) : 0);
}

std::optional<int64_t> time_left(const Job& job, Time now) {
  if (job.time_limit_s <= 0) return std::nullopt;
  return std::max<int64_t>(0, job.time_limit_s - time_used(job, now));
}

std::optional<Time> time_limit_at(const Job& job) {
  if (job.time_limit_s <= 0 || job.state != JobState::kRunning) return std::nullopt;
  return job.started_at + std::max<int64_t>(0, job.time_limit_s - job.run_before_s);
}

std::vector<JobId> past_time_limit(const ClusterState& s, Time now) {
  std::vector<JobId> out;
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (auto at = time_limit_at(j); at && *at <= now) out.push_back(id);
  }
  std::sort(out.begin(), out.end(), [](JobId a, JobId b) { return a.value < b.value; });
  return out;
}

std::optional<Time> next_time_limit(const ClusterState& s) {
  std::optional<Time> next;
  for (JobId id : s.running_jobs)
    if (auto at = time_limit_at(s.jobs[id.index()]); at && (!next || *at < *next)) next = at;
  return next;
}

}  // namespace allot
