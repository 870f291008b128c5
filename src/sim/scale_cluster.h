#pragma once
// The scale model of `allot sim bench` and the core benchmarks (DESIGN.md, "Performance targets"): a cluster of
// ml.p5.48xlarge nodes (8 GPUs) in a 3-layer network tree, teams whose allocations add up to the cluster, and
// a queue of pending jobs from 1 to 512 GPUs, a third of them with a required topology. Deterministic for a
// seed (std::mt19937_64 with the platform-independent bounded_draw of trace_teams.h).
//
// Tree: 16 nodes per layer-3 network node, 8 layer-3 per layer-2, 4 layer-2 per layer-1 (the last domains of
// each layer may be partial). Teams: equal allocations in whole instances (the remainder goes to the first
// teams), LendAndBorrow with a 100% borrow limit, fair-share weights 1..10. Policy: task ranking with three
// priority classes (high 100, normal 50, low 10).
// Jobs: sizes 1, 2, 4, 8 GPUs (one replica) and 16..512 GPUs (whole nodes), weighted towards small jobs as in
// the public traces; every third job asks for `required` topology: layer 3 up to 16 nodes, layer 2 above;
// priorities low 50%, normal 35%, high 15%; teams at random among the first nine tenths of the teams, so the
// last tenth lend all their quota and any job of theirs must reclaim it.
#include <cstdint>
#include <vector>

#include "core/model/spec.h"
#include "core/model/state.h"

namespace allot::sim {

struct ScaleConfig {
  int64_t gpus = 25000;
  int teams = 100;
  int64_t pending = 50000;
  uint64_t seed = 1;
  // Per-user limits (core/quota/user_limits.h): each job gets one of this many users of its team (u1..uN, drawn after
  // everything else, so 0 leaves the model as it was), and every team limits each user to 4 running jobs and 64
  // accelerators. 0: no users, no limits.
  int users_per_team = 0;
};

struct ScaleModel {
  PolicySpec policy;
  std::vector<NodeSpec> nodes;
  std::vector<TeamSpec> teams;
  std::vector<JobSpec> jobs;
};

ScaleModel make_scale_model(const ScaleConfig& config);

// The state with the model's policy, nodes and teams, and no jobs.
ClusterState scale_state(const ScaleModel& model);

}  // namespace allot::sim
