#include "core/preemption/shrink.h"

#include <algorithm>

namespace allot {

namespace {

const PodSet& elastic_set(const Job& v) { return v.pod_sets[static_cast<size_t>(v.elastic_pod_set)]; }

}  // namespace

int shrink_step(const Job& v) { return v.elastic() ? std::max(1, elastic_set(v).topology.slice_size) : 0; }

bool shrinkable(const Job& v) { return v.elastic() && elastic_set(v).topology.exclusive_level < 0; }

bool can_shrink(const Job& v, int keep) { return shrinkable(v) && keep - shrink_step(v) >= v.min_size(); }

Placement elastic_ranks(const Job& v, int from, int to) {
  Placement out;
  const size_t e = static_cast<size_t>(v.elastic_pod_set);
  for (size_t i = 0; i < v.placement.pod_sets.size(); ++i) {
    const PodSetPlacement& ps = v.placement.pod_sets[i];
    PodSetPlacement part{.type = ps.type, .per_replica = ps.per_replica, .replicas = {}};
    if (i == e) {
      const auto n = static_cast<int>(ps.replicas.size());
      const int lo = std::clamp(from, 0, n), hi = std::clamp(to, lo, n);
      part.replicas.assign(ps.replicas.begin() + lo, ps.replicas.begin() + hi);
    }
    out.pod_sets.push_back(std::move(part));
  }
  return out;
}

Placement kept_placement(const Job& v, int keep) {
  Placement out = v.placement;
  auto& replicas = out.pod_sets[static_cast<size_t>(v.elastic_pod_set)].replicas;
  if (keep < static_cast<int>(replicas.size())) replicas.resize(static_cast<size_t>(std::max(0, keep)));
  return out;
}

}  // namespace allot
