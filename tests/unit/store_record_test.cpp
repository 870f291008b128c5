// Round trips of every journal record kind through its JSON form: what is written reads back equal.
#include <gtest/gtest.h>

#include "store/record_json.h"

namespace allot::store {
namespace {

JobSpec full_job() {
  JobSpec j;
  j.name = "train-1";
  j.team = "team-a";
  j.priority = "training";
  PodSetSpec a;
  a.name = "workers";
  a.replicas = 4;
  a.instance_type = "ml.p5.48xlarge";
  a.per_replica.accelerators = 8;
  a.per_replica.vcpu_milli = 96500;
  a.per_replica.memory_mib = 1024 * 1024;
  a.topology.required = "network-node-layer-3";
  a.topology.slice = SliceSpec{"ultraserver", 2};
  a.topology.exclusive = "network-node-layer-2";
  PodSetSpec b;
  b.name = "driver";
  b.per_replica.whole_node = true;
  b.topology.preferred = "zone";
  j.pod_sets = {a, b};
  j.max_retries = 3;
  j.checkpoint_interval_s = 600;
  j.duration_s = 3600;
  j.command = {"/bin/sh", "-c", "echo \"hi\"\n"};
  j.env = {{"A", "1"}, {"EMPTY", ""}};
  return j;
}

std::vector<Op> every_kind() {
  PolicySpec p;
  p.task_prioritization = TaskPrioritization::kTaskRanking;
  p.idle_compute = IdleCompute::kFcfs;
  p.idle_pool = true;
  p.priority_classes = {{"inference", 100}, {"training", 70}};
  p.min_runtime_s = 60;
  p.starvation_threshold_s = 7200;
  TeamSpec t;
  t.name = "team-a";
  t.fair_share_weight = 10;
  AmountSpec inst;
  inst.instances = 2;
  AmountSpec acc;
  acc.accelerators = 3;
  acc.vcpu_milli = 1500;
  acc.memory_mib = 2048;
  t.allocation = {{"ml.g5.8xlarge", inst}, {"ml.p5.48xlarge", acc}};
  t.strategy = SharingStrategy::kLend;
  t.borrow_limit = 200;
  t.preempt_team_tasks = PreemptTeamTasks::kNever;
  NodeSpec n{"gpu-1", "ml.p5.48xlarge", "group-a", {{"network-node-layer-3", "nn-3a"}, {"zone", "use1-az1"}}};
  Admit admit{"train-1",
              {{"ml.p5.48xlarge", Resources{8, 192000, 2048 * 1024}, {{"gpu-1", {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1}, "0-191"}}},
               {"ml.g5.8xlarge", Resources{1, 32000, 131072}, {{"gpu-2", {0}, {0}, "0-31"}, {"gpu-3", {0}, {0}, "0-31"}}}},
              true,
              "admitted by borrowing 8 accelerators"};
  return {SetPolicy{p},
          UpsertTeam{t},
          RemoveTeam{"team-b"},
          AddNode{n, "10.0.0.7", true},
          RemoveNode{"gpu-9"},
          NodeHealthChange{"gpu-1", NodeHealth::kUnschedulablePendingReboot, HealthCause::kTimeout, ""},
          NodeHealthChange{"gpu-1", NodeHealth::kSchedulable, HealthCause::kAgent, "10.0.0.8"},
          NodeHealthChange{"gpu-1", NodeHealth::kUnschedulablePendingReplacement, HealthCause::kAdmin, ""},
          NodeHealthChange{"gpu-1", NodeHealth::kUnschedulablePendingReboot, HealthCause::kHealthCheck, "",
                           "check gpu failed: XID 79 on GPU 2"},
          NodeHealthChange{"gpu-4", NodeHealth::kUnschedulable, HealthCause::kDeepCheck, "", "deep health check running"},
          Cordon{"gpu-2", true},
          Cordon{"gpu-2", false},
          Drain{"gpu-3"},
          Submit{full_job()},
          Cancel{"train-2"},
          Finish{"train-1", true, "all 4 replicas exited with code 0"},
          Finish{"train-1", false, "replica 2 exited with code 137"},
          admit,
          Preempt{"train-1", "serve-1", "reclaimed by team-b"},
          CreateToken{TokenRecord{"3f9a2c1b7e", std::string(64, 'a'), "member", {"team-a", "team-b"}, "", 1800000000, "CI"}},
          CreateToken{TokenRecord{"0123456789", std::string(64, 'b'), "agent", {}, "gpu-1", 0, ""}},
          RevokeToken{"3f9a2c1b7e"},
          Audit{"POST /v1/jobs/b-1/cancel", "b-1", 403, "needs a member token of team b"}};
}

TEST(StoreRecord, EveryKindRoundTripsThroughJson) {
  uint64_t seq = 0;
  std::set<std::string> kinds;
  for (const Op& op : every_kind()) {
    Record r{++seq, 1700000000 + static_cast<Time>(seq), op};
    // Through text too, as the store keeps it.
    auto text = record_to_json(r).dump();
    auto back = record_from_json(nlohmann::json::parse(text));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, r) << text;
    kinds.insert(op_name(op));
  }
  EXPECT_EQ(kinds.size(), std::variant_size_v<Op>) << "a record kind has no round-trip case";
}

TEST(StoreRecord, ActorsRoundTripAndOldRecordsHaveNone) {
  Record r{7, 1700000000, Cancel{"j"}, Actor{"3f9a2c1b7e", "member", {"a", "b"}, ""}};
  auto back = record_from_json(nlohmann::json::parse(record_to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
  // A record written before actors existed reads back with none.
  auto old = record_from_json(nlohmann::json::parse(R"({"op": "cancel", "job": "j", "seq": 1, "at": 5})"));
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->actor, Actor{});
  auto bad = record_from_json(nlohmann::json::parse(R"({"op": "cancel", "job": "j", "seq": 1, "at": 5, "actor": 3})"));
  EXPECT_FALSE(bad.ok());
}

TEST(StoreRecord, OptionalFieldsStayUnset) {
  JobSpec j;
  j.name = "x";
  j.team = "t";
  j.pod_sets = {PodSetSpec{}};
  j.pod_sets[0].per_replica.vcpu_milli = 500;
  Record r{1, 5, Submit{j}};
  auto back = record_from_json(record_to_json(r));
  ASSERT_TRUE(back.ok());
  const auto& got = std::get<Submit>(back->op).job;
  EXPECT_FALSE(got.duration_s.has_value());
  EXPECT_FALSE(got.pod_sets[0].per_replica.accelerators.has_value());
  EXPECT_FALSE(got.pod_sets[0].topology.slice.has_value());
  EXPECT_EQ(*back, r);
}

TEST(StoreRecord, MalformedRecordsAreErrorsNotGuesses) {
  for (const char* bad : {R"({"op":"launch","seq":1,"at":0})", R"({"op":"cancel","seq":1,"at":0})",
                          R"({"op":"cancel","job":7,"seq":1,"at":0})", R"({"op":"cordon","node":"n","seq":1,"at":0})",
                          R"({"op":"node_health","node":"n","health":"Sick","cause":"admin","address":"","seq":1,"at":0})",
                          R"({"job":"x","seq":1,"at":0})", R"({"op":"cancel","job":"x","at":0})"}) {
    auto r = record_from_json(nlohmann::json::parse(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInternal);
    EXPECT_NE(r.error().message.find("malformed journal record"), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace allot::store
