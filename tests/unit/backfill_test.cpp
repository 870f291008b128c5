// Backfill with a reservation (core/admission/backfill.h, docs/scheduling.md "Backfill"): the policy key, the reservation's
// time and nodes from running jobs' limits, none where only jobs without limits block, later jobs let in only when
// they keep clear of it (elsewhere, or ending in time), and the whole policy off by default.
#include <gtest/gtest.h>

#include "config/spec_yaml.h"
#include "core/admission/backfill.h"
#include "core/pass/scheduler.h"
#include "core/model/state.h"
#include "store/spec_json.h"

namespace allot::backfill_test {
namespace {

// Four one-GPU nodes, team a with a quota of `quota` of them (above the cluster: capacity alone decides).
ClusterState cluster(bool backfill, int quota = 8) {
  ClusterState s;
  std::vector<NodeSpec> nodes;
  for (const char* n : {"n1", "n2", "n3", "n4"}) nodes.push_back({.name = n, .instance_type = "ml.g5.8xlarge"});
  EXPECT_TRUE(add_nodes(s, nodes, 0).ok());
  PolicySpec p;
  p.backfill = backfill;
  EXPECT_TRUE(set_policy(s, p).ok());
  EXPECT_TRUE(upsert_team(s, TeamSpec{.name = "a", .allocation = {{"ml.g5.8xlarge", {.instances = quota}}}}).ok());
  return s;
}

JobSpec spec(const std::string& name, int replicas, std::optional<int64_t> limit) {
  JobSpec j{.name = name, .team = "a"};
  j.pod_sets.push_back({.replicas = replicas, .per_replica = {.whole_node = true}});
  j.time_limit_s = limit;
  return j;
}

const Job& job(const ClusterState& s, const std::string& name) { return *s.find_job(name); }

TEST(Backfill, PolicyKeyIsReadAndJournaledOnlyWhenOn) {
  auto d = load_yaml("{backfill: true}", YamlContext{"p.yaml", "", 0});
  ASSERT_TRUE(d.ok());
  auto p = parse_policy(*d, YamlContext{"p.yaml", "policy", 0});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(p->backfill);
  EXPECT_EQ(store::policy_from_json(store::to_json(*p)), *p);
  EXPECT_FALSE(store::to_json(PolicySpec{}).contains("backfill"));  // journals without it read as before
  auto bad = load_yaml("{backfill: sometimes}", YamlContext{"p.yaml", "", 0});
  ASSERT_TRUE(bad.ok());
  auto r = parse_policy(*bad, YamlContext{"p.yaml", "policy", 0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("p.yaml"), std::string::npos) << r.error().message;
}

TEST(Backfill, ReservationIsTheEarliestTimeRunningLimitsMakeRoom) {
  ClusterState s = cluster(true);
  ASSERT_TRUE(submit_job(s, spec("a300", 1, 300), 0).ok());
  ASSERT_TRUE(submit_job(s, spec("a700", 1, 700), 0).ok());
  ASSERT_TRUE(submit_job(s, spec("open", 1, std::nullopt), 0).ok());
  (void)schedule(s, 0);
  ASSERT_EQ(s.running_jobs.size(), 3u);
  ASSERT_TRUE(submit_job(s, spec("three", 3, std::nullopt), 10).ok());
  // One node free now; a300's end makes two, a700's three: the reservation is at 700 on every node but open's.
  auto r = plan_reservation(s, job(s, "three"), 10);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->at, 700);
  ASSERT_EQ(r->nodes.size(), 3u);
  const NodeId open_node = job(s, "open").placement.pod_sets[0].replicas[0].node;
  for (NodeId n : r->nodes) EXPECT_NE(n, open_node);
  // A job that only jobs without limits block gets none.
  auto none = plan_reservation(s, [&] {
    Job j = job(s, "three");
    j.pod_sets[0].replicas = 4;
    return j;
  }(), 10);
  EXPECT_FALSE(none);
}

// The pass hands its reservation to the driver while the holder waits (ScheduleResult::reservation: the server
// shows it), and none once the holder runs or with the policy off.
TEST(Backfill, ThePassReturnsTheReservationWhileItsHolderWaits) {
  for (bool on : {true, false}) {
    ClusterState s = cluster(on);
    ASSERT_TRUE(submit_job(s, spec("a300", 1, 300), 0).ok());
    ASSERT_TRUE(submit_job(s, spec("a700", 1, 700), 0).ok());
    ASSERT_TRUE(submit_job(s, spec("open", 1, std::nullopt), 0).ok());
    (void)schedule(s, 0);
    ASSERT_TRUE(submit_job(s, spec("three", 3, std::nullopt), 10).ok());
    ScheduleResult r = schedule(s, 10);
    if (!on) {
      EXPECT_FALSE(r.reservation);
      continue;
    }
    ASSERT_TRUE(r.reservation);
    EXPECT_EQ(r.reservation->holder, job(s, "three").id);
    EXPECT_EQ(r.reservation->at, 700);
    EXPECT_EQ(r.reservation->nodes.size(), 3u);
    ASSERT_TRUE(cancel_job(s, "a300", 20).ok());
    ASSERT_TRUE(cancel_job(s, "a700", 20).ok());
    ScheduleResult after = schedule(s, 20);
    EXPECT_EQ(job(s, "three").state, JobState::kRunning);
    EXPECT_FALSE(after.reservation);
  }
}

TEST(Backfill, LaterJobsKeepClearOfTheReservedNodes) {
  ClusterState s = cluster(true);
  ASSERT_TRUE(submit_job(s, spec("a500", 3, 500), 0).ok());
  (void)schedule(s, 0);
  ASSERT_TRUE(submit_job(s, spec("big", 4, 100), 10).ok());
  ASSERT_TRUE(submit_job(s, spec("long", 1, 2000), 10).ok());   // ends at 2010: past the reservation
  (void)schedule(s, 10);
  EXPECT_EQ(job(s, "big").state, JobState::kPending);
  EXPECT_NE(job(s, "big").reason.str().find("are reserved from t=500 for it (backfill)"), std::string::npos) << job(s, "big").reason.str();
  EXPECT_EQ(job(s, "long").state, JobState::kPending);
  EXPECT_EQ(job(s, "long").reason_code, ReasonCode::kReserved);
  EXPECT_NE(job(s, "long").reason.str().find("would still run then (its time limit ends at t=2010)"), std::string::npos)
      << job(s, "long").reason.str();
  // A job that ends before the reservation takes the free reserved node; long, now without room, still waits.
  ASSERT_TRUE(submit_job(s, spec("short", 1, 400), 20).ok());  // ends at 420
  const ScheduleResult r = schedule(s, 20);
  EXPECT_EQ(job(s, "short").state, JobState::kRunning);
  EXPECT_EQ(job(s, "long").state, JobState::kPending);
  // Its admission says it was a backfill (ahead of big, which waits holding the reservation): the replay counts it.
  ASSERT_EQ(r.decisions.size(), 1u);
  const auto* admit = std::get_if<AdmitDecision>(&r.decisions[0]);
  ASSERT_NE(admit, nullptr);
  EXPECT_TRUE(admit->backfilled);
}

TEST(Backfill, WhereOneTeamOwnsTheClusterQuotaAndCapacityRunOutTogether) {
  // Quota 4 on four nodes: big needs to borrow now (3 + 4 > 4), and still gets the reservation before the jobs
  // after it are tried, so short (ending in time) runs and long does not.
  ClusterState s = cluster(true, 4);
  ASSERT_TRUE(submit_job(s, spec("a500", 3, 500), 0).ok());
  (void)schedule(s, 0);
  ASSERT_TRUE(submit_job(s, spec("big", 4, 100), 10).ok());
  ASSERT_TRUE(submit_job(s, spec("long", 1, 2000), 10).ok());
  ASSERT_TRUE(submit_job(s, spec("short", 1, 400), 10).ok());
  (void)schedule(s, 10);
  EXPECT_NE(job(s, "big").reason.str().find("are reserved from t=500 for it (backfill)"), std::string::npos) << job(s, "big").reason.str();
  EXPECT_EQ(job(s, "short").state, JobState::kRunning);
  EXPECT_EQ(job(s, "long").state, JobState::kPending);
}

TEST(Backfill, AJobThatWouldRunPastGoesWhereNothingIsReserved) {
  // One more node, of a type big cannot use: long runs there instead of waiting.
  ClusterState s = cluster(true);
  ASSERT_TRUE(add_nodes(s, {{.name = "x1", .instance_type = "ml.g5.12xlarge"}}, 0).ok());
  TeamSpec t{.name = "a", .allocation = {{"ml.g5.8xlarge", {.instances = 8}}, {"ml.g5.12xlarge", {.instances = 1}}}};
  ASSERT_TRUE(upsert_team(s, t).ok());
  JobSpec a500 = spec("a500", 3, 500);
  a500.pod_sets[0].instance_type = "ml.g5.8xlarge";
  ASSERT_TRUE(submit_job(s, a500, 0).ok());
  (void)schedule(s, 0);
  JobSpec big = spec("big", 4, 100);
  big.pod_sets[0].instance_type = "ml.g5.8xlarge";
  ASSERT_TRUE(submit_job(s, big, 10).ok());
  ASSERT_TRUE(submit_job(s, spec("long", 1, std::nullopt), 10).ok());
  (void)schedule(s, 10);
  ASSERT_EQ(job(s, "long").state, JobState::kRunning) << job(s, "long").reason.str();
  EXPECT_EQ(s.nodes[job(s, "long").placement.pod_sets[0].replicas[0].node.index()].name, "x1");
}

// backfill_min_priority (Slurm's bf_min_prio_reserve): a head of a class weight below it gets no reservation, so a
// later job that would run past it starts at once; a head of a class at or above it holds its reservation.
TEST(Backfill, JobsBelowTheMinimumPriorityGetNoReservation) {
  for (const char* big_class : {"low", "high"}) {
    SCOPED_TRACE(big_class);
    ClusterState s = cluster(true);
    PolicySpec p = s.policy;
    p.priority_classes = {{.name = "high", .weight = 90}, {.name = "low", .weight = 10}};
    p.backfill_min_priority = 50;
    ASSERT_TRUE(set_policy(s, p).ok());
    JobSpec a500 = spec("a500", 3, 500);
    a500.priority = "high";
    ASSERT_TRUE(submit_job(s, a500, 0).ok());
    (void)schedule(s, 0);
    JobSpec big = spec("big", 4, 100);
    big.priority = big_class;
    ASSERT_TRUE(submit_job(s, big, 10).ok());
    JobSpec longer = spec("long", 1, 2000);
    longer.priority = "low";
    ASSERT_TRUE(submit_job(s, longer, 10).ok());
    const ScheduleResult r = schedule(s, 10);
    const bool reserves = std::string(big_class) == "high";
    EXPECT_EQ(r.reservation.has_value(), reserves);
    EXPECT_EQ(job(s, "big").reason.str().find("(backfill)") != std::string::npos, reserves) << job(s, "big").reason.str();
    EXPECT_EQ(job(s, "long").state, reserves ? JobState::kPending : JobState::kRunning);
  }
  // The key is read from YAML, written to JSON only when set, and read back.
  auto d = load_yaml("{backfill: true, backfill_min_priority: 50}", YamlContext{"p.yaml", "", 0});
  ASSERT_TRUE(d.ok());
  auto p = parse_policy(*d, YamlContext{"p.yaml", "policy", 0});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->backfill_min_priority, 50);
  EXPECT_EQ(store::policy_from_json(store::to_json(*p)), *p);
  EXPECT_FALSE(store::to_json(PolicySpec{}).contains("backfill_min_priority"));
  auto bad = load_yaml("{backfill_min_priority: 101}", YamlContext{"p.yaml", "", 0});
  ASSERT_TRUE(bad.ok());
  auto r = parse_policy(*bad, YamlContext{"p.yaml", "policy", 0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("backfill_min_priority"), std::string::npos) << r.error().message;
}

// Reservations count quota: a job behind the holder that would still run at the reserved time waits if it would
// leave the holder short of quota then, even where it takes none of the reserved nodes.
TEST(Backfill, ALaterJobMayNotTakeQuotaTheHolderNeedsAtItsTime) {
  // Six nodes, team a's quota 4 of them as its own (DontLend: no borrowing): capacity does not stop big, quota does.
  ClusterState s;
  std::vector<NodeSpec> nodes;
  for (const char* n : {"n1", "n2", "n3", "n4", "n5", "n6"}) nodes.push_back({.name = n, .instance_type = "ml.g5.8xlarge"});
  ASSERT_TRUE(add_nodes(s, nodes, 0).ok());
  PolicySpec p;
  p.backfill = true;
  ASSERT_TRUE(set_policy(s, p).ok());
  ASSERT_TRUE(upsert_team(s, TeamSpec{.name = "a", .allocation = {{"ml.g5.8xlarge", {.instances = 4}}},
                                      .strategy = SharingStrategy::kDontLend})
                  .ok());
  ASSERT_TRUE(submit_job(s, spec("a500", 3, 500), 0).ok());
  (void)schedule(s, 0);
  ASSERT_TRUE(submit_job(s, spec("big", 4, 100), 10).ok());
  ASSERT_TRUE(submit_job(s, spec("long", 1, 2000), 10).ok());  // fits quota now (3 + 1), but would hold 1 at t=500
  const ScheduleResult r = schedule(s, 10);
  ASSERT_TRUE(r.reservation);
  EXPECT_EQ(r.reservation->at, 500);
  EXPECT_EQ(job(s, "long").state, JobState::kPending);
  EXPECT_EQ(job(s, "long").reason_code, ReasonCode::kReserved);
  EXPECT_NE(job(s, "long").reason.str().find("and take quota that job needs then"), std::string::npos) << job(s, "long").reason.str();
  // One that is gone by then takes the same quota now.
  ASSERT_TRUE(submit_job(s, spec("short", 1, 400), 20).ok());  // ends at 420
  (void)schedule(s, 20);
  EXPECT_EQ(job(s, "short").state, JobState::kRunning) << job(s, "short").reason.str();
  EXPECT_EQ(job(s, "long").state, JobState::kPending);
  // At t=500 a500 has ended (cancelled here, as its limit would stop it) and big starts with all its quota.
  ASSERT_TRUE(cancel_job(s, "a500", 500).ok());
  ASSERT_TRUE(cancel_job(s, "short", 500).ok());
  (void)schedule(s, 500);
  EXPECT_EQ(job(s, "big").state, JobState::kRunning) << job(s, "big").reason.str();
}

// Admissions by preemption keep clear of the reservation too, unless they take back lent quota from a holder that
// would borrow. Here a job of the same team behind the holder would preempt a lower-priority job on a reserved
// node and run past the reserved time: it waits instead. With backfill off it preempts.
TEST(Backfill, APreemptionBehindTheHolderKeepsClearOfIt) {
  for (bool on : {true, false}) {
    SCOPED_TRACE(on ? "backfill" : "no backfill");
    ClusterState s = cluster(on);
    PolicySpec p = s.policy;
    p.priority_classes = {{.name = "high", .weight = 90}, {.name = "mid", .weight = 50}, {.name = "low", .weight = 10}};
    ASSERT_TRUE(set_policy(s, p).ok());
    auto with_class = [](JobSpec j, const char* c) {
      j.priority = c;
      return j;
    };
    ASSERT_TRUE(submit_job(s, with_class(spec("keep", 2, 500), "high"), 0).ok());
    ASSERT_TRUE(submit_job(s, with_class(spec("low1", 1, 2000), "low"), 0).ok());
    ASSERT_TRUE(submit_job(s, with_class(spec("low2", 1, std::nullopt), "mid"), 0).ok());
    (void)schedule(s, 0);
    ASSERT_EQ(s.running_jobs.size(), 3u);
    // big needs 3 nodes: preempting low1 and low2 gives 2 (keep is of its class), so it waits; keep's end at 500
    // frees 2, low1's at 2000 the third: the reservation is at 2000 on keep's and low1's nodes.
    ASSERT_TRUE(submit_job(s, with_class(spec("big", 3, 100), "high"), 10).ok());
    // urgent, after big, would preempt low1 (the lowest priority) and run on its node past 2000.
    ASSERT_TRUE(submit_job(s, with_class(spec("urgent", 1, 5000), "high"), 10).ok());
    const ScheduleResult r = schedule(s, 10);
    EXPECT_EQ(job(s, "big").state, JobState::kPending);
    if (!on) {
      EXPECT_EQ(job(s, "urgent").state, JobState::kRunning) << job(s, "urgent").reason.str();
      EXPECT_EQ(job(s, "low1").state, JobState::kSuspended);  // preempted for urgent
      continue;
    }
    ASSERT_TRUE(r.reservation);
    EXPECT_EQ(r.reservation->holder, job(s, "big").id);
    EXPECT_EQ(r.reservation->at, 2000);
    EXPECT_EQ(job(s, "urgent").state, JobState::kPending);
    EXPECT_NE(job(s, "urgent").reason.str().find("reserved from t=2000 for job big of team a (backfill), and this job would "
                                                  "still run then (its time limit ends at t=5010)"),
              std::string::npos)
        << job(s, "urgent").reason.str();
    EXPECT_EQ(job(s, "low1").state, JobState::kRunning);
  }
}

TEST(Backfill, OffByDefaultTheLaterJobTakesTheNode) {
  ClusterState s = cluster(false);
  ASSERT_TRUE(submit_job(s, spec("a500", 3, 500), 0).ok());
  (void)schedule(s, 0);
  ASSERT_TRUE(submit_job(s, spec("big", 4, 100), 10).ok());
  ASSERT_TRUE(submit_job(s, spec("long", 1, 2000), 10).ok());
  const ScheduleResult r = schedule(s, 10);
  EXPECT_EQ(job(s, "long").state, JobState::kRunning);
  for (const auto& d : r.decisions)
    if (const auto* admit = std::get_if<AdmitDecision>(&d)) EXPECT_FALSE(admit->backfilled) << "no reservation: no backfill";
  EXPECT_FALSE(r.decisions.empty());
  EXPECT_EQ(job(s, "big").reason.str().find("backfill"), std::string::npos) << job(s, "big").reason.str();
}

}  // namespace
}  // namespace allot::backfill_test
