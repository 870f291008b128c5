// Elastic admission borrows like any admission (docs/scheduling.md, "Elastic jobs"): an elastic job that fits
// within its team's nominal quota at some size is admitted at the largest size that fits with the borrowing
// rules, and reclaim shrinks the borrowed replicas first.
#include <gtest/gtest.h>

#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::elastic_admission_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator: one replica per node

TeamSpec team(const std::string& name, int instances, SharingStrategy strategy) {
  TeamSpec t;
  t.name = name;
  t.fair_share_weight = 1;
  AmountSpec a;
  a.instances = instances;
  t.allocation = {{kType, a}};
  t.strategy = strategy;
  t.borrow_limit = 100;
  return t;
}

test::JobBuilder node_job(const std::string& name, const std::string& team) {
  return test::job_spec(name, team).instance_type(kType).whole_nodes();
}

// a and b have 2 nominal nodes each on 4 nodes; `a_strategy` is a's sharing strategy.
class ElasticAdmissionTest : public ::testing::Test {
 protected:
  void build(SharingStrategy a_strategy) {
    for (int i = 1; i <= 4; ++i) ASSERT_TRUE(add_node(s, NodeSpec{"n" + std::to_string(i), kType, "", {}}, 0).ok());
    ASSERT_TRUE(upsert_team(s, team("a", 2, a_strategy)).ok());
    ASSERT_TRUE(upsert_team(s, team("b", 2, SharingStrategy::kLendAndBorrow)).ok());
  }
  void submit(const JobSpec& spec, Time at) { ASSERT_TRUE(submit_job(s, spec, at).ok()); }
  const Job& find(const std::string& name) { return *s.find_job(name); }
  ClusterState s;
};

TEST_F(ElasticAdmissionTest, AdmittedAtItsLargestSizeBorrowing) {
  build(SharingStrategy::kLendAndBorrow);
  submit(node_job("e", "a").replicas(4).min_replicas(2), 0);
  schedule(s, 0);
  const Job& e = find("e");
  ASSERT_EQ(e.state, JobState::kRunning);
  EXPECT_EQ(e.size(), 4);
  EXPECT_TRUE(e.borrowing);
  EXPECT_NE(e.reason.str().find("at 4 of 4 replicas (elastic, min 2); team a borrows idle quota"), std::string::npos)
      << e.reason.str();
  EXPECT_TRUE(e.resizes.empty());
}

TEST_F(ElasticAdmissionTest, ATeamThatDoesNotBorrowStaysWithinItsNominalQuota) {
  build(SharingStrategy::kLend);
  submit(node_job("e", "a").replicas(4).min_replicas(2), 0);
  schedule(s, 0);
  const Job& e = find("e");
  ASSERT_EQ(e.state, JobState::kRunning);
  EXPECT_EQ(e.size(), 2);
  EXPECT_FALSE(e.borrowing);
  EXPECT_NE(e.reason.str().find("within team a's nominal quota"), std::string::npos) << e.reason.str();
}

TEST_F(ElasticAdmissionTest, ReclaimShrinksTheBorrowedReplicasFirst) {
  build(SharingStrategy::kLendAndBorrow);
  submit(node_job("a-fixed", "a"), 0);
  submit(node_job("e", "a").replicas(3).min_replicas(1), 0);
  schedule(s, 0);
  ASSERT_EQ(find("e").size(), 3);  // a holds 4 of its nominal 2
  submit(node_job("b1", "b").replicas(2), 10);
  schedule(s, 10);
  // b takes back its 2 nodes from e's replicas, not from a-fixed, and e keeps running at 1.
  EXPECT_EQ(find("b1").state, JobState::kRunning) << find("b1").reason.str();
  EXPECT_EQ(find("a-fixed").state, JobState::kRunning);
  const Job& e = find("e");
  EXPECT_EQ(e.state, JobState::kRunning);
  EXPECT_EQ(e.size(), 1);
  EXPECT_EQ(e.preemptions, 0);
  EXPECT_NE(e.reason.str().find("shrank from 3 to 1 of 3 replicas instead of being preempted (reclaim)"), std::string::npos)
      << e.reason.str();
}

}  // namespace
}  // namespace allot::elastic_admission_test
