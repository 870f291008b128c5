// Reservations of existing nodes in the core (core/model/reservations.h): the checks on a reservation, what its start
// does to jobs of other teams on its nodes, placement while it is Active, the nodes an amount chooses, and its
// end and deletion. tests/scenarios/reservation_*.yaml cover the same rules end to end.
#include <gtest/gtest.h>

#include "core/model/reservations.h"
#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::reservations_test {
namespace {

using allot::test::job_spec;

constexpr const char* kType = "ml.g5.8xlarge";  // one accelerator per node

ReservationSpec named(std::string name, std::string team, std::vector<std::string> nodes, Time start, Time end) {
  ReservationSpec r;
  r.name = std::move(name);
  r.team = std::move(team);
  r.nodes = std::move(nodes);
  r.start = start;
  r.end = end;
  return r;
}

ReservationSpec amount(std::string name, std::string team, int count, Time start, Time end) {
  ReservationSpec r;
  r.name = std::move(name);
  r.team = std::move(team);
  r.instance_type = kType;
  r.count = count;
  r.start = start;
  r.end = end;
  return r;
}

// Teams a and b with one instance of quota each, nodes n1..n`nodes` of kType, and one p4d node "big".
ClusterState cluster(int nodes = 3) {
  ClusterState s;
  for (const char* name : {"a", "b"}) {
    TeamSpec t{.name = name};
    t.borrow_limit = 200;  // each may borrow the other's whole quota
    AmountSpec one;
    one.instances = 1;
    t.allocation = {{kType, one}};
    EXPECT_TRUE(upsert_team(s, t).ok());
  }
  for (int i = 1; i <= nodes; ++i) EXPECT_TRUE(add_node(s, NodeSpec{"n" + std::to_string(i), kType, "", {}}, 0).ok());
  EXPECT_TRUE(add_node(s, NodeSpec{"big", "ml.p4d.24xlarge", "", {}}, 0).ok());
  return s;
}

// Applies every step due by `now` (what the simulator and the server's writer do).
std::vector<JobId> advance(ClusterState& s, Time now) {
  std::vector<JobId> requeued;
  while (auto step = next_reservation_step(s)) {
    if (step->at > now) break;
    auto out = apply_reservation_step(s, step->name, step->to, now);
    EXPECT_TRUE(out.ok()) << out.error().message;
    if (out) requeued.insert(requeued.end(), out->preempted.begin(), out->preempted.end());
  }
  return requeued;
}

std::string node_of(const ClusterState& s, const std::string& job) {
  const Job* j = s.find_job(job);
  if (!j || j->state != JobState::kRunning) return "";
  return s.nodes[j->placement.nodes().front().index()].name;
}

TEST(Reservations, BadReservationsAreRefusedWithWhatWhereAndAllowed) {
  ClusterState s = cluster();
  auto bad = [&](const ReservationSpec& r, const std::string& words) {
    auto st = add_reservation(s, r);
    ASSERT_FALSE(st.ok()) << r.name;
    EXPECT_NE(st.error().message.find(words), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find("reservation " + r.name), std::string::npos) << st.error().message;
  };
  bad(named("r", "a", {"gone"}, 0, 10), "unknown node 'gone'");
  bad(named("r", "nobody", {"n1"}, 0, 10), "unknown team 'nobody'; teams: a, b");
  bad(named("r", "a", {"n1"}, 10, 10), "must come after start");
  bad(named("r", "a", {"n1", "n1"}, 0, 10), "node n1 is named twice");
  ReservationSpec typed = named("r", "a", {"n1", "big"}, 0, 10);
  typed.instance_type = kType;
  bad(typed, "node big is of type ml.p4d.24xlarge, not ml.g5.8xlarge");
  ReservationSpec both = named("r", "a", {"n1"}, 0, 10);
  both.count = 1;
  bad(both, "either nodes");
  bad(amount("r", "a", 4, 0, 10), "count must be 1..3 (the ml.g5.8xlarge nodes in the cluster), got 4");
  ReservationSpec untyped = amount("r", "a", 1, 0, 10);
  untyped.instance_type.clear();
  bad(untyped, "count needs instance_type");
  auto upper = add_reservation(s, named("Upper", "a", {"n1"}, 0, 10));
  ASSERT_FALSE(upper.ok());
  EXPECT_NE(upper.error().message.find("reservation name 'Upper'"), std::string::npos) << upper.error().message;
  EXPECT_TRUE(s.reservations.empty()) << "a refused reservation leaves nothing behind";
}

TEST(Reservations, OverlappingReservationsOfOneNodeAreRefused) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_reservation(s, named("first", "a", {"n1", "n2"}, 100, 200)).ok());
  auto st = add_reservation(s, named("second", "b", {"n2"}, 150, 300));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find("node n2 is held by reservation first (team a, 100..200)"), std::string::npos) << st.error().message;
  EXPECT_TRUE(add_reservation(s, named("second", "b", {"n2"}, 200, 300)).ok()) << "back to back is no overlap";
  EXPECT_TRUE(add_reservation(s, named("third", "b", {"n3"}, 150, 300)).ok()) << "another node";
  ASSERT_FALSE(add_reservation(s, named("first", "b", {"n3"}, 400, 500)).ok()) << "names are unique";
}

