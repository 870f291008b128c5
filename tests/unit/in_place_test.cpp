// Recovery in place (core/lifecycle/in_place.h; docs/resiliency.md, "Recovery in place"): only the failed node's replicas move,
// nearest in the topology first; the run, its other replicas and its retries stay; a recovery that does not fit
// leaves the job to the ordinary restart; the journal's record replays the same recovery and refuses one out of step.
#include <gtest/gtest.h>

#include "config/spec_yaml.h"
#include "core/lifecycle/in_place.h"
#include "core/pass/scheduler.h"
#include "core/model/state.h"
#include "store/record_json.h"
#include "store/replay.h"

namespace allot::test::in_place_test {
namespace {

// Nodes of one GPU: a-1..a-4 in layer-3 domain nn-3a, b-1..b-2 in nn-3b; team ml owns them all.
ClusterState cluster() {
  ClusterState s;
  std::vector<NodeSpec> nodes;
  for (const char* n : {"a-1", "a-2", "a-3", "a-4"})
    nodes.push_back({.name = n, .instance_type = "ml.g5.8xlarge", .labels = {{"network-node-layer-3", "nn-3a"}}});
  for (const char* n : {"b-1", "b-2"})
    nodes.push_back({.name = n, .instance_type = "ml.g5.8xlarge", .labels = {{"network-node-layer-3", "nn-3b"}}});
  EXPECT_TRUE(add_nodes(s, nodes, 0).ok());
  EXPECT_TRUE(upsert_team(s, TeamSpec{.name = "ml", .allocation = {{"ml.g5.8xlarge", {.instances = 6}}}}).ok());
  return s;
}

JobSpec spec(const std::string& name, int replicas, Recovery recovery) {
  JobSpec j{.name = name, .team = "ml", .max_retries = 1};
  j.pod_sets.push_back({.replicas = replicas, .per_replica = {.accelerators = 1}});
  j.recovery = recovery;
  return j;
}

std::vector<std::string> nodes_in_rank_order(const ClusterState& s, const Job& j) {
  std::vector<std::string> out;
  for (const auto& ps : j.placement.pod_sets)
    for (const auto& r : ps.replicas) out.push_back(s.nodes[r.node.index()].name);
  return out;
}

NodeId node(const ClusterState& s, const char* name) { return s.find_node(name)->id; }

TEST(InPlace, OnlyTheFailedNodesReplicaMovesToTheNearestFreeNode) {
  ClusterState s = cluster();
  // Three replicas: only nn-3a holds them; a-4 stays free there, b-1 and b-2 in nn-3b.
  const JobId id = *submit_job(s, spec("j", 3, Recovery::kInPlace), 0);
  (void)schedule(s, 0);
  const Job& j = s.jobs[id.index()];
  ASSERT_EQ(j.state, JobState::kRunning);
  const auto before = nodes_in_rank_order(s, j);
  ASSERT_EQ(before, (std::vector<std::string>{"a-1", "a-2", "a-3"}));
  const RoomTable room_before = s.room;
  // Planning changes nothing.
  auto plans = plan_in_place_recoveries(s, node(s, "a-1"));
  EXPECT_EQ(s.room[node(s, "a-4").index()].replicas, room_before[node(s, "a-4").index()].replicas);
  ASSERT_EQ(plans.size(), 1u);
  ASSERT_EQ(plans[0].moves.size(), 1u);
  EXPECT_EQ(plans[0].moves[0].index, 0u);
  EXPECT_EQ(s.nodes[plans[0].moves[0].to.node.index()].name, "a-4") << "same layer-3 domain as a-1 before b-1 (first by name)";
  const int64_t started = j.started_at;
  ASSERT_TRUE(fail_node_in_place(s, "a-1", 500, NodeHealth::kUnschedulablePendingReplacement).ok());
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(nodes_in_rank_order(s, j), (std::vector<std::string>{"a-4", "a-2", "a-3"})) << "ranks 1 and 2 keep their nodes";
  EXPECT_EQ(j.restarts, 0) << "no retry is used";
  EXPECT_EQ(j.membership_epoch, 1);
  EXPECT_EQ(j.started_at, started) << "the same run";
  ASSERT_EQ(j.recoveries.size(), 1u);
  EXPECT_EQ(j.recoveries[0].node, "a-1");
  EXPECT_EQ(s.room[node(s, "a-1").index()].replicas, 0);
  EXPECT_EQ(s.room[node(s, "a-4").index()].replicas, 1);
  EXPECT_EQ(s.room[node(s, "a-4").index()].accelerators_free, 0u);
  // The next failure moves the replica again, now into the other domain (nn-3a is full).
  ASSERT_TRUE(fail_node_in_place(s, "a-2", 600, NodeHealth::kUnschedulablePendingReboot).ok());
  EXPECT_EQ(nodes_in_rank_order(s, j), (std::vector<std::string>{"a-4", "b-1", "a-3"}));
  EXPECT_EQ(j.membership_epoch, 2);
  // A new run starts a new membership.
  ASSERT_TRUE(finish_job(s, "j", 700, false).ok());
  (void)schedule(s, 700);
  ASSERT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.membership_epoch, 0);
}

TEST(InPlace, AJobWhoseReplicaFitsNowhereRestartsAsAnyOtherAndTheDefaultRestarts) {
  ClusterState s = cluster();
  const JobId a = *submit_job(s, spec("inplace", 4, Recovery::kInPlace), 0);
  const JobId b = *submit_job(s, spec("classic", 2, Recovery::kRestart), 0);
  (void)schedule(s, 0);
  ASSERT_EQ(s.jobs[a.index()].state, JobState::kRunning);
  ASSERT_EQ(s.jobs[b.index()].state, JobState::kRunning);
  // Every node is taken: no recovery is possible for anyone.
  const NodeId failed = s.jobs[a.index()].placement.pod_sets[0].replicas[0].node;
  EXPECT_TRUE(plan_in_place_recoveries(s, failed).empty());
  ASSERT_TRUE(fail_node_in_place(s, s.nodes[failed.index()].name, 10, NodeHealth::kUnschedulablePendingReplacement).ok());
  EXPECT_EQ(s.jobs[a.index()].state, JobState::kSuspended);
  EXPECT_EQ(s.jobs[a.index()].restarts, 1);
  EXPECT_EQ(s.jobs[a.index()].membership_epoch, 0);
}

TEST(InPlace, TheRecordReplaysTheRecoveryAndOneOutOfStepChangesNothing) {
  ClusterState s = cluster();
  const JobId id = *submit_job(s, spec("j", 2, Recovery::kInPlace), 0);
  (void)schedule(s, 0);
  const Job& j = s.jobs[id.index()];
  ASSERT_EQ(nodes_in_rank_order(s, j), (std::vector<std::string>{"b-1", "b-2"})) << "the tightest domain, nn-3b";
  const store::Op op = store::RecoverInPlace{"j", "b-1", 1, {store::ReplicaMoveRecord{0, 0, store::ReplicaRecord{"a-1", {0}, {0}, ""}}}};
  auto back = store::op_from_json(store::op_to_json(op));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, op);
  // Out of step: epoch 2 while the job is at 0.
  auto wrong = store::RecoverInPlace{"j", "b-1", 2, {store::ReplicaMoveRecord{0, 0, store::ReplicaRecord{"a-1", {0}, {0}, ""}}}};
  EXPECT_FALSE(store::apply_record(s, store::Record{1, 5, wrong, {}}).ok());
  // A move of a replica that is not on the failed node.
  auto not_there = store::RecoverInPlace{"j", "b-1", 1, {store::ReplicaMoveRecord{0, 1, store::ReplicaRecord{"a-1", {0}, {0}, ""}}}};
  auto refused = store::apply_record(s, store::Record{1, 5, not_there, {}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("is not on the failed node"), std::string::npos) << refused.error().message;
  // A move onto a node that is taken (b-2 holds rank 1).
  auto taken = store::RecoverInPlace{"j", "b-1", 1, {store::ReplicaMoveRecord{0, 0, store::ReplicaRecord{"b-2", {0}, {0}, ""}}}};
  EXPECT_FALSE(store::apply_record(s, store::Record{1, 5, taken, {}}).ok());
  EXPECT_EQ(nodes_in_rank_order(s, j), (std::vector<std::string>{"b-1", "b-2"})) << "refusals change nothing";
  EXPECT_EQ(j.membership_epoch, 0);
  ASSERT_TRUE(store::apply_record(s, store::Record{1, 5, *back, {}}).ok());
  EXPECT_EQ(nodes_in_rank_order(s, j), (std::vector<std::string>{"a-1", "b-2"}));
  EXPECT_EQ(j.membership_epoch, 1);
  // The node's health change that follows finds no replica of the job there: the job keeps running.
  ASSERT_TRUE(store::apply_record(s, store::Record{2, 5, store::NodeHealthChange{"b-1", NodeHealth::kUnschedulablePendingReplacement,
                                                                                    store::HealthCause::kHealthCheck, "", "xid 79", ""}, {}}).ok());
  EXPECT_EQ(j.state, JobState::kRunning);
  // The fallback: the run ends as a node failure ends it, using a retry.
  ASSERT_TRUE(store::apply_record(s, store::Record{3, 70, store::InPlaceFallback{"j", 1, "not recovered within 60 s"}, {}}).ok());
  EXPECT_EQ(j.state, JobState::kSuspended);
  EXPECT_EQ(j.reason_code, ReasonCode::kNodeFailed);
  EXPECT_EQ(j.restarts, 1);
  EXPECT_NE(j.reason.str().find("not recovered within 60 s"), std::string::npos) << j.reason.str();
  EXPECT_FALSE(fall_back_from_in_place(s, "j", 80, "again").ok()) << "not running any more";
}

TEST(InPlace, TheSpecKeysAreReadWithClearErrors) {
  auto parse = [](const std::string& text) { return parse_job_spec(YAML::Load(text), Catalog::builtin(), {"j.yaml", "", 0}); };
  auto ok = parse("{name: j, team: a, replicas: 2, per_replica: {accelerators: 1}, recovery: in_place, recovery_timeout: 90, "
                  "membership_signal: SIGUSR2}");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->recovery, Recovery::kInPlace);
  EXPECT_EQ(ok->recovery_timeout_s, 90);
  EXPECT_EQ(ok->recovery_bound_s(), 90);
  EXPECT_EQ(ok->membership_signal, "SIGUSR2");
  auto dflt = parse("{name: j, team: a, replicas: 1, per_replica: {accelerators: 1}}");
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(dflt->recovery, Recovery::kRestart);
  EXPECT_EQ(dflt->recovery_bound_s(), kDefaultRecoveryTimeoutS);
  auto bad_mode = parse("{name: j, team: a, replicas: 1, per_replica: {accelerators: 1}, recovery: elastic}");
  ASSERT_FALSE(bad_mode.ok());
  EXPECT_NE(bad_mode.error().message.find("restart, in_place"), std::string::npos) << bad_mode.error().message;
  auto without = parse("{name: j, team: a, replicas: 1, per_replica: {accelerators: 1}, recovery_timeout: 30}");
  ASSERT_FALSE(without.ok());
  EXPECT_NE(without.error().message.find("without recovery: in_place"), std::string::npos) << without.error().message;
  auto bad_signal = parse("{name: j, team: a, replicas: 1, per_replica: {accelerators: 1}, recovery: in_place, membership_signal: SIGKILL}");
  ASSERT_FALSE(bad_signal.ok());
  EXPECT_NE(bad_signal.error().message.find("SIGUSR1"), std::string::npos) << bad_signal.error().message;
  auto too_long = parse("{name: j, team: a, replicas: 1, per_replica: {accelerators: 1}, recovery: in_place, recovery_timeout: 4000}");
  EXPECT_FALSE(too_long.ok());
}

}  // namespace
}  // namespace allot::test::in_place_test
