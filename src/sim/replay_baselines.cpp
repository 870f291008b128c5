#include "sim/replay_baselines.h"

#include <algorithm>
#include <map>
#include <random>

#include "sim/trace_teams.h"

namespace allot::sim {

const char* baseline_name(Baseline b) {
  switch (b) {
    case Baseline::kStaticQuota: return "static-quota";
    case Baseline::kFifo: return "fifo";
    case Baseline::kTopologyOblivious: return "topology-oblivious";
    case Baseline::kBackfillTopClass: return "backfill-top-class";
  }
  return "?";
}

Result<std::vector<Baseline>> parse_baselines(const std::vector<std::string>& names) {
  const std::vector<Baseline> all = {Baseline::kStaticQuota, Baseline::kFifo, Baseline::kTopologyOblivious};
  const std::vector<Baseline> named = {Baseline::kStaticQuota, Baseline::kFifo, Baseline::kTopologyOblivious,
                                       Baseline::kBackfillTopClass};
  std::vector<Baseline> out;
  auto add = [&](Baseline b) {
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  };
  for (const std::string& n : names) {
    if (n == "all") {
      for (Baseline b : all) add(b);
      continue;
    }
    bool found = false;
    for (Baseline b : named)
      if (n == baseline_name(b)) {
        add(b);
        found = true;
      }
    if (!found)
      return Error::invalid("unknown baseline '" + n + "'; baselines: static-quota, fifo, topology-oblivious, backfill-top-class, all (the "
                            "first three)");
  }
  return out;
}

void apply_baseline(Baseline b, Scenario& cluster, ReplayOptions& options, uint64_t seed) {
  switch (b) {
    case Baseline::kStaticQuota:
      for (TeamSpec& t : cluster.teams) t.strategy = SharingStrategy::kDontLend;
      return;
    case Baseline::kFifo:
      cluster.policy.task_prioritization = TaskPrioritization::kFcfs;
      cluster.policy.idle_compute = IdleCompute::kFcfs;
      cluster.policy.preemption = false;
      cluster.policy.strict_fifo = true;
      return;
    case Baseline::kBackfillTopClass: {
      cluster.policy.backfill = true;
      int top = 0;
      for (const PriorityClassSpec& pc : cluster.policy.priority_classes) top = std::max(top, pc.weight);
      cluster.policy.backfill_min_priority = top;
      return;
    }
    case Baseline::kTopologyOblivious: {
      // Placement scans nodes in name order, and names usually follow the network (gpu-1..16 under one
      // switch), so clearing the labels alone would leave much locality by accident. Every node gets a new
      // name from a seeded permutation (Fisher-Yates with the platform-independent draw of trace_teams.h);
      // locality is judged on the real tree under the new names.
      const size_t n = cluster.nodes.size();
      std::vector<size_t> perm(n);
      for (size_t i = 0; i < n; ++i) perm[i] = i;
      std::mt19937_64 rng(seed ^ 0x5bd1e995ULL);
      for (size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[bounded_draw(rng, i)]);
      std::map<std::string, std::string> renamed;
      for (size_t i = 0; i < n; ++i) renamed[cluster.nodes[i].name] = "node-" + std::to_string(perm[i] + 1);
      options.locality_levels = cluster.topology_levels;
      options.locality_nodes = cluster.nodes;
      for (size_t i = 0; i < n; ++i) {
        options.locality_nodes[i].name = renamed[cluster.nodes[i].name];
        cluster.nodes[i].name = options.locality_nodes[i].name;
        cluster.nodes[i].labels.clear();
      }
      // Events of the cluster file that name nodes follow the new names.
      for (Event& e : cluster.events) {
        if (auto it = renamed.find(e.target); it != renamed.end()) e.target = it->second;
        for (NodeSpec& ns : e.nodes) {
          if (auto it = renamed.find(ns.name); it != renamed.end()) ns.name = it->second;
          ns.labels.clear();
        }
      }
      return;
    }
  }
}

}  // namespace allot::sim
