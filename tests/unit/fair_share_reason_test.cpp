// The waiting job's reason when fair-sharing preemption finds no plan because a team's jobs are taken lowest
// priority first (core/preemption/fair_share_preemption.cpp, shields_lower_priority): it names the lower-priority job that may
// not be taken and why, and the higher-priority candidate it keeps out, both as job_ref()s, so a member of another
// team reads neither name (view::hide_job_refs).
#include <gtest/gtest.h>

#include "core/pass/scheduler.h"
#include "view/job_refs.h"

#include "spec_builders.h"

namespace allot::fair_share_reason_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator: one replica per node

TeamSpec team(const std::string& name) {
  TeamSpec t;
  t.name = name;
  t.fair_share_weight = 1;
  AmountSpec a;
  a.instances = 4;
  t.allocation = {{kType, a}};
  t.strategy = SharingStrategy::kLendAndBorrow;
  t.borrow_limit = 300;
  return t;
}

using allot::test::job_spec;
using allot::test::JobBuilder;
// Every job here asks for kType.
JobBuilder typed_job(const std::string& name, const std::string& team) { return job_spec(name, team).instance_type(kType); }

// Teams a, b and c with a nominal quota of 4 nodes each on 12 nodes, fair-sharing preemption on.
class FairShareReasonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PolicySpec p;
    p.fair_share_preemption = true;
    p.min_runtime_s = 60;
    p.priority_classes = {{"low", 10}, {"mid", 20}, {"high", 30}};
    ASSERT_TRUE(set_policy(s, p).ok());
    for (int i = 1; i <= 12; ++i) ASSERT_TRUE(add_node(s, NodeSpec{"n-" + std::to_string(i), kType, "", {}}, 0).ok());
    for (const char* t : {"a", "b", "c"}) ASSERT_TRUE(upsert_team(s, team(t)).ok());
  }
  void submit(const JobSpec& spec, Time at) { ASSERT_TRUE(submit_job(s, spec, at).ok()); }
  const Job& find(const std::string& name) { return *s.find_job(name); }
  std::string reason(const std::string& name) { return find(name).reason.str(); }
  ClusterState s;
};

const view::SeesTeamJobs kSeesOnlyB = [](const std::string& t) { return t == "b"; };

TEST_F(FairShareReasonTest, NamesTheLowerPriorityJobThatWouldTakeItsTeamBelowNominal) {
  // a holds 7 (a-mid 6, a-high 1), b its nominal 4; b-new would borrow 2. a-high alone would make room and passes
  // the share rule, but a-mid may not go (a would hold 1 of its 4) and a's jobs go lowest priority first.
  submit(typed_job("a-mid", "a").replicas(6).priority("mid"), 0);
  submit(typed_job("a-high", "a").priority("high"), 0);
  submit(typed_job("b-old", "b").replicas(4).priority("mid"), 0);
  schedule(s, 0);
  ASSERT_EQ(find("a-mid").state, JobState::kRunning);
  submit(typed_job("b-new", "b").replicas(2).priority("mid"), 100);
  schedule(s, 100);
  ASSERT_EQ(find("b-new").state, JobState::kPending);
  ASSERT_EQ(find("a-high").state, JobState::kRunning);
  const std::string text = reason("b-new");
  EXPECT_NE(text.find(("fair share takes a team's jobs lowest priority first, and " + job_ref("a-mid", "a") +
                       " may not be taken (team a would fall below its nominal quota), so " + job_ref("a-high", "a") +
                       ", of higher priority, is not taken either")
                          .str()),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("would still not make room"), std::string::npos) << text;
  // Hidden by the references the reason carries (the text is not read for them).
  const std::string seen_by_b = view::hide_job_refs(find("b-new").reason, kSeesOnlyB);
  EXPECT_EQ(seen_by_b.find("a-mid"), std::string::npos) << seen_by_b;
  EXPECT_EQ(seen_by_b.find("a-high"), std::string::npos) << seen_by_b;
  EXPECT_NE(seen_by_b.find("and a job of team a may not be taken (team a would fall below its nominal quota), so a job of team a, "
                           "of higher priority, is not taken either"),
            std::string::npos)
      << seen_by_b;
}

TEST_F(FairShareReasonTest, NamesTheMinimumRuntimeWhenItProtectsTheLowestPriorityJob) {
  // a holds 7: a-high and a-mid (5) from t=0, a-low (1) from t=95. At t=100 the minimum runtime (60 s) protects
  // a-low, which shields a-high (a-mid may not go: a would fall below nominal), so b-new waits.
  submit(typed_job("a-high", "a").priority("high"), 0);
  submit(typed_job("a-mid", "a").replicas(5).priority("mid"), 0);
  submit(typed_job("b-old", "b").replicas(4).priority("mid"), 0);
  schedule(s, 0);
  submit(typed_job("a-low", "a").priority("low"), 95);
  schedule(s, 95);
  ASSERT_EQ(find("a-low").state, JobState::kRunning);
  submit(typed_job("b-new", "b").replicas(2).priority("mid"), 100);
  schedule(s, 100);
  ASSERT_EQ(find("b-new").state, JobState::kPending);
  const std::string text = reason("b-new");
  EXPECT_NE(text.find((job_ref("a-low", "a") + " may not be taken (the minimum runtime protects it), so " + job_ref("a-high", "a") +
                      ", of higher priority, is not taken either")
                          .str()),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 running job(s) are protected by the minimum runtime of 60 s"), std::string::npos) << text;

  // Once the minimum runtime has passed, a-low is the one fair share takes.
  schedule(s, 200);
  EXPECT_EQ(find("b-new").state, JobState::kRunning) << reason("b-new");
  EXPECT_EQ(find("a-low").state, JobState::kSuspended);
  EXPECT_EQ(find("a-high").state, JobState::kRunning);
}

TEST_F(FairShareReasonTest, KeepsTheGeneralTextWhenTheRuleKeptNoCandidateOut) {
  // a holds 6 in one job: it may not go (a would fall below nominal) and no higher-priority job of a waits behind
  // it, so the lowest-priority-first rule is not what stops b-new.
  submit(typed_job("a-big", "a").replicas(6).priority("mid"), 0);
  submit(typed_job("b-old", "b").replicas(4).priority("mid"), 0);
  schedule(s, 0);
  submit(typed_job("b-new", "b").replicas(3).priority("mid"), 100);
  schedule(s, 100);
  ASSERT_EQ(find("b-new").state, JobState::kPending);
  EXPECT_NE(reason("b-new").find("preempting every candidate would still not make room"), std::string::npos) << reason("b-new");
  EXPECT_EQ(reason("b-new").find("lowest priority first"), std::string::npos) << reason("b-new");
}

}  // namespace
}  // namespace allot::fair_share_reason_test
