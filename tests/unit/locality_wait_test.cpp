// Waiting for locality (docs/scheduling.md, "Waiting for locality"; core/placement/locality_wait.h): a job with a
// `preferred` topology request that would run spread, although one domain of the empty cluster could hold it,
// waits up to its locality wait for one domain; without a wait (the default) it spreads at once.
#include <gtest/gtest.h>

#include <set>

#include "core/pass/scheduler.h"
#include "core/placement/topology_levels.h"

#include "spec_builders.h"

namespace allot::locality_wait_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator: one replica per node
constexpr const char* kLayer3 = "network-node-layer-3";

// Two layer-3 domains of 4 nodes (nn-a: a1..a4, nn-b: b1..b4); one team that may use all 8.
class LocalityWaitTest : public ::testing::Test {
 protected:
  void build(int64_t wait, std::vector<PriorityClassSpec> classes = {}) {
    PolicySpec p;
    p.locality_wait_s = wait;
    p.priority_classes = std::move(classes);
    ASSERT_TRUE(set_policy(s, p).ok());
    for (const char* d : {"a", "b"})
      for (int i = 1; i <= 4; ++i)
        ASSERT_TRUE(add_node(s, NodeSpec{std::string(d) + std::to_string(i), kType, "", {{kLayer3, std::string("nn-") + d}}}, 0).ok());
    TeamSpec t;
    t.name = "ml";
    AmountSpec a;
    a.instances = 8;
    t.allocation = {{kType, a}};
    ASSERT_TRUE(upsert_team(s, t).ok());
  }
  void submit(const JobSpec& spec, Time at) { ASSERT_TRUE(submit_job(s, spec, at).ok()); }
  const Job& find(const std::string& name) { return *s.find_job(name); }
  test::JobBuilder gang(const std::string& name, int replicas) {
    return test::job_spec(name, "ml").instance_type(kType).whole_nodes().replicas(replicas).topology({.preferred = kLayer3});
  }
  // A 2-node job in nn-a and a 3-node one in nn-b: 3 nodes free, 2 in nn-a and 1 in nn-b.
  void half_fill() {
    submit(gang("left", 2).topology({.required = kLayer3}), 0);
    submit(gang("right", 3).topology({.required = kLayer3}), 0);
    schedule(s, 0);
    ASSERT_EQ(find("left").state, JobState::kRunning);
    ASSERT_EQ(find("right").state, JobState::kRunning);
    ASSERT_NE(s.tree.ancestor(find("left").placement.nodes().front(), layer3()),
              s.tree.ancestor(find("right").placement.nodes().front(), layer3()));
  }
  int layer3() const { return *find_level(s.levels, kLayer3); }
  size_t domains(const Job& j) {
    std::set<int> out;
    for (NodeId n : j.placement.nodes()) out.insert(s.tree.ancestor(n, layer3()));
    return out.size();
  }
  ClusterState s;
};

TEST_F(LocalityWaitTest, WithoutAWaitItSpreadsAtOnce) {
  build(0);
  half_fill();
  submit(gang("wide", 3), 10);
  const ScheduleResult r = schedule(s, 10);
  ASSERT_EQ(find("wide").state, JobState::kRunning);
  EXPECT_EQ(domains(find("wide")), 2u);
}

TEST_F(LocalityWaitTest, WaitsForOneDomainThenSpreadsWhenTheWaitEnds) {
  build(600);
  half_fill();
  submit(gang("wide", 3), 10);
  const ScheduleResult r = schedule(s, 10);
  const Job& wide = find("wide");
  ASSERT_EQ(wide.state, JobState::kPending);
  EXPECT_EQ(wide.reason_code, ReasonCode::kLocality);
  EXPECT_NE(wide.reason.str().find("waiting for locality: it would run now spread over 2 network-node-layer-3 domains; "
                                   "it waits for one to have room until t=610 (locality_wait 600 s), then runs spread"),
            std::string::npos)
      << wide.reason.str();
  ASSERT_TRUE(r.next_wakeup.has_value());
  EXPECT_EQ(*r.next_wakeup, 610);
  schedule(s, 609);
  EXPECT_EQ(find("wide").state, JobState::kPending);
  schedule(s, 610);
  ASSERT_EQ(find("wide").state, JobState::kRunning);
  EXPECT_EQ(domains(find("wide")), 2u);
}

TEST_F(LocalityWaitTest, RunsInOneDomainWhenOneFreesUpDuringTheWait) {
  build(600);
  half_fill();
  submit(gang("wide", 3), 10);
  schedule(s, 10);
  ASSERT_EQ(find("wide").state, JobState::kPending);
  ASSERT_TRUE(finish_job(s, "left", 100, true).ok());
  schedule(s, 100);
  ASSERT_EQ(find("wide").state, JobState::kRunning);
  EXPECT_EQ(domains(find("wide")), 1u);
}

