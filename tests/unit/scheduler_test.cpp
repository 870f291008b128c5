// Unit tests of the core through its operations: quota arithmetic, queue order, victim selection, placement.
#include <gtest/gtest.h>

#include <set>

#include "core/preemption/preemption.h"
#include "core/quota/quota.h"
#include "core/pass/scheduler.h"
#include "view/state_json.h"

#include "spec_builders.h"

namespace allot::scheduler_test {
namespace {

NodeSpec node(const std::string& name, const std::string& type = "ml.g5.8xlarge",
              std::map<std::string, std::string> labels = {}) {
  return NodeSpec{name, type, "", std::move(labels)};
}

TeamSpec team(const std::string& name, int instances, SharingStrategy strategy = SharingStrategy::kLendAndBorrow,
              int borrow_limit = 100, int weight = 0, const std::string& type = "ml.g5.8xlarge") {
  TeamSpec t;
  t.name = name;
  t.fair_share_weight = weight;
  AmountSpec a;
  a.instances = instances;
  t.allocation = {{type, a}};
  t.strategy = strategy;
  t.borrow_limit = borrow_limit;
  return t;
}

using allot::test::job_spec;

class CoreTest : public ::testing::Test {
 protected:
  void nodes(int n, const std::string& type = "ml.g5.8xlarge") {
    for (int i = 1; i <= n; ++i) ASSERT_TRUE(add_node(s, node("n" + std::to_string(i), type), 0).ok());
  }
  void classes() {
    PolicySpec p;
    p.task_prioritization = TaskPrioritization::kTaskRanking;
    p.priority_classes = {{"high", 90}, {"mid", 50}, {"low", 10}};
    ASSERT_TRUE(set_policy(s, p).ok());
  }
  const Job& j(const std::string& name) { return *s.find_job(name); }
  void submit(const JobSpec& spec, Time at = 0) { ASSERT_TRUE(submit_job(s, spec, at).ok()); }
  ClusterState s;
};

TEST_F(CoreTest, QuotaPoolCountsLendersAndExcludesDontLend) {
  nodes(4);
  ASSERT_TRUE(upsert_team(s, team("a", 1)).ok());
  ASSERT_TRUE(upsert_team(s, team("b", 2, SharingStrategy::kLend)).ok());
  ASSERT_TRUE(upsert_team(s, team("c", 1, SharingStrategy::kDontLend)).ok());
  TypeId g5 = *s.catalog.find("ml.g5.8xlarge");
  EXPECT_EQ(pool_capacity(s, g5).accelerators, 3);  // a and b lend; c keeps its own
  // a may hold 1 + 100% = 2; asking 3 can never fit.
  QuotaVerdict v = check_quota(s, s.usage, s.find_team("a")->id, g5, Resources{3, 96'000, 384 * 1024});
  EXPECT_FALSE(v.fits);
  EXPECT_FALSE(v.why.feasible);
  EXPECT_EQ(v.why.code, ReasonCode::kQuota);
  v = check_quota(s, s.usage, s.find_team("a")->id, g5, Resources{2, 64'000, 256 * 1024});
  EXPECT_TRUE(v.fits);
  EXPECT_FALSE(v.within_nominal);
  // The idle pool adds what no allocation covers: 4 nodes - 4 allocated = 0 here; with 6 nodes, 2.
  PolicySpec p;
  p.idle_pool = true;
  ASSERT_TRUE(set_policy(s, p).ok());
  EXPECT_EQ(pool_capacity(s, g5).accelerators, 3);
  ASSERT_TRUE(add_node(s, node("n5"), 0).ok());
  ASSERT_TRUE(add_node(s, node("n6"), 0).ok());
  EXPECT_EQ(pool_capacity(s, g5).accelerators, 5);
}

TEST_F(CoreTest, LentIsAttributedToIdlePoolFirstThenInProportion) {
  nodes(8);
  PolicySpec p;
  p.idle_pool = true;
  ASSERT_TRUE(set_policy(s, p).ok());
  ASSERT_TRUE(upsert_team(s, team("borrower", 1, SharingStrategy::kLendAndBorrow, 1000)).ok());
  ASSERT_TRUE(upsert_team(s, team("l1", 2, SharingStrategy::kLend)).ok());
  ASSERT_TRUE(upsert_team(s, team("l2", 4, SharingStrategy::kLend)).ok());
  // 8 nodes, 7 allocated: 1 idle. The borrower runs 5: 4 borrowed, 1 from the idle pool, 3 split 1:2.
  submit(job_spec("big", "borrower").replicas(5));
  schedule(s, 0);
  ASSERT_EQ(j("big").state, JobState::kRunning);
  EXPECT_EQ(view::team_borrowed_total(s, s.find_team("borrower")->id).accelerators, 4);
  EXPECT_EQ(view::team_lent_total(s, s.find_team("l1")->id).accelerators, 1);
  EXPECT_EQ(view::team_lent_total(s, s.find_team("l2")->id).accelerators, 2);
}

TEST_F(CoreTest, TaskRankingOrdersByPriorityThenArrival) {
  nodes(1);
  classes();
  ASSERT_TRUE(upsert_team(s, team("a", 1, SharingStrategy::kDontLend)).ok());
  submit(job_spec("first-low", "a").priority("low"));
  submit(job_spec("second-high", "a").priority("high"));
  submit(job_spec("third-high", "a").priority("high"));
  // Nothing runs yet; one pass admits the highest priority, earliest arrival.
  schedule(s, 0);
  EXPECT_EQ(j("second-high").state, JobState::kRunning);
  EXPECT_EQ(j("third-high").state, JobState::kPending);
  EXPECT_EQ(j("first-low").state, JobState::kPending);
}

TEST_F(CoreTest, FcfsOrdersByArrivalOnly) {
  nodes(1);
  PolicySpec p;  // task_prioritization defaults to fcfs
  p.priority_classes = {{"high", 90}, {"low", 10}};
  ASSERT_TRUE(set_policy(s, p).ok());
  TeamSpec t = team("a", 1, SharingStrategy::kDontLend);
  t.preempt_team_tasks = PreemptTeamTasks::kNever;  // so only the queue order decides
  ASSERT_TRUE(upsert_team(s, t).ok());
  submit(job_spec("first-low", "a").priority("low"));
  submit(job_spec("second-high", "a").priority("high"));
  schedule(s, 0);
  EXPECT_EQ(j("first-low").state, JobState::kRunning);
  EXPECT_EQ(j("second-high").state, JobState::kPending);
}

TEST_F(CoreTest, BestEffortFifoLetsSmallJobsPassABlockedOne) {
  nodes(2);
  ASSERT_TRUE(upsert_team(s, team("a", 2, SharingStrategy::kDontLend)).ok());
  submit(job_spec("one", "a"));
  schedule(s, 0);
  submit(job_spec("two", "a").replicas(2));
  submit(job_spec("small", "a"));
  schedule(s, 1);
  EXPECT_EQ(j("two").state, JobState::kPending);
  EXPECT_EQ(j("small").state, JobState::kRunning);
}

TEST_F(CoreTest, StarvingJobReservesItsInstanceType) {
  nodes(2);
  PolicySpec p;
  p.starvation_threshold_s = 100;
  ASSERT_TRUE(set_policy(s, p).ok());
  // Quota for 3 on 2 nodes: what blocks 'two' is capacity, which a reservation can fix (quota it cannot).
  ASSERT_TRUE(upsert_team(s, team("a", 3, SharingStrategy::kDontLend)).ok());
  submit(job_spec("one", "a"));
  schedule(s, 0);
  submit(job_spec("two", "a").replicas(2), 0);
  submit(job_spec("small", "a"), 0);
  schedule(s, 0);
  ASSERT_EQ(j("small").state, JobState::kRunning);  // backfill before the threshold
  ASSERT_TRUE(finish_job(s, "small", 50, true).ok());
  submit(job_spec("small-2", "a"), 150);
  auto r = schedule(s, 150);
  // 'two' has waited 150 s > 100 s: the free node stays free for it.
  EXPECT_EQ(j("small-2").state, JobState::kPending);
  EXPECT_NE(j("small-2").reason.str().find("reserved for job two"), std::string::npos) << j("small-2").reason.str();
  ASSERT_TRUE(finish_job(s, "one", 200, true).ok());
  schedule(s, 200);
  EXPECT_EQ(j("two").state, JobState::kRunning);
}

TEST_F(CoreTest, VictimsAreMinimalLowestPriorityAndNewestFirst) {
  nodes(4);
  classes();
  ASSERT_TRUE(upsert_team(s, team("a", 4, SharingStrategy::kDontLend)).ok());
  submit(job_spec("low-old", "a").priority("low"), 0);
  schedule(s, 0);
  submit(job_spec("low-new", "a").priority("low"), 10);
  schedule(s, 10);
  submit(job_spec("mid", "a").replicas(2).priority("mid"), 20);
  schedule(s, 20);
  // All four nodes are busy; a high job needing one node takes the lowest priority, most recently started.
  submit(job_spec("high", "a").priority("high"), 30);
  auto r = schedule(s, 30);
  ASSERT_EQ(j("high").state, JobState::kRunning);
  EXPECT_EQ(j("low-new").state, JobState::kSuspended);
  EXPECT_EQ(j("low-old").state, JobState::kRunning);
  EXPECT_EQ(j("mid").state, JobState::kRunning);
  int preempts = 0;
  for (const auto& d : r.decisions) preempts += std::holds_alternative<PreemptDecision>(d);
  EXPECT_EQ(preempts, 1);
}

TEST_F(CoreTest, PreemptionIsMinimalAfterGreedyOvershoot) {
  // big1 runs 'low1' (2 GPUs) and 'mid1' (2 GPUs); big2 runs 'mid2' (4 GPUs). A job needing a whole 4-GPU node
  // takes 'low1' first (lowest priority), which frees only half of big1, then 'mid2' (the newer mid), which
  // frees big2. 'low1' is then not needed and is given back: the only victim is 'mid2'.
  ASSERT_TRUE(add_node(s, node("big1", "ml.g5.12xlarge"), 0).ok());
  ASSERT_TRUE(add_node(s, node("big2", "ml.g5.12xlarge"), 0).ok());
  classes();
  ASSERT_TRUE(upsert_team(s, team("a", 2, SharingStrategy::kDontLend, 0, 0, "ml.g5.12xlarge")).ok());
  auto typed = [](JobSpec spec) {
    spec.pod_sets[0].instance_type = "ml.g5.12xlarge";
    return spec;
  };
  submit(typed(job_spec("low1", "a").accelerators(2).priority("low")), 0);
  submit(typed(job_spec("mid1", "a").accelerators(2).priority("mid")), 0);
  schedule(s, 0);
  submit(typed(job_spec("mid2", "a").accelerators(4).priority("mid")), 5);
  schedule(s, 5);
  ASSERT_EQ(s.nodes[j("low1").placement.nodes()[0].index()].name, "big1");
  ASSERT_EQ(s.nodes[j("mid1").placement.nodes()[0].index()].name, "big1");
  ASSERT_EQ(s.nodes[j("mid2").placement.nodes()[0].index()].name, "big2");
  submit(typed(job_spec("high", "a").accelerators(4).priority("high")), 10);
  auto r = schedule(s, 10);
  EXPECT_EQ(j("high").state, JobState::kRunning);
  EXPECT_EQ(j("mid2").state, JobState::kSuspended);
  EXPECT_EQ(j("low1").state, JobState::kRunning);
  EXPECT_EQ(j("mid1").state, JobState::kRunning);
  int preempts = 0;
  for (const auto& d : r.decisions) preempts += std::holds_alternative<PreemptDecision>(d);
  EXPECT_EQ(preempts, 1);
}

TEST_F(CoreTest, NumaBindingKeepsAReplicaOnOneDomain) {
  ASSERT_TRUE(add_node(s, node("p5", "ml.p5.48xlarge"), 0).ok());
  ASSERT_TRUE(upsert_team(s, team("a", 1, SharingStrategy::kDontLend, 0, 0, "ml.p5.48xlarge")).ok());
  submit(job_spec("two", "a").accelerators(2));
  submit(job_spec("four", "a").accelerators(4));
  schedule(s, 0);
  const auto& two = j("two").placement.pod_sets.at(0).replicas.at(0);
  const auto& four = j("four").placement.pod_sets.at(0).replicas.at(0);
  EXPECT_EQ(two.numa_domains.size(), 1u);
  EXPECT_EQ(four.numa_domains.size(), 1u);
  EXPECT_NE(two.numa_domains, four.numa_domains);  // 'four' needs a whole domain; 'two' took half the other
  EXPECT_EQ(four.cpus, four.numa_domains[0] == 0 ? "0-95" : "96-191");
  EXPECT_EQ(four.accelerators, four.numa_domains[0] == 0 ? (std::vector<int>{0, 1, 2, 3}) : (std::vector<int>{4, 5, 6, 7}));
}

TEST_F(CoreTest, SubmitRejectsBadInputAndChangesNothing) {
  nodes(1);
  classes();
  ASSERT_TRUE(upsert_team(s, team("a", 1)).ok());
  auto unknown_class = submit_job(s, job_spec("x", "a").priority("urgent"), 0);
  ASSERT_FALSE(unknown_class.ok());
  EXPECT_NE(unknown_class.error().message.find("high, mid, low"), std::string::npos);
  auto unknown_team = submit_job(s, job_spec("x", "nobody"), 0);
  ASSERT_FALSE(unknown_team.ok());
  EXPECT_NE(unknown_team.error().message.find("teams: a"), std::string::npos);
  auto zero = submit_job(s, job_spec("x", "a").replicas(0), 0);
  EXPECT_FALSE(zero.ok());
  JobSpec bad_level = job_spec("x", "a");
  bad_level.pod_sets[0].topology.required = "rack";
  EXPECT_FALSE(submit_job(s, bad_level, 0).ok());
  EXPECT_TRUE(s.jobs.empty());
  ASSERT_TRUE(submit_job(s, job_spec("x", "a"), 0).ok());
  EXPECT_FALSE(submit_job(s, job_spec("x", "a"), 0).ok());  // names are unique
}

TEST_F(CoreTest, ScheduleIsDeterministic) {
  auto run = [] {
    ClusterState st;
    for (int i = 1; i <= 6; ++i) (void)add_node(st, node("n" + std::to_string(i)), 0);
    (void)upsert_team(st, team("a", 2, SharingStrategy::kLendAndBorrow, 200, 10));
    (void)upsert_team(st, team("b", 2, SharingStrategy::kLendAndBorrow, 200, 20));
    (void)upsert_team(st, team("c", 2, SharingStrategy::kLend));
    for (int i = 0; i < 6; ++i) {
      (void)submit_job(st, job_spec("a" + std::to_string(i), "a").replicas(1 + i % 2), i);
      (void)submit_job(st, job_spec("b" + std::to_string(i), "b").replicas(1 + (i + 1) % 2), i);
    }
    auto r = schedule(st, 10);
    std::string out;
    for (const auto& d : r.decisions) out += view::decision_json(st, d).dump();
    return out;
  };
  EXPECT_EQ(run(), run());
}

// Replacing a failed node restarts only the replicas that were on it; every other replica keeps its node, its
// accelerators and its start time (a healthy job is never moved to "tidy up" the new topology).
TEST_F(CoreTest, NodeReplacementMovesNoHealthyReplica) {
  for (const char* n : {"a-1", "a-2", "b-1", "b-2"})
    ASSERT_TRUE(add_node(s, node(n, "ml.p5.48xlarge", {{"network-node-layer-3", n[0] == 'a' ? "nn-a" : "nn-b"}}), 0).ok());
  ASSERT_TRUE(upsert_team(s, team("ml", 5, SharingStrategy::kLendAndBorrow, 100, 0, "ml.p5.48xlarge")).ok());
  JobSpec wide = job_spec("wide", "ml").replicas(2).accelerators(8);
  wide.pod_sets[0].topology.required = "network-node-layer-3";
  wide.max_retries = 1;
  submit(wide);
  submit(job_spec("small-1", "ml").accelerators(2));
  submit(job_spec("small-2", "ml").accelerators(4));
  schedule(s, 0);
  ASSERT_EQ(j("wide").state, JobState::kRunning);
  ASSERT_EQ(j("small-1").state, JobState::kRunning);
  ASSERT_EQ(j("small-2").state, JobState::kRunning);
  // Fail a node of the wide job's domain; the other jobs' placements must survive untouched.
  NodeId failed = j("wide").placement.pod_sets[0].replicas[0].node;
  std::string failed_name = s.nodes[failed.index()].name;
  std::string domain = failed_name[0] == 'a' ? "nn-a" : "nn-b";
  auto before_1 = j("small-1").placement.pod_sets[0].replicas;
  auto before_2 = j("small-2").placement.pod_sets[0].replicas;
  for (const auto& r : before_1) ASSERT_NE(r.node, failed);
  for (const auto& r : before_2) ASSERT_NE(r.node, failed);

  ASSERT_TRUE(fail_node(s, failed_name, 100).ok());
  ASSERT_TRUE(remove_node(s, failed_name, 160).ok());
  ASSERT_TRUE(add_node(s, node("r-1", "ml.p5.48xlarge", {{"network-node-layer-3", domain}}), 160).ok());
  auto r = schedule(s, 160);
  for (const auto& d : r.decisions) EXPECT_FALSE(std::holds_alternative<PreemptDecision>(d)) << "no job is preempted to make room";

  for (const char* name : {"small-1", "small-2"}) {
    const Job& sm = j(name);
    const auto& before = std::string(name) == "small-1" ? before_1 : before_2;
    EXPECT_EQ(sm.state, JobState::kRunning) << name;
    EXPECT_EQ(sm.started_at, 0) << name;
    EXPECT_EQ(sm.restarts, 0) << name;
    EXPECT_EQ(sm.preemptions, 0) << name;
    ASSERT_EQ(sm.placement.pod_sets[0].replicas.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(sm.placement.pod_sets[0].replicas[i].node, before[i].node) << name;
      EXPECT_EQ(sm.placement.pod_sets[0].replicas[i].accelerators, before[i].accelerators) << name;
    }
  }
  // The wide job resumed (one retry) inside the same layer-3 domain, on the replacement and its old peer.
  EXPECT_EQ(j("wide").state, JobState::kRunning);
  EXPECT_EQ(j("wide").restarts, 1);
  std::set<std::string> names;
  for (NodeId n : j("wide").placement.nodes()) names.insert(s.nodes[n.index()].name);
  EXPECT_TRUE(names.count("r-1")) << "the replacement node takes the failed node's place";
}


// A pass that reaches its step bound stops there rather than loop on, keeps every decision it applied, and
// names the jobs of its last steps for the drivers' log line and error event. A correct core never reaches
// the default bound, so the test lowers it: preempting `low` for `high` is one step, and finding that nothing
// more can be done would be the second.
TEST_F(CoreTest, StepBoundStopsThePassAndNamesTheJobs) {
  classes();
  nodes(1);
  ASSERT_TRUE(upsert_team(s, team("ml", 1)).ok());
  submit(job_spec("low", "ml").priority("low"));
  EXPECT_FALSE(schedule(s, 0).bound_hit);
  ASSERT_EQ(j("low").state, JobState::kRunning);
  submit(job_spec("high", "ml").priority("high"), 10);
  auto r = schedule(s, 10, ScheduleOptions{.max_steps = 1});
  ASSERT_TRUE(r.bound_hit);
  EXPECT_EQ(r.steps, 1);
  EXPECT_EQ(r.bound_hit->steps, 1);
  EXPECT_EQ(r.decisions.size(), 2u) << "the preemption and the admission stay applied";
  EXPECT_EQ(j("high").state, JobState::kRunning);
  EXPECT_EQ(j("low").state, JobState::kSuspended);
  std::set<JobId> named(r.bound_hit->jobs.begin(), r.bound_hit->jobs.end());
  EXPECT_EQ(named, (std::set<JobId>{j("high").id, j("low").id}));
  const std::string& m = r.bound_hit->message;
  EXPECT_NE(m.find("bound of 1 steps"), std::string::npos) << m;
  EXPECT_NE(m.find("low"), std::string::npos) << m;
  EXPECT_NE(m.find("high"), std::string::npos) << m;
  // With the default bound the next pass reaches its fixed point: nothing left to do, no error.
  auto next = schedule(s, 10);
  EXPECT_FALSE(next.bound_hit);
  EXPECT_TRUE(next.decisions.empty());
}

}  // namespace
}  // namespace allot::scheduler_test

namespace allot::scheduler_test {
namespace {

// Issue 15: a job beyond its team's nominal quota is told that reclaim is not for it, while its team's quota is
// lent out (it used to read "nothing to reclaim").
TEST_F(CoreTest, ReasonBeyondNominalSaysReclaimServesOnlyJobsWithinIt) {
  nodes(2);
  ASSERT_TRUE(upsert_team(s, team("a", 1)).ok());
  ASSERT_TRUE(upsert_team(s, team("b", 1)).ok());
  submit(job_spec("b1", "b"));
  submit(job_spec("b2", "b"));  // borrows a's idle GPU
  schedule(s, 0);
  ASSERT_EQ(j("b2").state, JobState::kRunning);
  submit(job_spec("a-wide", "a").replicas(2), 1);  // two GPUs: more than team a's nominal one
  schedule(s, 1);
  EXPECT_EQ(j("a-wide").state, JobState::kPending);
  EXPECT_NE(j("a-wide").reason.str().find("reclaim only serves jobs within their team's nominal quota, and this one needs "
                                          "more than team a's"),
            std::string::npos)
      << j("a-wide").reason.str();
  // Within nominal quota, the same team reclaims what it lent.
  submit(job_spec("a-one", "a"), 2);
  schedule(s, 2);
  EXPECT_EQ(j("a-one").state, JobState::kRunning) << j("a-one").reason.str();
}

}  // namespace
}  // namespace allot::scheduler_test
