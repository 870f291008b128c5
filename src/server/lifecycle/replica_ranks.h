#pragma once
// Ranks of a Running job's replicas: in placement order, pod sets in order, replicas in order (agents.h). One
// home, so that what the agents are told (RANK, WORLD_SIZE) and what the server checks of their reports count
// the same way.
#include "core/model/model.h"

namespace allot::server {

// Calls fn(rank, pod set, binding) for every replica of a job's placement, in rank order.
template <typename F>
void for_each_replica(const Job& j, F fn) {
  int rank = 0;
  for (const auto& ps : j.placement.pod_sets)
    for (const auto& r : ps.replicas) fn(rank++, ps, r);
}

inline int world_size(const Job& j) {
  int n = 0;
  for (const auto& ps : j.placement.pod_sets) n += static_cast<int>(ps.replicas.size());
  return n;
}

}  // namespace allot::server
