// Replaying the journal gives exactly the acknowledged state: the records of a live run (operations plus
// the scheduler's decisions, recorded with their placements) replayed into a fresh ClusterState through
// apply_record, without running the scheduler, give equal views of every job, team and node.
#include <gtest/gtest.h>

#include "core/pass/scheduler.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "view/state_json.h"

#include "spec_builders.h"

namespace allot::store::store_replay_test {
namespace {

class StoreReplay : public ::testing::Test {
 protected:
  // Applies an operation live, runs the scheduler as the server does and journals both. As in the server, an
  // operation the core refuses is not journaled.
  void op(Op o, Time at) {
    Record r{seq_ + 1, at, std::move(o)};
    if (!apply_record(live_, r).ok()) {
      ++refused_;
      return;
    }
    ++seq_;
    journal_.push_back(r);
    ScheduleResult sr = schedule(live_, at);
    for (const Decision& d : sr.decisions) journal_.push_back({++seq_, at, decision_record(live_, d)});
    last_at_ = at;
  }
  void expect_replay_equal() {
    ClusterState replayed;
    for (const Record& r : journal_) {
      // Through JSON, as the store keeps them.
      auto back = record_from_json(nlohmann::json::parse(record_to_json(r).dump()));
      ASSERT_TRUE(back.ok());
      auto st = apply_record(replayed, *back);
      ASSERT_TRUE(st.ok()) << "record " << r.seq << " (" << op_name(r.op) << "): " << st.error().message;
    }
    // The replayed state is the fixed point the live scheduler left: running it again decides nothing. (It
    // also refreshes the explanations of waiting jobs, which are not journaled: the server runs it once after
    // replay for that reason.)
    EXPECT_TRUE(schedule(replayed, last_at_).decisions.empty());
    ASSERT_EQ(replayed.jobs.size(), live_.jobs.size());
    for (size_t i = 0; i < live_.jobs.size(); ++i)
      EXPECT_EQ(view::job_json(replayed, replayed.jobs[i]), view::job_json(live_, live_.jobs[i]));
    for (size_t i = 0; i < live_.teams.size(); ++i)
      EXPECT_EQ(view::team_json(replayed, replayed.teams[i]), view::team_json(live_, live_.teams[i]));
    ASSERT_EQ(replayed.nodes.size(), live_.nodes.size());
    for (size_t i = 0; i < live_.nodes.size(); ++i) {
      if (!live_.nodes[i].removed) {
        EXPECT_EQ(view::node_json(replayed, replayed.nodes[i]), view::node_json(live_, live_.nodes[i]));
      }
    }
    EXPECT_EQ(replayed.usage, live_.usage);
  }
  int decisions(const char* kind) const {
    int n = 0;
    for (const Record& r : journal_) n += std::string(op_name(r.op)) == kind;
    return n;
  }