TEST(Reservations, StateFollowsTimeAndTheEndForgetsIt) {
  ClusterState s = cluster();
  ASSERT_TRUE(add_reservation(s, named("r", "a", {"n1"}, 100, 200)).ok());
  auto step = next_reservation_step(s);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->at, 100);
  EXPECT_EQ(step->to, ReservationState::kActive);
  EXPECT_FALSE(apply_reservation_step(s, "r", ReservationState::kExpired, 100).ok()) << "one step at a time";
  advance(s, 150);
  EXPECT_EQ(s.reservations.at("r").state, ReservationState::kActive);
  EXPECT_EQ(reservation_holding(s, s.find_node("n1")->id), &s.reservations.at("r"));
  advance(s, 200);
  EXPECT_TRUE(s.reservations.empty());
  EXPECT_EQ(reservation_holding(s, s.find_node("n1")->id), nullptr);
}

TEST(Reservations, ItsStartRequeuesOtherTeamsJobsFromItsNodesAndKeepsItsTeams) {
  ClusterState s = cluster(2);
  // b borrows: two jobs on the two nodes (one within quota, one lent by a), then a reserves both nodes.
  ASSERT_TRUE(submit_job(s, job_spec("b1", "b").instance_type(kType), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("b2", "b").instance_type(kType), 0).ok());
  schedule(s, 0);
  ASSERT_EQ(s.find_job("b1")->state, JobState::kRunning);
  ASSERT_EQ(s.find_job("b2")->state, JobState::kRunning) << s.find_job("b2")->reason.str();
  ASSERT_TRUE(add_reservation(s, named("hold", "a", {"n1", "n2"}, 100, 1000)).ok());
  schedule(s, 50);
  const std::vector<JobId> requeued = advance(s, 100);
  EXPECT_EQ(requeued.size(), 2u);
  for (const char* name : {"b1", "b2"}) {
    const Job* j = s.find_job(name);
    EXPECT_EQ(j->state, JobState::kSuspended) << name;
    EXPECT_EQ(j->reason_code, ReasonCode::kReservationStart) << name;
    EXPECT_NE(j->reason.str().find("reservation hold of team a started and holds node n"), std::string::npos) << j->reason.str();
  }
  // While it is Active, b's jobs are not placed there; a's are.
  ASSERT_TRUE(submit_job(s, job_spec("a1", "a").instance_type(kType), 100).ok());
  schedule(s, 100);
  EXPECT_EQ(s.find_job("b1")->state, JobState::kSuspended);
  EXPECT_EQ(s.find_job("b2")->state, JobState::kSuspended);
  EXPECT_EQ(s.find_job("a1")->state, JobState::kRunning);
  EXPECT_TRUE(s.find_job("b1")->feasible) << "b's jobs wait for the end, they are not hopeless";
  // At the end the nodes return: b runs again.
  advance(s, 1000);
  schedule(s, 1000);
  EXPECT_EQ(s.find_job("b1")->state, JobState::kRunning);
}

TEST(Reservations, ItsTeamsJobsStayAndOthersElsewhereAreUntouched) {
  ClusterState s = cluster(2);
  ASSERT_TRUE(submit_job(s, job_spec("a1", "a").instance_type(kType), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("b1", "b").instance_type(kType), 0).ok());
  schedule(s, 0);
  const std::string a_node = node_of(s, "a1"), b_node = node_of(s, "b1");
  ASSERT_FALSE(a_node.empty());
  ASSERT_FALSE(b_node.empty());
  ASSERT_TRUE(add_reservation(s, named("mine", "a", {a_node}, 10, 100)).ok());
  EXPECT_TRUE(advance(s, 10).empty());
  EXPECT_EQ(node_of(s, "a1"), a_node);
  EXPECT_EQ(node_of(s, "b1"), b_node);
}

