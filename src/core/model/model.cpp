#include "core/model/model.h"

#include <algorithm>

namespace allot {

const char* job_state_name(JobState s) {
  switch (s) {
    case JobState::kPending: return "Pending";
    case JobState::kRunning: return "Running";
    case JobState::kSuspended: return "Suspended";
    case JobState::kSucceeded: return "Succeeded";
    case JobState::kFailed: return "Failed";
    case JobState::kCancelled: return "Cancelled";
  }
  return "?";
}

std::optional<JobState> parse_job_state(std::string_view s) {
  for (JobState st : {JobState::kPending, JobState::kRunning, JobState::kSuspended, JobState::kSucceeded,
                      JobState::kFailed, JobState::kCancelled})
    if (s == job_state_name(st)) return st;
  return std::nullopt;
}

const char* plan_state_name(PlanState s) {
  switch (s) {
    case PlanState::kScheduled: return "Scheduled";
    case PlanState::kActive: return "Active";
    case PlanState::kEnding: return "Ending";
    case PlanState::kExpired: return "Expired";
  }
  return "?";
}

std::optional<PlanState> parse_plan_state(std::string_view s) {
  for (PlanState st : {PlanState::kScheduled, PlanState::kActive, PlanState::kEnding, PlanState::kExpired})
    if (s == plan_state_name(st)) return st;
  return std::nullopt;
}

std::vector<NodeId> Placement::nodes() const {
  std::vector<NodeId> out;
  for (const auto& ps : pod_sets)
    for (const auto& r : ps.replicas) out.push_back(r.node);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const char* preemption_rule_name(PreemptionRule r) {
  switch (r) {
    case PreemptionRule::kReclaim: return "reclaim";
    case PreemptionRule::kPriority: return "priority";
    case PreemptionRule::kFairShare: return "fair_share";
  }
  return "reclaim";
}

std::optional<PreemptionRule> parse_preemption_rule(std::string_view name) {
  for (auto r : {PreemptionRule::kReclaim, PreemptionRule::kPriority, PreemptionRule::kFairShare})
    if (name == preemption_rule_name(r)) return r;
  return std::nullopt;
}

const char* resize_cause_name(ResizeCause c) {
  switch (c) {
    case ResizeCause::kGrow: return "grow";
    case ResizeCause::kShrink: return "shrink";
  }
  return "grow";
}

int Job::size() const {
  if (!elastic()) {
    int n = 0;
    for (const auto& ps : placement.pod_sets) n += static_cast<int>(ps.replicas.size());
    return n;
  }
  const size_t e = static_cast<size_t>(elastic_pod_set);
  return e < placement.pod_sets.size() ? static_cast<int>(placement.pod_sets[e].replicas.size()) : 0;
}

}  // namespace allot