  ClusterState live_;
  std::vector<Record> journal_;
  uint64_t seq_ = 0;
  int refused_ = 0;
  Time last_at_ = 0;
};

TeamSpec team(const std::string& name, int instances) {
  TeamSpec t;
  t.name = name;
  AmountSpec a;
  a.instances = instances;
  t.allocation = {{"ml.g5.8xlarge", a}};
  t.borrow_limit = 100;
  return t;
}

using allot::test::job_spec;

TEST_F(StoreReplay, ReplayGivesTheAcknowledgedState) {
  PolicySpec p;
  p.task_prioritization = TaskPrioritization::kTaskRanking;
  p.priority_classes = {{"high", 90}, {"low", 10}};
  op(SetPolicy{p}, 0);
  op(UpsertTeam{team("a", 2)}, 0);
  op(UpsertTeam{team("b", 2)}, 0);
  for (int i = 1; i <= 4; ++i)
    op(AddNode{NodeSpec{"n" + std::to_string(i), "ml.g5.8xlarge", "", {{"network-node-layer-3", i <= 2 ? "x" : "y"}}}, "", false}, 1);
  op(Submit{job_spec("a-big", "a").replicas(4).priority("low").max_retries(2)}, 2);        // borrows b's idle quota
  op(Submit{job_spec("b-1", "b")}, 3);                    // reclaims: a-big is preempted
  op(Submit{job_spec("a-high", "a").priority("high")}, 4);
  op(Cordon{"n4", true}, 5);
  op(NodeHealthChange{"n1", NodeHealth::kUnschedulablePendingReboot, HealthCause::kTimeout, ""}, 6);
  op(NodeHealthChange{"n1", NodeHealth::kSchedulable, HealthCause::kAgent, ""}, 7);
  op(Cordon{"n4", false}, 8);
  op(Drain{"n2"}, 9);
  op(Cordon{"n2", false}, 10);
  op(Finish{"b-1", true, "done"}, 11);
  for (const Job& j : live_.jobs)
    if (j.state == JobState::kRunning && j.spec.name != "b-1") {
      op(Finish{j.spec.name, false, "replica 0 exited with code 1"}, 12);
      break;
    }
  op(Cancel{"a-high"}, 13);
  op(RemoveNode{"n3"}, 14);
  op(AddNode{NodeSpec{"n3", "ml.g5.8xlarge", "", {}}, "10.0.0.3", true}, 15);
  op(Submit{job_spec("b-2", "b").replicas(2)}, 16);
  op(UpsertTeam{team("c", 1)}, 17);
  op(RemoveTeam{"c"}, 18);
  EXPECT_LE(refused_, 2) << "most operations of the scenario should apply";
  EXPECT_GT(decisions("admit"), 3);
  EXPECT_GT(decisions("preempt"), 0) << "the scenario should exercise a preemption record";
  expect_replay_equal();
}

// An elastic job is admitted at the size that fits, grows once capacity has been idle for the policy's delay,
// and its resize is journaled with its whole placement and replays to the same state.
TEST_F(StoreReplay, ElasticResizesReplay) {
  PolicySpec p;
  p.elastic_grow_delay_s = 100;
  op(SetPolicy{p}, 0);
  op(UpsertTeam{team("a", 4)}, 0);
  for (int i = 1; i <= 4; ++i) op(AddNode{NodeSpec{"n" + std::to_string(i), "ml.g5.8xlarge", "", {}}, "", false}, 0);
  op(Submit{job_spec("fixed", "a").replicas(2)}, 1);
  JobSpec e = job_spec("elastic", "a").replicas(4);
  e.pod_sets[0].min_replicas = 1;
  op(Submit{e}, 1);
  EXPECT_EQ(live_.find_job("elastic")->size(), 2);
  op(Finish{"fixed", true, "done"}, 50);
  op(Cordon{"n1", false}, 120);  // runs the scheduler: the freed nodes have been idle 70 s, under the delay
  EXPECT_EQ(live_.find_job("elastic")->size(), 2);
  op(Cordon{"n1", false}, 150);  // idle for 100 s now
  EXPECT_EQ(live_.find_job("elastic")->size(), 4);
  EXPECT_EQ(decisions("resize"), 1);
  expect_replay_equal();
}

TEST_F(StoreReplay, ResizeOfAFixedJobIsAnError) {
  op(UpsertTeam{team("a", 2)}, 0);
  op(AddNode{NodeSpec{"n1", "ml.g5.8xlarge", "", {}}, "", false}, 0);
  op(AddNode{NodeSpec{"n2", "ml.g5.8xlarge", "", {}}, "", false}, 0);
  op(Submit{job_spec("j", "a")}, 0);
  ASSERT_EQ(live_.jobs[0].state, JobState::kRunning);
  const std::vector<NodeId> before = live_.jobs[0].placement.nodes();
  Resize r{"j", {{"ml.g5.8xlarge", Resources{1, 32000, 131072}, {{"n1", {0}, {0}, "0-31"}, {"n2", {0}, {0}, "0-31"}}}},
           false, 1, 2, "grow", "", "x"};
  auto st = apply_record(live_, Record{99, 1, r});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("not elastic"), std::string::npos) << st.error().message;
  EXPECT_EQ(live_.jobs[0].placement.nodes(), before);
}

TEST_F(StoreReplay, AdmitNamingAnUnknownNodeIsAnError) {
  op(UpsertTeam{team("a", 1)}, 0);
  op(Submit{job_spec("j", "a")}, 0);
  Admit a{"j", {{"ml.g5.8xlarge", Resources{1, 32000, 131072}, {{"ghost", {0}, {0}, "0-31"}}}}, false, "x"};
  auto st = apply_record(live_, Record{99, 1, a});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("ghost"), std::string::npos);
  EXPECT_EQ(live_.jobs[0].state, JobState::kPending);
}


