#pragma once
// NUMA-aligned binding inside one node: a replica's accelerators come from as few NUMA domains as possible
// (a single domain when one has enough free, the tightest such; otherwise the roomiest domains first), and its
// CPUs are those of the same domains, so the accelerators and CPUs share a memory bus.
#include <cstdint>

#include "core/model/catalog.h"
#include "core/model/model.h"

namespace allot {

// Picks `count` accelerators from `free_mask` on `type` and fills binding.accelerators / numa_domains / cpus.
// REQUIRES: popcount(free_mask) >= count.
void bind_replica(const InstanceType& type, uint64_t free_mask, int count, bool whole_node, ReplicaBinding& binding);

}  // namespace allot
