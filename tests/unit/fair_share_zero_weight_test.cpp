// Fair-sharing preemption between teams of weight 0 (docs/scheduling.md, "Fair-sharing preemption"): their
// shares are all infinite, so the share rules compare them by how much of the pool they borrow, as Kueue does.
// A weight-0 team takes from another that borrows more, never from a weighted team, and the two do not take
// from each other back and forth.
#include <gtest/gtest.h>

#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::fair_share_zero_weight_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator: one replica per node

TeamSpec team(const std::string& name, int weight, int instances, SharingStrategy strategy) {
  TeamSpec t;
  t.name = name;
  t.fair_share_weight = weight;
  AmountSpec a;
  a.instances = instances;
  t.allocation = {{kType, a}};
  t.strategy = strategy;
  t.borrow_limit = 300;
  return t;
}

test::JobBuilder node_job(const std::string& name, const std::string& team) {
  return test::job_spec(name, team).instance_type(kType).whole_nodes();
}

// The case: a (weight 1) lends 2 nodes; b and c (weight 0) have 1 each, on 4 nodes.
class FairShareZeroWeightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PolicySpec p;
    p.fair_share_preemption = true;
    ASSERT_TRUE(set_policy(s, p).ok());
    for (int i = 1; i <= 4; ++i) ASSERT_TRUE(add_node(s, NodeSpec{"n" + std::to_string(i), kType, "", {}}, 0).ok());
    ASSERT_TRUE(upsert_team(s, team("a", 1, 2, SharingStrategy::kLend)).ok());
    ASSERT_TRUE(upsert_team(s, team("b", 0, 1, SharingStrategy::kLendAndBorrow)).ok());
    ASSERT_TRUE(upsert_team(s, team("c", 0, 1, SharingStrategy::kLendAndBorrow)).ok());
  }
  void submit(const JobSpec& spec, Time at) { ASSERT_TRUE(submit_job(s, spec, at).ok()); }
  const Job& find(const std::string& name) { return *s.find_job(name); }
  // A pass, then a second at the same instant, which must change nothing: the first reached a fixed point.
  void settle(Time now) {
    schedule(s, now);
    EXPECT_TRUE(schedule(s, now).decisions.empty()) << "a second pass at t=" << now << " changed something";
  }
  ClusterState s;
};

TEST_F(FairShareZeroWeightTest, TakesFromTheWeightZeroTeamThatBorrowsMore) {
  for (const char* name : {"b1", "b2", "b3"}) submit(node_job(name, "b"), 0);
  settle(0);
  submit(node_job("c1", "c").replicas(2), 10);
  settle(10);
  EXPECT_EQ(find("c1").state, JobState::kRunning) << find("c1").reason.str();
  EXPECT_EQ(find("b3").state, JobState::kSuspended);
  EXPECT_EQ(find("b1").state, JobState::kRunning);
  EXPECT_EQ(find("b2").state, JobState::kRunning);
  // b borrowed half the pool and c, with c1, a quarter: b after losing b3 borrows a quarter too.
  const std::string why = find("b3").reason.str();
  EXPECT_NE(why.find("preempted (fair share): team b is above its fair share; job c1 of team c takes its place by "
                     "LessThanOrEqualToFinalShare"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("team c infinite, borrowing 0.000 of the pool -> infinite, borrowing 0.250 of the pool, team b "
                     "infinite, borrowing 0.500 of the pool -> infinite, borrowing 0.250 of the pool"),
            std::string::npos)
      << why;
}

TEST_F(FairShareZeroWeightTest, TheTeamThatTookIsNotTakenBack) {
  for (const char* name : {"b1", "b2", "b3"}) submit(node_job(name, "b"), 0);
  settle(0);
  submit(node_job("c1", "c").replicas(2), 10);
  settle(10);
  ASSERT_EQ(find("c1").state, JobState::kRunning);
  // b3 waits again, and b2-like jobs of b would leave b borrowing more than c after c lost its job: nothing moves.
  submit(node_job("b4", "b"), 20);
  settle(20);
  EXPECT_EQ(find("c1").state, JobState::kRunning);
  EXPECT_EQ(find("b3").state, JobState::kSuspended);
  EXPECT_EQ(find("b4").state, JobState::kPending);
  // Nor does c take a second job of b: c would then borrow half the pool, b a quarter.
  submit(node_job("c2", "c"), 30);
  settle(30);
  EXPECT_EQ(find("c2").state, JobState::kPending);
  EXPECT_EQ(find("b1").state, JobState::kRunning);
  EXPECT_EQ(find("b2").state, JobState::kRunning);
}

TEST_F(FairShareZeroWeightTest, NeverTakesFromAWeightedTeam) {
  // a (weight 1, LendAndBorrow here) borrows b's and c's nodes; c (weight 0) cannot take them back by fair share:
  // its infinite share is above a's. (c1 needs more than c's nominal quota, so reclaim does not apply either.)
  ASSERT_TRUE(upsert_team(s, team("a", 1, 2, SharingStrategy::kLendAndBorrow)).ok());
  for (const char* name : {"a1", "a2", "a3", "a4"}) submit(node_job(name, "a"), 0);
  settle(0);
  ASSERT_EQ(find("a4").state, JobState::kRunning);
  submit(node_job("c1", "c").replicas(2), 10);
  settle(10);
  EXPECT_EQ(find("c1").state, JobState::kPending);
  for (const char* name : {"a1", "a2", "a3", "a4"}) EXPECT_EQ(find(name).state, JobState::kRunning) << name;
}

}  // namespace
}  // namespace allot::fair_share_zero_weight_test