// The journal is untrusted input: an admission whose placement does not fit the state it is applied to is an
// error that says what is wrong, and the state is unchanged (no index past a table, no bit shifted past 63).
class StoreReplayBadPlacement : public StoreReplay {
 protected:
  void SetUp() override {
    op(UpsertTeam{team("a", 2)}, 0);
    op(AddNode{NodeSpec{"g1", "ml.g5.8xlarge", "", {}}, "", false}, 0);      // 1 accelerator, 32 vCPUs
    op(AddNode{NodeSpec{"g2", "ml.g5.12xlarge", "", {}}, "", false}, 0);     // 4 accelerators
    op(Submit{job_spec("busy", "a")}, 0);                                      // the scheduler places it on g1
    JobSpec waiting = job_spec("j", "a");
    waiting.pod_sets[0].instance_type = "ml.g5.12xlarge";
    waiting.pod_sets[0].per_replica.accelerators = 4;
    ASSERT_EQ(live_.jobs[0].state, JobState::kRunning);
    ASSERT_EQ(live_.nodes[live_.jobs[0].placement.pod_sets[0].replicas[0].node.index()].name, "g1");
    ASSERT_TRUE(apply_record(live_, Record{99, 0, Submit{waiting}}).ok());
    before_ = view::job_json(live_, live_.jobs[1]);
  }
  std::string refused(std::vector<PodSetRecord> placement) {
    auto st = apply_record(live_, Record{100, 1, Admit{"j", std::move(placement), false, "x"}});
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(view::job_json(live_, live_.jobs[1]), before_) << "a refused admission must change nothing";
    EXPECT_EQ(live_.room[1].accelerators_free, 0xfu);
    return st.ok() ? "" : st.error().message;
  }
  static PodSetRecord on(std::string node, std::vector<int> acc, std::string type = "ml.g5.12xlarge") {
    return {std::move(type), Resources{4, 8000, 16384}, {{std::move(node), std::move(acc), {0}, "0-7"}}};
  }
  nlohmann::json before_;
};

TEST_F(StoreReplayBadPlacement, AcceleratorIndexOutOfRange) {
  EXPECT_NE(refused({on("g2", {0, 1, 2, 4})}).find("accelerator 4 of node g2, which has 4 (0..3)"), std::string::npos);
  EXPECT_NE(refused({on("g2", {-1, 0, 1, 2})}).find("accelerator -1"), std::string::npos);
  EXPECT_NE(refused({on("g2", {0, 1, 2, 200})}).find("accelerator 200"), std::string::npos);
}

TEST_F(StoreReplayBadPlacement, AcceleratorAlreadyBound) {
  EXPECT_NE(refused({on("g2", {0, 1, 1, 2})}).find("accelerator 1 of node g2, which another replica holds"), std::string::npos);
  PodSetRecord busy_g1{"ml.g5.8xlarge", Resources{1, 1000, 1024}, {{"g1", {0}, {0}, "0"}}};
  EXPECT_NE(refused({busy_g1}).find("accelerator 0 of node g1, which another replica holds"), std::string::npos);
}

TEST_F(StoreReplayBadPlacement, NodeTypeAndRoom) {
  EXPECT_NE(refused({on("ghost", {0, 1, 2, 3})}).find("node ghost, which is not in the cluster"), std::string::npos);
  EXPECT_NE(refused({on("g1", {0}, "ml.g5.12xlarge")}).find("instance type ml.g5.12xlarge on node g1, which is ml.g5.8xlarge"),
            std::string::npos);
  PodSetRecord huge = on("g2", {0, 1, 2, 3});
  huge.per_replica.memory_mib = int64_t{1} << 40;
  EXPECT_NE(refused({huge}).find("on node g2, which has"), std::string::npos);
  PodSetRecord numa = on("g2", {0, 1, 2, 3});
  numa.replicas[0].numa_domains = {7};
  EXPECT_NE(refused({numa}).find("NUMA domain 7"), std::string::npos);
  EXPECT_NE(refused({{"ml.nope", Resources{}, {}}}).find("ml.nope"), std::string::npos);
}

TEST_F(StoreReplayBadPlacement, AValidAdmissionStillApplies) {
  ASSERT_TRUE(apply_record(live_, Record{100, 1, Admit{"j", {on("g2", {0, 1, 2, 3})}, false, "x"}}).ok());
  EXPECT_EQ(live_.jobs[1].state, JobState::kRunning);
  EXPECT_EQ(live_.room[1].accelerators_free, 0u);
}

}  // namespace
}  // namespace allot::store::store_replay_test
