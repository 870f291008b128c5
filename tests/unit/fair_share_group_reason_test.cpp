// A fair-share victim's reason in a cohort tree (docs/scheduling.md, "Cohort trees"): when the share rules
// compared the nodes under the two teams' lowest common group, the reason names those nodes (groups, or a team
// and a group) and quotes their shares; teams of one group are compared, and quoted, as teams, in the words of
// a cluster without groups.
#include <gtest/gtest.h>

#include "core/preemption/preemption_record.h"
#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::fair_share_group_reason_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator: one replica per node

TeamSpec team(const std::string& name, const std::string& group, int instances, SharingStrategy strategy) {
  TeamSpec t;
  t.name = name;
  t.group = group;
  t.fair_share_weight = 1;
  AmountSpec a;
  a.instances = instances;
  t.allocation = {{kType, a}};
  t.strategy = strategy;
  t.borrow_limit = 1000;
  return t;
}

test::JobBuilder node_job(const std::string& name, const std::string& team) {
  return test::job_spec(name, team).instance_type(kType).whole_nodes();
}

// 9 nodes; z (no group) lends 6; x1 and x2 in group x under root org, y1 in group y under org; quotas 1 each.
class FairShareGroupReasonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PolicySpec p;
    p.fair_share_preemption = true;
    p.groups = {GroupSpec{.name = "org"}, GroupSpec{.name = "x", .parent = "org"}, GroupSpec{.name = "y", .parent = "org"}};
    ASSERT_TRUE(set_policy(s, p).ok());
    for (int i = 1; i <= 9; ++i) ASSERT_TRUE(add_node(s, NodeSpec{"n" + std::to_string(i), kType, "", {}}, 0).ok());
    ASSERT_TRUE(upsert_team(s, team("x1", "x", 1, SharingStrategy::kLendAndBorrow)).ok());
    ASSERT_TRUE(upsert_team(s, team("x2", "x", 1, SharingStrategy::kLendAndBorrow)).ok());
    ASSERT_TRUE(upsert_team(s, team("y1", "y", 1, SharingStrategy::kLendAndBorrow)).ok());
    ASSERT_TRUE(upsert_team(s, team("z", "", 6, SharingStrategy::kLend)).ok());
  }
  void submit(const JobSpec& spec, Time at) { ASSERT_TRUE(submit_job(s, spec, at).ok()); }
  const Job& find(const std::string& name) { return *s.find_job(name); }
  ClusterState s;
};

// x1 and y1 meet under org: groups x and y are compared, and the reason says so with the groups' shares.
TEST_F(FairShareGroupReasonTest, TeamsOfSiblingGroupsAreQuotedByTheirGroups) {
  submit(node_job("z-1", "z"), 0);
  submit(node_job("x1-own", "x1"), 0);
  for (int i = 1; i <= 7; ++i) submit(node_job("y1-" + std::to_string(i), "y1"), i);
  schedule(s, 8);
  ASSERT_EQ(find("y1-7").state, JobState::kRunning) << find("y1-7").reason.str();
  submit(node_job("x1-more", "x1"), 10);
  const ScheduleResult r = schedule(s, 10);
  ASSERT_EQ(find("x1-more").state, JobState::kRunning) << find("x1-more").reason.str();
  ASSERT_EQ(find("y1-7").state, JobState::kSuspended);
  // The preemption record lists the two groups compared, the preemptor's first, with their shares.
  const PreemptionRecord* record = nullptr;
  for (const Decision& d : r.decisions)
    if (const auto* p = std::get_if<PreemptDecision>(&d); p && p->record) record = p->record.get();
  ASSERT_NE(record, nullptr);
  ASSERT_EQ(record->groups.size(), 2u);
  auto value = [](const Share& sh) { return static_cast<double>(sh.num) / static_cast<double>(sh.den); };
  EXPECT_EQ(s.cohorts.groups[static_cast<size_t>(record->groups[0].group)].spec.name, "x");
  EXPECT_DOUBLE_EQ(value(record->groups[0].share_before), 0.0);
  EXPECT_DOUBLE_EQ(value(record->groups[0].share_after), 0.0);
  EXPECT_EQ(s.cohorts.groups[static_cast<size_t>(record->groups[1].group)].spec.name, "y");
  EXPECT_DOUBLE_EQ(value(record->groups[1].share_before), 6.0 / 9.0);
  EXPECT_DOUBLE_EQ(value(record->groups[1].share_after), 5.0 / 9.0);
  EXPECT_EQ(named(s, *record).groups[1].group, "y");
  const std::string why = find("y1-7").reason.str();
  // Group x's subtree quota is 2 (x1's and x2's idle quota): holding 2 after admission it borrows nothing from
  // above, so its share stays 0, while team x1's goes from 0 to 1/9. Group y: 6/9 before, 5/9 after.
  EXPECT_NE(why.find("preempted (fair share): group y is above its fair share; job x1-more of team x1 takes its place by "
                     "LessThanOrEqualToFinalShare (teams x1 and y1 meet under group org, so group x and group y are compared: "
                     "group x's share after admission is at most group y's after); shares: group x (team x1's) 0.000 -> 0.000, "
                     "group y (team y1's) 0.667 -> 0.556"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("team y1 is above"), std::string::npos) << why;
}

// x1 and x2 share group x: compared as teams, and the reason reads as in a cluster without groups.
TEST_F(FairShareGroupReasonTest, TeamsOfOneGroupAreQuotedAsTeams) {
  submit(node_job("z-1", "z"), 0);
  submit(node_job("x1-own", "x1"), 0);
  for (int i = 1; i <= 7; ++i) submit(node_job("x2-" + std::to_string(i), "x2"), i);
  schedule(s, 8);
  ASSERT_EQ(find("x2-7").state, JobState::kRunning) << find("x2-7").reason.str();
  submit(node_job("x1-more", "x1"), 10);
  const ScheduleResult r = schedule(s, 10);
  ASSERT_EQ(find("x1-more").state, JobState::kRunning) << find("x1-more").reason.str();
  ASSERT_EQ(find("x2-7").state, JobState::kSuspended);
  for (const Decision& d : r.decisions)
    if (const auto* p = std::get_if<PreemptDecision>(&d); p && p->record)
      EXPECT_TRUE(p->record->groups.empty()) << "teams compared as teams add no group to the record";
  const std::string why = find("x2-7").reason.str();
  EXPECT_NE(why.find("preempted (fair share): team x2 is above its fair share; job x1-more of team x1 takes its place by "
                     "LessThanOrEqualToFinalShare (team x1's share after admission is at most team x2's after); shares: "
                     "team x1 0.000 -> 0.111, team x2 0.667 -> 0.556"),
            std::string::npos)
      << why;
  const std::string preempted = why.substr(0, why.find("; waiting"));  // its wait after names its team's groups
  EXPECT_EQ(preempted.find("group"), std::string::npos) << why;
}

}  // namespace
}  // namespace allot::fair_share_group_reason_test
