// Several clusters (docs/multicluster.md): the manager's choice of a worker (server/outside/dispatch_choice.h) and the
// steps of a manager's job through the worker clusters in the core (core/lifecycle/remote_copy.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/lifecycle/remote_copy.h"
#include "core/pass/scheduler.h"
#include "server/outside/dispatch_choice.h"
#include "server/outside/workers_file.h"

#include "spec_builders.h"

namespace allot::multicluster_test {
namespace {

using allot::test::job_spec;
using server::choose_worker;
using server::JobDemand;
using server::WorkerView;

WorkerView worker(std::string name, long long free, long long headroom, bool has_team = true) {
  WorkerView v;
  v.name = std::move(name);
  v.answered = true;
  v.has_team = has_team;
  v.free["ml.p5.48xlarge"] = free;
  v.headroom["ml.p5.48xlarge"] = headroom;
  return v;
}

JobDemand p5(long long n) { return JobDemand{{{"ml.p5.48xlarge", n}}}; }

TEST(DispatchChoiceTest, TakesTheWorkerWithTheMostFreeAcceleratorsThatCanAdmitNow) {
  auto c = choose_worker(p5(8), {worker("east", 8, 16), worker("west", 16, 16)}, {});
  ASSERT_TRUE(c.worker);
  EXPECT_EQ(*c.worker, "west");
  // Equal room: the first listed.
  c = choose_worker(p5(8), {worker("east", 16, 16), worker("west", 16, 16)}, {});
  ASSERT_TRUE(c.worker);
  EXPECT_EQ(*c.worker, "east");
}

TEST(DispatchChoiceTest, PassesOverWorkersWithoutRoomQuotaTeamOrAnswer) {
  WorkerView silent{"south"};
  auto c = choose_worker(p5(8), {worker("east", 4, 16), worker("west", 16, 4), worker("north", 16, 16, false), silent}, {});
  EXPECT_FALSE(c.worker);
  EXPECT_NE(c.why.find("east: capacity: 4 free accelerators of ml.p5.48xlarge, the job asks 8"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("west: quota: the team may take 4 more"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("north: it has no such team"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("south: it did not answer"), std::string::npos) << c.why;
  // The one that can is taken, whatever the others say.
  c = choose_worker(p5(8), {worker("east", 4, 16), worker("west", 8, 8)}, {});
  ASSERT_TRUE(c.worker);
  EXPECT_EQ(*c.worker, "west");
  EXPECT_TRUE(c.why.empty());
}

TEST(DispatchChoiceTest, AWorkerThatRefusedTheJobIsNotAskedAgain) {
  auto c = choose_worker(p5(8), {worker("east", 16, 16), worker("west", 8, 8)}, {"east"});
  ASSERT_TRUE(c.worker);
  EXPECT_EQ(*c.worker, "west");
  c = choose_worker(p5(8), {worker("east", 16, 16)}, {"east"});
  EXPECT_FALSE(c.worker);
  EXPECT_NE(c.why.find("east: it refused the job"), std::string::npos);
}

TEST(DispatchChoiceTest, AJobWithoutATypeTakesAnyTypeThatHoldsIt) {
  WorkerView w = worker("east", 2, 2);
  w.free["ml.g5.48xlarge"] = 8;
  w.headroom["ml.g5.48xlarge"] = 8;
  EXPECT_TRUE(choose_worker(JobDemand{{{"", 8}}}, {w}, {}).worker);
  EXPECT_FALSE(choose_worker(JobDemand{{{"", 9}}}, {w}, {}).worker);
  // Asking no accelerators (CPU only): any worker with the team.
  EXPECT_TRUE(choose_worker(JobDemand{{{"", 0}}}, {worker("east", 0, 0)}, {}).worker);
}

class RemoteCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(add_node(s, NodeSpec{"n1", "ml.g5.8xlarge", "", {}}, 0).ok());
    TeamSpec t;
    t.name = "a";
    AmountSpec one;
    one.instances = 1;
    t.allocation = {{"ml.g5.8xlarge", one}};
    ASSERT_TRUE(upsert_team(s, t).ok());
    JobSpec spec = job_spec("train", "a");
    spec.multicluster = true;
    ASSERT_TRUE(submit_job(s, spec, 0).ok());
  }
  const Job& job() { return *s.find_job("train"); }
  Status step(RemoteStep st, std::string worker, std::string copy, Time at, std::string reason = "") {
    return step_remote_copy(s, "train", st, RemoteCopyRef{std::move(worker), std::move(copy)}, reason, at);
  }
  ClusterState s;
};

TEST_F(RemoteCopyTest, TheManagersSchedulerNeverRunsItEvenOnAFreeCluster) {
  schedule(s, 1);
  EXPECT_EQ(job().state, JobState::kPending);
  EXPECT_EQ(job().reason_code, ReasonCode::kDispatched);
  EXPECT_NE(job().reason.str().find("waiting to be dispatched to a worker cluster"), std::string::npos);
  // An ordinary job of the same team runs here.
  ASSERT_TRUE(submit_job(s, job_spec("local", "a"), 2).ok());
  schedule(s, 3);
  EXPECT_EQ(s.find_job("local")->state, JobState::kRunning);
}

TEST_F(RemoteCopyTest, DispatchedRunningThenEndedAsTheCopyDid) {
  ASSERT_TRUE(step(RemoteStep::kDispatched, "east", copy_name("train", 1), 1).ok());
  EXPECT_EQ(job().remote.live, (RemoteCopyRef{"east", "train-1"}));
  EXPECT_EQ(job().remote.dispatches, 1);
  EXPECT_EQ(job().remote.waiting_since, 1);
  // A second dispatch while it has a live copy is refused: one copy at a time.
  auto twice = step(RemoteStep::kDispatched, "west", "train-2", 2);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::kFailedPrecondition);
  ASSERT_TRUE(step(RemoteStep::kRunning, "east", "train-1", 3, "admitted on gpu-1").ok());
  EXPECT_EQ(job().state, JobState::kPending);
  EXPECT_EQ(job().reason_code, ReasonCode::kRemoteRunning);
  EXPECT_EQ(job().reason.str(), "running in worker cluster east as job train-1: admitted on gpu-1");
  schedule(s, 4);
  EXPECT_EQ(job().reason_code, ReasonCode::kRemoteRunning) << "the pass must leave a remote job's reason alone";
  // Preempted there: it waits there again.
  ASSERT_TRUE(step(RemoteStep::kDispatched, "east", "train-1", 5, "preempted").ok());
  EXPECT_FALSE(job().remote.running);
  EXPECT_EQ(job().remote.waiting_since, 5) << "the dispatch timeout counts again from when it waits there again";
  EXPECT_EQ(job().remote.dispatches, 1);
  ASSERT_TRUE(step(RemoteStep::kRunning, "east", "train-1", 6).ok());
  // A step of a copy that is not its live one is refused.
  EXPECT_FALSE(step(RemoteStep::kSucceeded, "west", "train-1", 7).ok());
  ASSERT_TRUE(step(RemoteStep::kSucceeded, "east", "train-1", 8, "all 1 replicas exited with code 0").ok());
  EXPECT_EQ(job().state, JobState::kSucceeded);
  EXPECT_EQ(job().reason_code, ReasonCode::kFinished);
  EXPECT_EQ(job().reason.str(), "in worker cluster east as job train-1: all 1 replicas exited with code 0");
  EXPECT_TRUE(job().remote.live.worker.empty());
  EXPECT_EQ(job().remote.last, (RemoteCopyRef{"east", "train-1"}));
}

TEST_F(RemoteCopyTest, ALostWorkersCopyTurnsStaleAndTheJobGoesElsewhere) {
  ASSERT_TRUE(step(RemoteStep::kDispatched, "east", "train-1", 1).ok());
  ASSERT_TRUE(step(RemoteStep::kRunning, "east", "train-1", 2).ok());
  ASSERT_TRUE(step(RemoteStep::kLost, "east", "train-1", 70, "it answered nothing for 61 s").ok());
  EXPECT_EQ(job().state, JobState::kPending);
  EXPECT_EQ(job().reason_code, ReasonCode::kDispatched);
  ASSERT_EQ(job().remote.stale.size(), 1u);
  EXPECT_TRUE(job().remote.live.worker.empty());
  ASSERT_TRUE(step(RemoteStep::kDispatched, "west", copy_name("train", 2), 71).ok());
  EXPECT_EQ(job().remote.live, (RemoteCopyRef{"west", "train-2"}));
  // The lost worker answers again: its stale copy is withdrawn, the live one stays.
  ASSERT_TRUE(step(RemoteStep::kWithdrawn, "east", "train-1", 80).ok());
  EXPECT_TRUE(job().remote.stale.empty());
  EXPECT_EQ(job().remote.live, (RemoteCopyRef{"west", "train-2"}));
  EXPECT_FALSE(step(RemoteStep::kWithdrawn, "east", "train-1", 81).ok()) << "withdrawn once";
}

TEST_F(RemoteCopyTest, CancelledHereItsCopyIsWithdrawnThere) {
  ASSERT_TRUE(step(RemoteStep::kDispatched, "east", "train-1", 1).ok());
  ASSERT_TRUE(cancel_job(s, "train", 2).ok());
  EXPECT_EQ(job().remote.live, (RemoteCopyRef{"east", "train-1"})) << "the dispatcher still has to cancel it there";
  EXPECT_FALSE(step(RemoteStep::kRunning, "east", "train-1", 3).ok());
  ASSERT_TRUE(step(RemoteStep::kWithdrawn, "east", "train-1", 4).ok());
  EXPECT_TRUE(job().remote.live.worker.empty());
  EXPECT_EQ(job().state, JobState::kCancelled);
}

TEST_F(RemoteCopyTest, ACopysEventsAreMirroredOnceEachInTheWorkersOrderAndChangeNothingElse) {
  ASSERT_TRUE(step(RemoteStep::kDispatched, "east", "train-1", 1).ok());
  ASSERT_TRUE(step(RemoteStep::kRunning, "east", "train-1", 2, "admitted on gpu-1").ok());
  const Job before = job();
  auto event = [&](uint64_t seq, std::string copy = "train-1") {
    return step_remote_copy(s, "train", RemoteStep::kEvent, RemoteCopyRef{"east", std::move(copy)}, "admitted on gpu-1", 3, seq);
  };
  ASSERT_TRUE(event(41).ok());
  EXPECT_EQ(job().remote.events_seen, 41u);
  EXPECT_EQ(job().state, before.state);
  EXPECT_EQ(job().reason.str(), before.reason.str());
  EXPECT_EQ(job().history.size(), before.history.size()) << "a mirrored event is not a change of the job's";
  // The same event again, or an older one (a look that read it twice, a manager restarted): refused.
  auto again = event(41);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_FALSE(event(40).ok());
  EXPECT_FALSE(event(42, "train-9").ok()) << "only the live copy's events";
  ASSERT_TRUE(event(57).ok());
  // The next copy counts its own events from the start.
  ASSERT_TRUE(step(RemoteStep::kLost, "east", "train-1", 70, "it answered nothing for 61 s").ok());
  EXPECT_FALSE(event(58).ok()) << "a stale copy's events are not the job's";
  ASSERT_TRUE(step(RemoteStep::kDispatched, "west", "train-2", 71).ok());
  EXPECT_EQ(job().remote.events_seen, 0u);
  EXPECT_TRUE(step_remote_copy(s, "train", RemoteStep::kEvent, RemoteCopyRef{"west", "train-2"}, "submitted", 72, 3).ok());
}

TEST_F(RemoteCopyTest, OnlyAManagersJobTakesSteps) {
  ASSERT_TRUE(submit_job(s, job_spec("local", "a"), 1).ok());
  auto r = step_remote_copy(s, "local", RemoteStep::kDispatched, RemoteCopyRef{"east", "local-1"}, "", 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
}

// The --workers file: the dispatch timeout read in seconds, 0 by default, and refused out of its range naming it.
TEST(WorkersFileTest, TheDispatchTimeoutIsReadAndCheckedForItsRange) {
  const auto dir = std::filesystem::temp_directory_path() / ("allot-workers-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "east.token") << "s3cret-token\n";
  auto load = [&](const std::string& extra) {
    std::ofstream(dir / "workers.yaml") << "teams: [a]\n" << extra << "workers:\n  - {name: east, url: 'http://127.0.0.1:1', token_file: '"
                                          << (dir / "east.token").string() << "'}\n";
    return server::load_workers_file((dir / "workers.yaml").string());
  };
  auto plain = load("");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->dispatch_timeout.count(), 0);
  auto set = load("dispatch_timeout: 300\n");
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->dispatch_timeout.count(), 300000);
  auto bad = load("dispatch_timeout: -5\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("dispatch_timeout: -5 s is out of range 0..86400"), std::string::npos) << bad.error().message;
  std::filesystem::remove_all(dir);
}

TEST(RemoteStepNamesTest, EveryStepReadsBackFromItsName) {
  for (RemoteStep st : kRemoteSteps) EXPECT_EQ(parse_remote_step(remote_step_name(st)), st);
  EXPECT_FALSE(parse_remote_step("running-there"));
}

}  // namespace
}  // namespace allot::multicluster_test
