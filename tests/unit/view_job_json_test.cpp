// What `allot describe JOB -o json` (and `allot sim run --json`) says of a job's request: every pod set's
// replicas, per-replica request, instance type and topology, max_retries and the retries used; placement ranks
// count over the whole job, as the RANK its processes get (issue 28 item 14).
#include <gtest/gtest.h>

#include "sim/scenario.h"
#include "sim/scenario_run.h"
#include "view/state_json.h"

namespace allot::view_job_json_test {
namespace {

using nlohmann::json;

TEST(ViewJobJson, PodSetRequestsRetriesAndJobWideRanks) {
  auto sc = sim::parse_scenario(R"(
cluster:
  nodes: [{name: 'n[1-4]', instance_type: ml.g5.8xlarge}, {name: c1, instance_type: ml.m5.xlarge}]
teams: [{name: t, allocation: [{instance_type: ml.g5.8xlarge, instances: 4}, {instance_type: ml.m5.xlarge, instances: 1}]}]
events:
  - at: 0
    submit:
      name: mixed
      team: t
      max_retries: 3
      pod_sets:
        - {name: launcher, replicas: 1, per_replica: {vcpu: 2}, instance_type: ml.m5.xlarge}
        - {name: workers, replicas: 3, per_replica: {whole_node: true}, instance_type: ml.g5.8xlarge,
           topology: {preferred: network-node-layer-3}}
  - {at: 10, fail: mixed}
  - {at: 20, expect: {jobs: {mixed: {state: Running, restarts: 1}}}}
)",
                                "mixed.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  auto report = sim::run_scenario(*sc);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_TRUE(report->passed) << report->failures.front();
  const ClusterState& s = report->final_state;
  const json j = view::job_json(s, *s.find_job("mixed"));

  EXPECT_EQ(j["max_retries"], 3);
  EXPECT_EQ(j["retries_used"], 1);
  ASSERT_EQ(j["pod_sets"].size(), 2u);
  EXPECT_EQ(j["pod_sets"][0]["per_replica"], json({{"vcpu", 2}}));
  EXPECT_EQ(j["pod_sets"][0]["instance_type"], "ml.m5.xlarge");
  EXPECT_EQ(j["pod_sets"][1]["per_replica"], json({{"whole_node", true}}));
  EXPECT_EQ(j["pod_sets"][1]["replicas"], 3);
  EXPECT_EQ(j["pod_sets"][1]["topology"]["preferred"], "network-node-layer-3");

  // Ranks 0..3 over the job: the launcher is 0, the workers 1, 2, 3 (not 0, 1, 2 again).
  std::vector<int> ranks;
  for (const auto& ps : j["placement"])
    for (const auto& r : ps["replicas"]) ranks.push_back(r["rank"].get<int>());
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace allot::view_job_json_test
