// Preemption records (core/preemption/preemption_record.h): one per group, with each victim's rule and the affected teams'
// usage, borrowed amount and fair share before and after, taken from the state where the pass applies the group.
#include <gtest/gtest.h>

#include "core/preemption/preemption_record.h"
#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::preemption_record_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator, 32 vCPU, 128 GiB

TeamSpec team(const std::string& name, int instances, int weight) {
  TeamSpec t;
  t.name = name;
  t.fair_share_weight = weight;
  AmountSpec a;
  a.instances = instances;
  t.allocation = {{kType, a}};
  t.strategy = SharingStrategy::kLendAndBorrow;
  t.borrow_limit = 100;
  return t;
}

using allot::test::job_spec;

Resources instances(int64_t n) { return Resources{n, n * 32'000, n * 128 * 1024}; }

class PreemptionRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PolicySpec p;
    p.priority_classes = {{"high", 90}, {"low", 10}};
    ASSERT_TRUE(set_policy(s, p).ok());
    for (const char* n : {"n1", "n2"}) ASSERT_TRUE(add_node(s, NodeSpec{n, kType, "", {}}, 0).ok());
  }
  void submit(const JobSpec& spec, Time at) { ASSERT_TRUE(submit_job(s, spec, at).ok()); }
  JobId id(const std::string& name) { return s.find_job(name)->id; }
  TeamId team_id(const std::string& name) { return s.find_team(name)->id; }
  TypeId type() { return *s.catalog.find(kType); }
  ClusterState s;
};

TEST_F(PreemptionRecordTest, ReclaimNamesTheRuleAndBothTeamsFiguresBeforeAndAfter) {
  ASSERT_TRUE(upsert_team(s, team("a", 1, 10)).ok());
  ASSERT_TRUE(upsert_team(s, team("b", 1, 10)).ok());
  submit(job_spec("b-1", "b"), 0);
  submit(job_spec("b-2", "b"), 0);
  ASSERT_TRUE(schedule(s, 0).preemptions.empty());  // b runs both, borrowing a's idle instance
  submit(job_spec("a-1", "a"), 10);
  ScheduleResult r = schedule(s, 10);

  ASSERT_EQ(r.preemptions.size(), 1u);
  const PreemptionRecord& rec = *r.preemptions[0];
  EXPECT_EQ(rec.preemptor, id("a-1"));
  EXPECT_EQ(rec.preemptor_team, team_id("a"));
  ASSERT_EQ(rec.victims.size(), 1u);
  EXPECT_EQ(rec.victims[0], (PreemptedJob{id("b-2"), team_id("b"), PreemptionRule::kReclaim}));  // latest arrival
  ASSERT_EQ(rec.teams.size(), 2u);

  const TeamFigures& a = rec.teams[0];
  EXPECT_EQ(a.team, team_id("a"));
  ASSERT_EQ(a.types.size(), 1u);
  EXPECT_EQ(a.types[0].type, type());
  EXPECT_EQ(a.types[0].nominal, instances(1));
  EXPECT_EQ(a.types[0].usage_before, instances(0));
  EXPECT_EQ(a.types[0].usage_after, instances(1));
  EXPECT_EQ(a.types[0].borrowed_before, instances(0));
  EXPECT_EQ(a.types[0].borrowed_after, instances(0));
  EXPECT_EQ(a.share_before.num, 0);
  EXPECT_EQ(a.share_after.num, 0);

  const TeamFigures& b = rec.teams[1];
  EXPECT_EQ(b.team, team_id("b"));
  ASSERT_EQ(b.types.size(), 1u);
  EXPECT_EQ(b.types[0].usage_before, instances(2));
  EXPECT_EQ(b.types[0].usage_after, instances(1));
  EXPECT_EQ(b.types[0].borrowed_before, instances(1));
  EXPECT_EQ(b.types[0].borrowed_after, instances(0));
  // Borrowed dominant share over the pool (2 instances) divided by the weight: 1/2 / 10 = 1/20, then 0.
  EXPECT_EQ(b.share_before.num, 1);
  EXPECT_EQ(b.share_before.den, 20);
  EXPECT_EQ(b.share_after.num, 0);

  // The victim's decision carries the same record; the admission is the group's last decision.
  ASSERT_EQ(r.decisions.size(), 2u);
  const auto* d = std::get_if<PreemptDecision>(&r.decisions[0]);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->record, r.preemptions[0]);
  EXPECT_EQ(d->rule, PreemptionRule::kReclaim);
  EXPECT_TRUE(std::holds_alternative<AdmitDecision>(r.decisions[1]));
}

TEST_F(PreemptionRecordTest, PriorityWithinATeamListsOnlyThatTeamWithUnchangedUsage) {
  ASSERT_TRUE(upsert_team(s, team("a", 2, 0)).ok());
  submit(job_spec("low-1", "a").priority("low"), 0);
  submit(job_spec("low-2", "a").priority("low"), 0);
  schedule(s, 0);
  submit(job_spec("high-1", "a").priority("high"), 5);
  ScheduleResult r = schedule(s, 5);

  ASSERT_EQ(r.preemptions.size(), 1u);
  const PreemptionRecord& rec = *r.preemptions[0];
  EXPECT_EQ(rec.preemptor, id("high-1"));
  ASSERT_EQ(rec.victims.size(), 1u);
  EXPECT_EQ(rec.victims[0], (PreemptedJob{id("low-2"), team_id("a"), PreemptionRule::kPriority}));
  ASSERT_EQ(rec.teams.size(), 1u);
  const TeamFigures& a = rec.teams[0];
  ASSERT_EQ(a.types.size(), 1u);
  EXPECT_EQ(a.types[0].nominal, instances(2));
  EXPECT_EQ(a.types[0].usage_before, instances(2));
  EXPECT_EQ(a.types[0].usage_after, instances(2));
  EXPECT_EQ(a.types[0].borrowed_before, instances(0));
  EXPECT_EQ(a.types[0].borrowed_after, instances(0));
  // Weight 0: an infinite share (den 0), before and after.
  EXPECT_EQ(a.share_before.den, 0);
  EXPECT_EQ(a.share_after.den, 0);
  EXPECT_EQ(s.find_job("low-2")->state, JobState::kSuspended);
}

TEST_F(PreemptionRecordTest, APassWithoutPreemptionHasNoRecord) {
  ASSERT_TRUE(upsert_team(s, team("a", 2, 1)).ok());
  submit(job_spec("a-1", "a"), 0);
  ScheduleResult r = schedule(s, 0);
  EXPECT_TRUE(r.preemptions.empty());
  ASSERT_EQ(r.decisions.size(), 1u);
}

}  // namespace
}  // namespace allot::preemption_record_test
