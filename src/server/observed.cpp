#include "server/observed.h"

#include "core/state.h"

namespace allot::server {

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Observed::admitted(const ClusterState& s, const Job& job, bool borrowing, Time at) {
  ++admissions_by_rule[borrowing ? "borrowing" : "within-nominal"];
  const std::string priority = job.spec.priority.empty() ? "none" : job.spec.priority;
  auto key = std::make_pair(s.teams[job.team.index()].spec.name, priority);
  auto it = queue_wait.try_emplace(std::move(key), kQueueWaitBounds).first;
  it->second.observe(static_cast<double>(std::max<Time>(0, at - job.waiting_since)));
}

void Observed::preempted(std::optional<PreemptionRule> rule) {
  ++preemptions_by_rule[rule ? preemption_rule_name(*rule) : "unrecorded"];
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
