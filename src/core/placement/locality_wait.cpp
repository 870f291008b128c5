#include "core/placement/locality_wait.h"

#include <algorithm>

#include "core/placement/topology_levels.h"

namespace allot {

int64_t locality_wait_of(const ClusterState& s, const Job& job) {
  if (!job.spec.priority.empty())
    for (const PriorityClassSpec& c : s.policy.priority_classes)
      if (c.name == job.spec.priority && c.locality_wait_s) return *c.locality_wait_s;
  return s.policy.locality_wait_s;
}

Job in_one_domain(const Job& job) {
  Job tight = job;
  for (PodSet& ps : tight.pod_sets)
    if (ps.topology.mode == TopologyRequest::Mode::kPreferred) ps.topology.mode = TopologyRequest::Mode::kRequired;
  return tight;
}

bool OneDomainFits::ask(const ClusterState& s, const RoomTable& pristine, const Job& job, TypeId type, int size) {
  const auto key = std::make_tuple(job.shape, type.value, size);
  auto it = known_.find(key);
  if (it != known_.end()) return it->second;
  const Job tight = in_one_domain(job_at_size(job, size));
  const bool fits = place_job(s, pristine, tight, type).ok;
  known_.emplace(key, fits);
  return fits;
}

std::optional<LocalityHold> locality_hold(const ClusterState& s, const RoomTable& pristine, const Job& job,
                                          const AdmissionAttempt& a, Time now, Time from, OneDomainFits& fits) {
  const int64_t wait = locality_wait_of(s, job);
  if (wait <= 0 || !a.ok() || now >= from + wait) return std::nullopt;
  // The spread pod set with a preferred request, and over how many domains of its level.
  int level = -1;
  size_t spread = 0;
  for (size_t i = 0; i < job.pod_sets.size() && i < a.placement.pod_sets.size(); ++i) {
    const TopologyRequest& req = job.pod_sets[i].topology;
    if (req.mode != TopologyRequest::Mode::kPreferred || req.level < 0) continue;
    std::vector<int> domains;
    for (const ReplicaBinding& r : a.placement.pod_sets[i].replicas) domains.push_back(s.tree.ancestor(r.node, req.level));
    std::sort(domains.begin(), domains.end());
    const size_t n = static_cast<size_t>(std::unique(domains.begin(), domains.end()) - domains.begin());
    if (n > spread) {
      spread = n;
      level = req.level;
    }
  }
  if (spread <= 1) return std::nullopt;
  const int size = job.elastic() ? static_cast<int>(a.placement.pod_sets[static_cast<size_t>(job.elastic_pod_set)].replicas.size())
                                 : job.size();
  if (!fits.ask(s, pristine, job, a.type, size)) return std::nullopt;
  const Time until = from + wait;
  return LocalityHold{
      until, explain(ReasonCode::kLocality, "waiting for locality: it would run now spread over " + std::to_string(spread) +
                                                " " + short_level(s.levels[static_cast<size_t>(level)]) +
                                                " domains; it waits for one to have room until t=" + std::to_string(until) +
                                                " (locality_wait " + std::to_string(wait) + " s), then runs spread")};
}

}  // namespace allot
