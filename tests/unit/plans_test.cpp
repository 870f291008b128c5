// Capacity plans in the core (core/model/plans.h): states from time, checks on a plan, its nodes, the quota it gives,
// and what its end does. The scenario files plan_*.yaml cover the same rules end to end.
#include <gtest/gtest.h>

#include "core/model/plans.h"
#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::plans_test {
namespace {

PlanSpec plan(std::string name, int count, Time start, Time end, Time grace = 0, std::string team = "") {
  return PlanSpec{std::move(name), "ml.g5.8xlarge", count, start, end, grace, std::move(team), {}};
}

using allot::test::job_spec;

ClusterState cluster() {
  ClusterState s;
  TeamSpec a{.name = "a"};
  AmountSpec one;
  one.instances = 1;
  a.allocation = {{"ml.g5.8xlarge", one}};
  EXPECT_TRUE(upsert_team(s, a).ok());
  EXPECT_TRUE(add_node(s, NodeSpec{"n1", "ml.g5.8xlarge", "", {}}, 0).ok());
  return s;
}

// Applies every step due by `now`, adding the plan's nodes as it starts (what the simulator does).
void advance(ClusterState& s, Time now) {
  while (auto step = next_plan_step(s)) {
    if (step->at > now) break;
    ASSERT_TRUE(apply_plan_step(s, step->plan, step->to, now).ok());
    if (step->to == PlanState::kActive) ASSERT_TRUE(add_nodes(s, plan_node_specs(s, s.plans[step->plan.index()]), now).ok());
  }
}

TEST(Plans, StateFollowsTime) {
  const PlanSpec p = plan("p", 1, 100, 1000, 200);
  EXPECT_EQ(plan_state_at(p, 99), PlanState::kScheduled);
  EXPECT_EQ(plan_state_at(p, 100), PlanState::kActive);
  EXPECT_EQ(plan_state_at(p, 799), PlanState::kActive);
  EXPECT_EQ(plan_state_at(p, 800), PlanState::kEnding);
  EXPECT_EQ(plan_state_at(p, 1000), PlanState::kExpired);
}

TEST(Plans, BadPlansAreRefusedWithTheRule) {
  ClusterState s = cluster();
  auto bad = [&](PlanSpec p, const std::string& words) {
    auto st = add_plan(s, p);
    ASSERT_FALSE(st.ok()) << p.name;
    EXPECT_NE(st.error().message.find(words), std::string::npos) << st.error().message;
  };
  bad(plan("Upper", 1, 0, 10), "plan name");
  bad(plan("p", 0, 0, 10), "count must be 1..");
  bad(plan("p", 1, 10, 10), "must come after start");
  bad(plan("p", 1, 0, 10, 11), "grace must be 0..10");
  bad(plan("p", 1, 0, 10, 0, "nobody"), "unknown team 'nobody'");
  PlanSpec t = plan("p", 1, 0, 10);
  t.instance_type = "ml.nope";
  bad(t, "ml.nope");
  EXPECT_TRUE(s.plans.empty()) << "a refused plan leaves nothing behind";
  ASSERT_TRUE(add_plan(s, plan("p", 1, 0, 10)).ok());
  bad(plan("p", 1, 0, 10), "already exists");
}

TEST(Plans, AJobOnAPlanWaitsThenRunsOnItsNodesOnly) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_plan(s, plan("p", 1, 100, 1000, 0, "a")).ok());
  ASSERT_TRUE(submit_job(s, job_spec("j", "a").plan("p"), 0).ok());
  schedule(s, 0);
  const Job* j = s.find_job("j");
  EXPECT_EQ(j->state, JobState::kPending);
  EXPECT_EQ(j->reason_code, ReasonCode::kPlanPending);
  EXPECT_TRUE(j->feasible);
  advance(s, 100);
  schedule(s, 100);
  ASSERT_EQ(j->state, JobState::kRunning);
  ASSERT_EQ(j->placement.nodes().size(), 1u);
  EXPECT_EQ(s.nodes[j->placement.nodes()[0].index()].name, "p-1") << "n1 is free, but the job runs on its plan's node";
}