TEST(Reservations, AUserReservationAdmitsThatUsersJobsOnly) {
  ClusterState s = cluster(1);
  ReservationSpec r = named("alice-only", "a", {"n1"}, 0, 100);
  r.user = "alice";
  ASSERT_TRUE(add_reservation(s, r).ok());
  advance(s, 0);
  JobSpec bob = job_spec("bob-job", "a").instance_type(kType);
  bob.user = "bob";
  JobSpec alice = job_spec("alice-job", "a").instance_type(kType);
  alice.user = "alice";
  ASSERT_TRUE(submit_job(s, bob, 0).ok());
  ASSERT_TRUE(submit_job(s, alice, 0).ok());
  schedule(s, 0);
  EXPECT_EQ(s.find_job("bob-job")->state, JobState::kPending);
  EXPECT_EQ(s.find_job("alice-job")->state, JobState::kRunning) << s.find_job("alice-job")->reason.str();
}

TEST(Reservations, AnAmountTakesFreeNodesFirstThenTheLowestPriorityJobs) {
  ClusterState s = cluster(3);
  PolicySpec policy = s.policy;
  policy.priority_classes = {{"low", 1}, {"high", 100}};
  ASSERT_TRUE(set_policy(s, policy).ok());
  ASSERT_TRUE(submit_job(s, job_spec("high", "b").instance_type(kType).priority("high"), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("low", "b").instance_type(kType).priority("low"), 0).ok());
  schedule(s, 0);
  ASSERT_EQ(s.find_job("high")->state, JobState::kRunning);
  ASSERT_EQ(s.find_job("low")->state, JobState::kRunning);
  const std::string low_node = node_of(s, "low");
  std::string free_node;
  for (const char* n : {"n1", "n2", "n3"})
    if (n != node_of(s, "high") && n != low_node) free_node = n;
  ASSERT_TRUE(add_reservation(s, amount("two", "a", 2, 10, 100)).ok());
  EXPECT_TRUE(s.reservations.at("two").nodes.empty()) << "an amount chooses at its start";
  advance(s, 10);
  std::vector<std::string> took;
  for (NodeId n : s.reservations.at("two").nodes) took.push_back(s.nodes[n.index()].name);
  std::sort(took.begin(), took.end());
  std::vector<std::string> want = {free_node, low_node};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(took, want);
  EXPECT_EQ(s.find_job("high")->state, JobState::kRunning);
  EXPECT_EQ(s.find_job("low")->state, JobState::kSuspended);
  EXPECT_EQ(s.find_job("low")->reason_code, ReasonCode::kReservationStart);
}

TEST(Reservations, AnAmountAvoidsNodesNamedByAnOverlappingReservation) {
  ClusterState s = cluster(3);
  ASSERT_TRUE(add_reservation(s, named("named", "b", {"n1"}, 50, 500)).ok());
  ASSERT_TRUE(add_reservation(s, amount("some", "a", 2, 10, 100)).ok());
  advance(s, 10);
  for (NodeId n : s.reservations.at("some").nodes) EXPECT_NE(s.nodes[n.index()].name, "n1");
  EXPECT_EQ(s.reservations.at("some").nodes.size(), 2u);
  // And a named reservation of a node an Active amount holds is refused while the periods overlap.
  const std::string held = s.nodes[s.reservations.at("some").nodes.front().index()].name;
  EXPECT_FALSE(add_reservation(s, named("late", "b", {held}, 20, 30)).ok());
}

TEST(Reservations, DeletingAnActiveReservationReturnsItsNodes) {
  ClusterState s = cluster(1);
  ASSERT_TRUE(add_reservation(s, named("r", "a", {"n1"}, 0, 1000)).ok());
  advance(s, 0);
  ASSERT_TRUE(submit_job(s, job_spec("b1", "b").instance_type(kType), 0).ok());
  schedule(s, 0);
  EXPECT_EQ(s.find_job("b1")->state, JobState::kPending);
  auto out = delete_reservation(s, "r");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->nodes, std::vector<std::string>{"n1"});
  schedule(s, 1);
  EXPECT_EQ(s.find_job("b1")->state, JobState::kRunning);
  EXPECT_FALSE(delete_reservation(s, "r").ok());
}

TEST(Reservations, NoReservationsPlaceAsBefore) {
  ClusterState with = cluster(2), without = cluster(2);
  ASSERT_TRUE(add_reservation(with, named("later", "a", {"n1"}, 10000, 20000)).ok());  // Scheduled: changes nothing yet
  for (ClusterState* s : {&with, &without}) {
    ASSERT_TRUE(submit_job(*s, job_spec("b1", "b").instance_type(kType), 0).ok());
    ASSERT_TRUE(submit_job(*s, job_spec("b2", "b").instance_type(kType), 0).ok());
    schedule(*s, 0);
  }
  EXPECT_EQ(node_of(with, "b1"), node_of(without, "b1"));
  EXPECT_EQ(node_of(with, "b2"), node_of(without, "b2"));
}

}  // namespace
}  // namespace allot::reservations_test