TEST_F(LocalityWaitTest, NoWaitWhenNoDomainCouldEverHoldIt) {
  build(600);
  submit(gang("huge", 6), 0);  // a domain has 4 nodes
  schedule(s, 0);
  ASSERT_EQ(find("huge").state, JobState::kRunning);
  EXPECT_EQ(domains(find("huge")), 2u);
}

TEST_F(LocalityWaitTest, APriorityClassSetsItsOwnWait) {
  build(600, {{.name = "urgent", .weight = 50, .locality_wait_s = 0}, {.name = "patient", .weight = 10}});
  half_fill();
  submit(gang("urgent-wide", 3).priority("urgent"), 10);  // its class's 0 s: spreads at once
  schedule(s, 10);
  ASSERT_EQ(find("urgent-wide").state, JobState::kRunning);
  EXPECT_EQ(domains(find("urgent-wide")), 2u);
}

TEST_F(LocalityWaitTest, AClassWithoutItsOwnWaitHasThePolicys) {
  // patient weighs what the jobs of half_fill weigh (no class): it could not preempt them to run in one domain.
  build(600, {{.name = "urgent", .weight = 50, .locality_wait_s = 0}, {.name = "patient", .weight = 0}});
  half_fill();
  submit(gang("patient-wide", 3).priority("patient"), 10);
  schedule(s, 10);
  EXPECT_EQ(find("patient-wide").reason_code, ReasonCode::kLocality);
  EXPECT_NE(find("patient-wide").reason.str().find("until t=610 (locality_wait 600 s)"), std::string::npos);
}

// While it waits, a job preempts only to run in one domain, by the ordinary rules (here: lower priority within
// the team): the plan is made for it with its preferred request made required (issue 29 item 3: on the cluster04
// replay this shortened the held jobs' waits, most of whose teams were within their quota while others
// borrowed). Without a plan that keeps it in one domain it preempts nothing and waits.
TEST_F(LocalityWaitTest, PreemptsOnlyToRunInOneDomainWhileItWaits) {
  for (const char* victims : {"", "high"}) {
    SCOPED_TRACE(std::string("left and right of class '") + victims + "'");
    s = ClusterState{};
    build(600, {{.name = "low", .weight = 10}, {.name = "high", .weight = 50}});
    TeamSpec t = s.teams.front().spec;
    t.preempt_team_tasks = PreemptTeamTasks::kLowerPriority;
    ASSERT_TRUE(upsert_team(s, t).ok());
    submit(gang("left", 2).topology({.required = kLayer3}).priority(victims), 0);
    submit(gang("right", 3).topology({.required = kLayer3}).priority(victims), 0);
    schedule(s, 0);
    ASSERT_EQ(s.running_jobs.size(), 2u);
    // 3 nodes free, 2 in one domain and 1 in the other: wide could run now only spread.
    submit(gang("wide", 3).priority("high"), 10);
    schedule(s, 10);
    if (std::string(victims).empty()) {
      // left and right are below wide: one of them makes room for it in one domain.
      ASSERT_EQ(find("wide").state, JobState::kRunning) << find("wide").reason.str();
      EXPECT_EQ(domains(find("wide")), 1u);
      EXPECT_EQ((find("left").state == JobState::kRunning) + (find("right").state == JobState::kRunning), 1);
      continue;
    }
    // Of its own priority: no plan keeps it in one domain, so it waits and preempts nobody.
    EXPECT_EQ(find("wide").reason_code, ReasonCode::kLocality) << find("wide").reason.str();
    EXPECT_EQ(find("left").state, JobState::kRunning);
    EXPECT_EQ(find("right").state, JobState::kRunning);
  }
}

