#include "server/views/observed.h"

#include <algorithm>

#include "core/model/state.h"

namespace allot::server {

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::vector<TypeId> placement_types(const Placement& p) {
  std::vector<TypeId> out;
  for (const PodSetPlacement& ps : p.pod_sets)
    if (std::find(out.begin(), out.end(), ps.type) == out.end()) out.push_back(ps.type);
  return out;
}

void Observed::admitted(const ClusterState& s, const Job& job, bool borrowing, Time at) {
  const std::string& team = s.teams[job.team.index()].spec.name;
  for (TypeId type : placement_types(job.placement))
    ++admissions_by_rule[RuleKey{borrowing ? "borrowing" : "within-nominal", team, s.catalog.at(type).name}];
  const std::string priority = job.spec.priority.empty() ? "none" : job.spec.priority;
  const double waited = static_cast<double>(std::max<Time>(0, at - job.waiting_since));
  for (TypeId type : placement_types(job.placement))
    queue_wait.try_emplace(QueueWaitKey{team, priority, s.catalog.at(type).name}, kQueueWaitBounds).first->second.observe(waited);
}

void Observed::preempted(const ClusterState& s, std::optional<PreemptionRule> rule, TeamId team, const std::vector<TypeId>& types) {
  for (TypeId type : types)
    ++preemptions_by_rule[RuleKey{rule ? preemption_rule_name(*rule) : "unrecorded", s.teams[team.index()].spec.name, s.catalog.at(type).name}];
}

UtilisationSample utilisation_now(const ClusterState& s, Time now) {
  UtilisationSample out{now, std::vector<std::pair<int64_t, int64_t>>(s.catalog.size(), {0, 0})};
  for (const Node& n : s.nodes) {
    if (n.removed) continue;
    const int64_t total = s.catalog.at(n.type).capacity().accelerators;
    auto& [in_use, all] = out.in_use_of_total[n.type.index()];
    all += total;
    in_use += total - s.room[n.id.index()].free.accelerators;
  }
  return out;
}

void Observed::sample(const ClusterState& s, Time now) {
  if (!utilisation.empty() && now - utilisation.back().at < kSampleEvery) return;
  utilisation.push_back(utilisation_now(s, now));
  while (utilisation.size() > kSamplesKept) utilisation.pop_front();
}

}  // namespace allot::server
