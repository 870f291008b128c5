#include "sim/trace_jobs.h"

#include <map>

namespace allot::sim {

Result<TraceJobShape> trace_job_shape(const ClusterState& s) {
  std::map<TypeId, int64_t> count;
  for (const Node& n : s.nodes)
    if (!n.removed && s.catalog.at(n.type).accelerators > 0) ++count[n.type];
  if (count.empty()) return Error::invalid("the cluster has no node with accelerators, so a GPU trace cannot run on it");
  TypeId best = count.begin()->first;
  auto better = [&](TypeId a, TypeId b) {
    const InstanceType &ta = s.catalog.at(a), &tb = s.catalog.at(b);
    if (ta.accelerators != tb.accelerators) return ta.accelerators > tb.accelerators;
    if (count[a] != count[b]) return count[a] > count[b];
    return ta.name < tb.name;
  };
  for (const auto& [type, n] : count)
    if (better(type, best)) best = type;
  TraceJobShape shape;
  shape.instance_type = s.catalog.at(best).name;
  shape.accelerators_per_node = s.catalog.at(best).accelerators;
  if (s.tree.lowest_labelled_level >= 0) shape.preferred_level = s.levels[s.tree.lowest_labelled_level];
  return shape;
}

int held_gpus(const TraceJobShape& shape, int gpus) {
  if (gpus <= shape.accelerators_per_node) return gpus;
  int nodes = (gpus + shape.accelerators_per_node - 1) / shape.accelerators_per_node;
  return nodes * shape.accelerators_per_node;
}

JobSpec job_from_trace(const TraceJob& job, const TraceJobShape& shape, int max_retries, int64_t checkpoint_s) {
  JobSpec spec;
  spec.name = job.id;
  spec.team = job.team;
  spec.max_retries = max_retries;
  spec.checkpoint_interval_s = checkpoint_s;
  spec.duration_s = job.duration_s;
  PodSetSpec ps;
  ps.instance_type = shape.instance_type;
  if (job.gpus <= shape.accelerators_per_node) {
    ps.replicas = 1;
    ps.per_replica.accelerators = job.gpus;
  } else {
    ps.replicas = (job.gpus + shape.accelerators_per_node - 1) / shape.accelerators_per_node;
    ps.per_replica.whole_node = true;
    ps.topology.preferred = shape.preferred_level;
  }
  spec.pod_sets = {ps};
  return spec;
}

}  // namespace allot::sim