// Nor does a job that could only run by preemption preempt its way into a spread placement while its wait lasts:
// it waits for one domain as it would if it could run spread at once (issue 29 item 3: all 34 jobs that still ran
// spread on the cluster04 replay with an unbounded wait were admitted by preemption). Without a wait it preempts.
TEST_F(LocalityWaitTest, DoesNotPreemptIntoASpreadPlacementWhileItWaits) {
  for (int64_t wait : {600, 0}) {
    SCOPED_TRACE(wait);
    s = ClusterState{};
    build(wait, {{.name = "low", .weight = 10}, {.name = "high", .weight = 50}});
    // Two high jobs leave 2 nodes free in nn-a and 1 in nn-b; two low one-node jobs take two of those three.
    submit(gang("left", 2).topology({.required = kLayer3}).priority("high"), 0);
    submit(gang("right", 3).topology({.required = kLayer3}).priority("high"), 0);
    schedule(s, 0);
    submit(test::job_spec("low1", "ml").instance_type(kType).whole_nodes().replicas(1).priority("low"), 1);
    submit(test::job_spec("low2", "ml").instance_type(kType).whole_nodes().replicas(1).priority("low"), 1);
    schedule(s, 1);
    ASSERT_EQ(s.running_jobs.size(), 4u);
    // wide needs 3 nodes: only by preempting both low jobs, and then on 2 nodes of nn-a and 1 of nn-b.
    submit(gang("wide", 3).priority("high"), 10);
    schedule(s, 10);
    if (wait == 0) {
      ASSERT_EQ(find("wide").state, JobState::kRunning) << find("wide").reason.str();
      EXPECT_EQ(domains(find("wide")), 2u);
      EXPECT_NE(find("low1").state, JobState::kRunning);
      continue;
    }
    EXPECT_EQ(find("wide").state, JobState::kPending);
    EXPECT_EQ(find("wide").reason_code, ReasonCode::kLocality) << find("wide").reason.str();
    EXPECT_EQ(find("low1").state, JobState::kRunning);
    EXPECT_EQ(find("low2").state, JobState::kRunning);
  }
}

// The wait counts from the first pass that could have run the job spread, not from its submission: a job that
// first waited for capacity still gets its whole wait once room appears (issue 29: counted from submission, such
// jobs spread at once).
TEST_F(LocalityWaitTest, TheWaitCountsFromTheFirstPassThatCouldRunItSpread) {
  build(600);
  half_fill();
  for (const char* f : {"f1", "f2", "f3"}) submit(test::job_spec(f, "ml").instance_type(kType).whole_nodes().replicas(1), 0);
  schedule(s, 0);
  submit(gang("wide", 3), 10);
  ScheduleResult r = schedule(s, 10);
  ASSERT_EQ(find("wide").state, JobState::kPending);
  EXPECT_NE(find("wide").reason_code, ReasonCode::kLocality);
  EXPECT_TRUE(r.locality_waits.empty());
  EXPECT_FALSE(find("wide").locality_wait_from.has_value());
  for (const char* f : {"f1", "f2", "f3"}) ASSERT_TRUE(finish_job(s, f, 1000, true).ok());
  r = schedule(s, 1000);
  ASSERT_EQ(find("wide").state, JobState::kPending);
  EXPECT_EQ(find("wide").reason_code, ReasonCode::kLocality);
  EXPECT_NE(find("wide").reason.str().find("until t=1600 (locality_wait 600 s)"), std::string::npos) << find("wide").reason.str();
  ASSERT_EQ(r.locality_waits.size(), 1u);
  EXPECT_EQ(r.locality_waits[0].job, find("wide").id);
  EXPECT_EQ(r.locality_waits[0].from, 1000);
  EXPECT_EQ(find("wide").locality_wait_from, std::optional<Time>(1000));
  // Later passes keep the start and report no new one.
  r = schedule(s, 1200);
  EXPECT_TRUE(r.locality_waits.empty());
  EXPECT_EQ(find("wide").locality_wait_from, std::optional<Time>(1000));
  EXPECT_EQ(r.next_wakeup, std::optional<Time>(1600));
  schedule(s, 1600);
  ASSERT_EQ(find("wide").state, JobState::kRunning);
  EXPECT_EQ(domains(find("wide")), 2u);
  EXPECT_FALSE(find("wide").locality_wait_from.has_value()) << "admission ends the waiting period";
}

// The start a journal record restores: only for a waiting job, and once per waiting period.
TEST_F(LocalityWaitTest, StartingAWaitChecksTheJob) {
  build(600);
  half_fill();
  submit(gang("wide", 3), 10);
  EXPECT_TRUE(start_locality_wait(s, find("wide").id, 5).ok());
  EXPECT_EQ(find("wide").locality_wait_from, std::optional<Time>(5));
  auto again = start_locality_wait(s, find("wide").id, 6);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("started already at t=5"), std::string::npos) << again.error().message;
  auto running = start_locality_wait(s, find("left").id, 6);
  ASSERT_FALSE(running.ok());
  EXPECT_NE(running.error().message.find("is Running, not waiting"), std::string::npos) << running.error().message;
  // A restored start counts: the wait ends 600 s after it, not after the pass.
  schedule(s, 10);
  EXPECT_NE(find("wide").reason.str().find("until t=605"), std::string::npos) << find("wide").reason.str();
}

}  // namespace
}  // namespace allot::locality_wait_test
