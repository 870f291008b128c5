#pragma once
// From trace jobs (who asked for how many GPUs, for how long) to allot job specs on a given cluster.
//
// The cluster's accelerator node type is the type with the most accelerators per node among its nodes (ties:
// the type with more nodes, then the name). A job of g GPUs on nodes of A accelerators:
//   g <= A   one replica of g accelerators (vCPU and memory follow proportionally) on that type;
//   g >  A   ceil(g / A) whole-node replicas with a `preferred` topology request at the cluster's lowest
//            labelled network level (none when the nodes carry no labels), so a multi-node job lands as close
//            together as the free capacity allows and never waits for a perfect domain.
// Each job gets the trace's duration, its team, and `max_retries` so it auto-resumes after failures.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "core/model/spec.h"
#include "core/model/state.h"
#include "sim/trace.h"

namespace allot::sim {

struct TraceJobShape {
  std::string instance_type;
  int accelerators_per_node = 0;
  std::string preferred_level;  // full label name; empty without labels
};

// Errors: no node with accelerators.
Result<TraceJobShape> trace_job_shape(const ClusterState& cluster);

// GPUs the job holds while it runs: g, or whole nodes' worth for a multi-node job.
int held_gpus(const TraceJobShape& shape, int gpus);

JobSpec job_from_trace(const TraceJob& job, const TraceJobShape& shape, int max_retries, int64_t checkpoint_s);

}  // namespace allot::sim