namespace allot::reservations_test {
namespace {

// A job that names a reservation (JobSpec::reservation): refused at submission unless the reservation exists and
// admits it; waits while it is Scheduled (reservation_pending); runs on its nodes only while it is Active, even
// with other nodes free; and waits for good (reservation_ended, not feasible) once it is gone.
TEST(Reservations, AJobNamingAReservationRunsOnItsNodesOnlyWhileActive) {
  ClusterState s = cluster(3);
  ASSERT_TRUE(add_reservation(s, named("train", "a", {"n3"}, 100, 1000)).ok());
  // Refusals: an unknown reservation (naming the ones there are), another team's, and a plan beside it.
  auto unknown = submit_job(s, job_spec("x", "a").instance_type(kType).reservation("nope"), 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "job x: unknown reservation 'nope'; reservations: train");
  auto other = submit_job(s, job_spec("y", "b").instance_type(kType).reservation("train"), 0);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message, "job y: reservation train is for team a; a job may name only a reservation that admits it");
  JobSpec both = job_spec("z", "a").instance_type(kType).reservation("train");
  both.plan = "p";
  auto with_plan = submit_job(s, both, 0);
  ASSERT_FALSE(with_plan.ok());
  EXPECT_NE(with_plan.error().message.find("names plan p and reservation train"), std::string::npos) << with_plan.error().message;
  EXPECT_EQ(s.find_job("x"), nullptr);

  // Scheduled: it waits although n1 and n2 are free; a job of a that names none runs at once.
  ASSERT_TRUE(submit_job(s, job_spec("in", "a").instance_type(kType).reservation("train"), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("free", "a").instance_type(kType), 0).ok());
  schedule(s, 0);
  const Job* in = s.find_job("in");
  EXPECT_EQ(in->state, JobState::kPending);
  EXPECT_EQ(in->reason_code, ReasonCode::kReservationPending);
  EXPECT_EQ(in->reason.str(), "waits for reservation train to start at t=100 (it is Scheduled)");
  EXPECT_TRUE(in->feasible);
  EXPECT_EQ(s.find_job("free")->state, JobState::kRunning);

  // Active: it runs on n3, the reservation's node, though another node is free.
  advance(s, 100);
  schedule(s, 100);
  EXPECT_EQ(node_of(s, "in"), "n3") << s.find_job("in")->reason.str();
  // A second one waits for n3 (its only node), not for quota or the free node.
  ASSERT_TRUE(submit_job(s, job_spec("in2", "a").instance_type(kType).reservation("train"), 100).ok());
  schedule(s, 100);
  EXPECT_EQ(s.find_job("in2")->state, JobState::kPending);
  EXPECT_TRUE(node_of(s, "free") != "n3");

  // Gone: the running one keeps running where it is; the waiting one waits for good, and says why.
  advance(s, 1000);
  schedule(s, 1000);
  EXPECT_EQ(node_of(s, "in"), "n3");
  const Job* in2 = s.find_job("in2");
  EXPECT_EQ(in2->state, JobState::kPending);
  EXPECT_EQ(in2->reason_code, ReasonCode::kReservationEnded);
  EXPECT_FALSE(in2->feasible);
  EXPECT_NE(in2->reason.str().find("reservation train no longer exists"), std::string::npos) << in2->reason.str();
}

// A reservation for one user admits only that user's jobs when named, as on its nodes.
TEST(Reservations, OnlyItsUserMayNameAUserReservation) {
  ClusterState s = cluster(1);
  ReservationSpec r = named("alice-only", "a", {"n1"}, 0, 100);
  r.user = "alice";
  ASSERT_TRUE(add_reservation(s, r).ok());
  JobSpec bob = job_spec("bob-job", "a").instance_type(kType).reservation("alice-only");
  bob.user = "bob";
  auto refused = submit_job(s, bob, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "job bob-job: reservation alice-only is for user alice of team a; a job may name only a reservation that admits it");
  JobSpec alice = job_spec("alice-job", "a").instance_type(kType).reservation("alice-only");
  alice.user = "alice";
  ASSERT_TRUE(submit_job(s, alice, 0).ok());
  advance(s, 0);
  schedule(s, 0);
  EXPECT_EQ(node_of(s, "alice-job"), "n1");
}

}  // namespace
}  // namespace allot::reservations_test
