#include "sim/scale_cluster.h"

#include <random>
#include <string>

#include "sim/trace_teams.h"

namespace allot::sim {

ScaleModel make_scale_model(const ScaleConfig& c) {
  ScaleModel m;
  m.policy.task_prioritization = TaskPrioritization::kTaskRanking;
  m.policy.priority_classes = {{"high", 100}, {"normal", 50}, {"low", 10}};
  const std::string type = "ml.p5.48xlarge";
  const int64_t nodes = std::max<int64_t>(1, c.gpus / 8);
  for (int64_t i = 0; i < nodes; ++i) {
    int64_t l3 = i / 16, l2 = l3 / 8, l1 = l2 / 4;
    m.nodes.push_back(NodeSpec{"p5-" + std::to_string(i + 1), type, "",
                               {{"network-node-layer-1", "nn1-" + std::to_string(l1)},
                                {"network-node-layer-2", "nn2-" + std::to_string(l2)},
                                {"network-node-layer-3", "nn3-" + std::to_string(l3)}}});
  }
  const int teams = std::max(1, c.teams);
  for (int t = 0; t < teams; ++t) {
    TeamSpec ts;
    ts.name = "team-" + std::to_string(t + 1);
    ts.fair_share_weight = 1 + t % 10;
    AmountSpec a;
    a.instances = nodes / teams + (t < nodes % teams ? 1 : 0);
    if (*a.instances > 0) ts.allocation = {{type, a}};
    ts.strategy = SharingStrategy::kLendAndBorrow;
    ts.borrow_limit = 100;
    m.teams.push_back(std::move(ts));
  }
  std::mt19937_64 rng(c.seed);
  // The last tenth of the teams submit nothing: their quota is lent to the others, and a job of theirs must
  // reclaim it by preemption (what the preemption benchmark times).
  const int busy_teams = std::max(1, teams - teams / 10);
  // GPUs per job and their weights (out of 100): mostly small, a few whole-cluster-slice jobs.
  const int sizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  const int weights[] = {30, 14, 14, 16, 9, 7, 5, 3, 1, 1};
  for (int64_t i = 0; i < c.pending; ++i) {
    uint64_t w = bounded_draw(rng, 100);
    int gpus = sizes[9];
    for (int k = 0, acc = 0; k < 10; ++k) {
      acc += weights[k];
      if (w < static_cast<uint64_t>(acc)) {
        gpus = sizes[k];
        break;
      }
    }
    JobSpec j;
    j.name = "job-" + std::to_string(i + 1);
    j.team = m.teams[bounded_draw(rng, busy_teams)].name;
    uint64_t p = bounded_draw(rng, 100);
    j.priority = p < 50 ? "low" : p < 85 ? "normal" : "high";
    j.duration_s = 3600;
    PodSetSpec ps;
    ps.instance_type = type;
    if (gpus <= 8) {
      ps.per_replica.accelerators = gpus;
    } else {
      ps.replicas = gpus / 8;
      ps.per_replica.whole_node = true;
    }
    if (i % 3 == 0 && gpus > 1) ps.topology.required = ps.replicas <= 16 ? "network-node-layer-3" : "network-node-layer-2";
    j.pod_sets = {ps};
    if (c.users_per_team > 0) j.user = "u" + std::to_string(1 + bounded_draw(rng, static_cast<uint64_t>(c.users_per_team)));
    m.jobs.push_back(std::move(j));
  }
  if (c.users_per_team > 0)
    for (TeamSpec& t : m.teams)
      for (int u = 1; u <= c.users_per_team; ++u)
        t.user_limits.push_back(UserLimitSpec{.user = "u" + std::to_string(u), .running_jobs = 4, .pending_jobs = std::nullopt,
                                              .accelerators = {{type, 64}}});
  return m;
}

ClusterState scale_state(const ScaleModel& m) {
  ClusterState s;
  (void)set_policy(s, m.policy);
  (void)add_nodes(s, m.nodes, 0);
  for (const auto& t : m.teams) (void)upsert_team(s, t);
  return s;
}

}  // namespace allot::sim