// An elastic job is tried at each size on a copy of what placement reads (job_at_size): the copy keeps its plan.
TEST(Plans, AnElasticJobOnAPlanWaitsForItAndRunsOnItsNodesOnly) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_plan(s, plan("p", 1, 100, 1000, 0, "a")).ok());
  JobSpec e = job_spec("e", "a").replicas(2).plan("p");
  e.pod_sets[0].min_replicas = 1;
  ASSERT_TRUE(submit_job(s, e, 0).ok());
  schedule(s, 0);
  const Job* j = s.find_job("e");
  EXPECT_EQ(j->state, JobState::kPending) << "n1 is free, but its plan has not started";
  EXPECT_EQ(j->reason_code, ReasonCode::kPlanPending);
  advance(s, 100);
  schedule(s, 100);
  ASSERT_EQ(j->state, JobState::kRunning);
  ASSERT_EQ(j->placement.nodes().size(), 1u) << "one replica on the plan's one node, none on n1";
  EXPECT_EQ(s.nodes[j->placement.nodes()[0].index()].name, "p-1");
}

TEST(Plans, AnOwnedPlanRaisesItsTeamsQuotaWhileActive) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_plan(s, plan("p", 2, 100, 1000, 100, "a")).ok());
  const auto nominal = [&] { return s.teams[0].nominal[s.catalog.find("ml.g5.8xlarge")->index()].accelerators; };
  EXPECT_EQ(nominal(), 1);
  advance(s, 100);
  EXPECT_EQ(nominal(), 3);
  advance(s, 900);
  EXPECT_EQ(nominal(), 1) << "the quota goes back when the grace period begins";
}

TEST(Plans, TheEndRequeuesItsJobsAndItsNodesLeave) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_plan(s, plan("p", 1, 0, 1000, 100, "a")).ok());
  advance(s, 0);
  ASSERT_TRUE(submit_job(s, job_spec("j", "a").plan("p"), 0).ok());
  schedule(s, 0);
  ASSERT_EQ(s.find_job("j")->state, JobState::kRunning);
  auto step = next_plan_step(s);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->to, PlanState::kEnding);
  EXPECT_EQ(step->at, 900);
  auto out = apply_plan_step(s, step->plan, step->to, 900);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->suspended.size(), 1u);
  const Job* j = s.find_job("j");
  EXPECT_EQ(j->state, JobState::kSuspended);
  EXPECT_EQ(j->reason_code, ReasonCode::kPlanEnding);
  EXPECT_NE(j->reason.str().find("plan p ends"), std::string::npos) << j->reason.str();
  EXPECT_EQ(j->work_done_s, 900) << "checkpointed: the work so far is kept";
  EXPECT_TRUE(s.find_node("p-1")->cordoned);
  auto bad = apply_plan_step(s, step->plan, PlanState::kActive, 950);
  EXPECT_FALSE(bad.ok()) << "steps go one way, one at a time";
  out = apply_plan_step(s, step->plan, PlanState::kExpired, 1000);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->nodes_left, std::vector<std::string>{"p-1"});
  EXPECT_EQ(s.find_node("p-1"), nullptr);
  schedule(s, 1000);
  EXPECT_EQ(j->reason_code, ReasonCode::kPlanEnded);
  EXPECT_FALSE(j->feasible);
  EXPECT_FALSE(submit_job(s, job_spec("late", "a").plan("p"), 1001).ok()) << "an expired plan takes no new jobs";
}

TEST(Plans, NodesJoinOnlyAnActivePlanOfItsTypeAndSize) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_plan(s, plan("p", 1, 100, 1000)).ok());
  NodeSpec n{"x", "ml.g5.8xlarge", "", {{std::string(kPlanLabel), "p"}}};
  auto early = add_node(s, n, 0);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().reason, ErrorReason::kPlanNotStarted) << early.error().message;
  advance(s, 100);  // p-1 joins
  n.name = "y";
  EXPECT_FALSE(add_node(s, n, 100).ok()) << "its one node has joined";
  n.labels[std::string(kPlanLabel)] = "other";
  EXPECT_FALSE(add_node(s, n, 100).ok()) << "an unknown plan";
  EXPECT_FALSE(submit_job(s, job_spec("j", "a").plan("other"), 100).ok()) << "a job naming an unknown plan";
}

TEST(Plans, DeletingAPlanEndsItNow) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_plan(s, plan("p", 1, 0, 1000)).ok());
  advance(s, 0);
  ASSERT_TRUE(submit_job(s, job_spec("j", "a").plan("p"), 0).ok());
  schedule(s, 0);
  auto out = delete_plan(s, "p", 10);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->suspended.size(), 1u);
  EXPECT_EQ(s.find_plan("p"), nullptr);
  EXPECT_FALSE(next_plan_step(s)) << "a deleted plan takes no more steps";
  schedule(s, 10);
  EXPECT_NE(s.find_job("j")->reason.str().find("plan p was deleted"), std::string::npos);
}

}  // namespace
}  // namespace allot::plans_test
