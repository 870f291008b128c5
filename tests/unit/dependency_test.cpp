// Dependencies between jobs (core/model/dependency.h; docs/jobs.md, "Dependencies"): the rule for each condition, the
// verdict over all of a job's entries, the pass that passes a waiting job over without blocking others, ends one
// whose dependency can never hold, and lets one waiting for a start join the pass that admits it; submission's
// checks; a batch's order and cycles; retention keeping a job a waiting job names; replay of the ending.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "client/spec_json.h"
#include "config/spec_yaml.h"
#include "core/model/dependency.h"
#include "core/pass/scheduler.h"
#include "interop/k8s_manifest.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "store/spec_json.h"

#include "spec_builders.h"

namespace allot::dependency_test {
namespace {

using allot::test::job_spec;

JobSpec after(JobSpec spec, std::vector<JobDependency> deps) {
  spec.after = std::move(deps);
  return spec;
}

class DependencyTest : public ::testing::Test {
 protected:
  // Two ml.g5.8xlarge nodes (one accelerator each); team a owns both, team b none.
  void SetUp() override {
    ASSERT_TRUE(add_node(s, NodeSpec{"n1", "ml.g5.8xlarge", "", {}}, 0).ok());
    ASSERT_TRUE(add_node(s, NodeSpec{"n2", "ml.g5.8xlarge", "", {}}, 0).ok());
    for (const char* name : {"a", "b"}) {
      TeamSpec t;
      t.name = name;
      AmountSpec n;
      n.instances = std::string(name) == "a" ? 2 : 0;
      t.allocation = {{"ml.g5.8xlarge", n}};
      ASSERT_TRUE(upsert_team(s, t).ok());
    }
  }
  const Job& job(const std::string& name) { return *s.find_job(name); }
  ClusterState s;
};

TEST(DependencyRule, EachConditionHoldsWaitsOrNeverHolds) {
  Job t;
  using C = DependencyCondition;
  using D = DependencyState;
  t.state = JobState::kPending;
  for (C c : kDependencyConditions) EXPECT_EQ(dependency_state(t, c), D::kWaits) << dependency_condition_name(c);
  t.state = JobState::kRunning;
  EXPECT_EQ(dependency_state(t, C::kSucceeded), D::kWaits);
  EXPECT_EQ(dependency_state(t, C::kEnded), D::kWaits);
  EXPECT_EQ(dependency_state(t, C::kStarted), D::kHolds);
  t.history = {{5, JobState::kPending, JobState::kRunning, "admitted"}, {9, JobState::kRunning, JobState::kSuspended, "preempted"}};
  t.state = JobState::kSuspended;
  EXPECT_EQ(dependency_state(t, C::kStarted), D::kHolds) << "it ran once: started holds for good";
  t.state = JobState::kSucceeded;
  EXPECT_EQ(dependency_state(t, C::kSucceeded), D::kHolds);
  EXPECT_EQ(dependency_state(t, C::kEnded), D::kHolds);
  for (JobState end : {JobState::kFailed, JobState::kCancelled}) {
    t.state = end;
    EXPECT_EQ(dependency_state(t, C::kSucceeded), D::kNever) << job_state_name(end);
    EXPECT_EQ(dependency_state(t, C::kEnded), D::kHolds);
    EXPECT_EQ(dependency_state(t, C::kStarted), D::kHolds) << "it ran before it ended";
  }
  t.history.clear();
  t.state = JobState::kCancelled;
  EXPECT_EQ(dependency_state(t, C::kStarted), D::kNever) << "ended without ever running";
  EXPECT_EQ(dependency_state(t, C::kEnded), D::kHolds);
}

TEST_F(DependencyTest, AJobWaitsHoldingNothingAndOthersRunPastIt) {
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("train", "a"), {{"prep", DependencyCondition::kSucceeded}}), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("other", "a"), 0).ok());
  schedule(s, 1);
  EXPECT_EQ(job("prep").state, JobState::kRunning);
  EXPECT_EQ(job("other").state, JobState::kRunning) << "submitted after train, which holds nothing and blocks no one";
  EXPECT_EQ(job("train").state, JobState::kPending);
  EXPECT_EQ(job("train").reason_code, ReasonCode::kDependency);
  EXPECT_EQ(job("train").reason.str(), "waits for job prep of team a to succeed (after: succeeded; it is Running)");
  EXPECT_TRUE(job("train").feasible);
  ASSERT_TRUE(finish_job(s, "other", 2, true).ok());
  schedule(s, 2);
  EXPECT_EQ(job("train").state, JobState::kPending) << "a free node, but prep has not succeeded";
  ASSERT_TRUE(finish_job(s, "prep", 3, true).ok());
  schedule(s, 3);
  EXPECT_EQ(job("train").state, JobState::kRunning);
}

TEST_F(DependencyTest, StrictFifoDoesNotStopBehindAJobWaitingForADependency) {
  PolicySpec p;
  p.strict_fifo = true;
  ASSERT_TRUE(set_policy(s, p).ok());
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("train", "a"), {{"prep", DependencyCondition::kEnded}}), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("other", "a"), 0).ok());
  schedule(s, 1);
  EXPECT_EQ(job("train").reason_code, ReasonCode::kDependency);
  EXPECT_EQ(job("other").state, JobState::kRunning);
}

TEST_F(DependencyTest, AJobWaitingForAStartJoinsThePassThatAdmitsIt) {
  ASSERT_TRUE(submit_job(s, job_spec("server", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("client", "a"), {{"server", DependencyCondition::kStarted}}), 0).ok());
  ScheduleResult r = schedule(s, 1);
  EXPECT_EQ(job("server").state, JobState::kRunning);
  EXPECT_EQ(job("client").state, JobState::kRunning) << "one pass, no second one needed";
  EXPECT_EQ(r.decisions.size(), 2u);
}

TEST_F(DependencyTest, ADependencyThatCanNeverHoldEndsTheJobAndAChainEndsLinkByLink) {
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("train", "a"), {{"prep", DependencyCondition::kSucceeded}}), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("eval", "a"), {{"train", DependencyCondition::kSucceeded}}), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("report", "a"), {{"train", DependencyCondition::kEnded}}), 0).ok());
  schedule(s, 1);
  ASSERT_TRUE(finish_job(s, "prep", 5, false, "exit 1").ok());
  ASSERT_EQ(job("prep").state, JobState::kFailed);
  ScheduleResult r = schedule(s, 5);
  ASSERT_EQ(r.dependency_ends.size(), 1u);
  EXPECT_EQ(r.dependency_ends[0].job, job("train").id);
  EXPECT_EQ(job("train").state, JobState::kCancelled);
  EXPECT_EQ(job("train").reason_code, ReasonCode::kDependencyNever);
  EXPECT_NE(job("train").reason.str().find("job prep of team a ended Failed"), std::string::npos) << job("train").reason.str();
  EXPECT_EQ(job("eval").state, JobState::kPending) << "judged at the next pass";
  r = schedule(s, 5);
  EXPECT_EQ(job("eval").state, JobState::kCancelled) << "train was Cancelled: succeeded can never hold";
  EXPECT_EQ(job("report").state, JobState::kRunning) << "train ended: ended holds";
  // A job that never ran (Cancelled while Pending) can never be seen to start.
  ASSERT_TRUE(submit_job(s, job_spec("never", "a"), 6).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("watch", "a"), {{"never", DependencyCondition::kStarted}}), 6).ok());
  ASSERT_TRUE(cancel_job(s, "never", 7).ok());
  schedule(s, 7);
  EXPECT_EQ(job("watch").reason_code, ReasonCode::kDependencyNever);
  EXPECT_NE(job("watch").reason.str().find("ended Cancelled without ever running"), std::string::npos);
}

TEST_F(DependencyTest, AHeldJobWhoseDependencyCanNeverHoldIsEndedToo) {
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("train", "a"), {{"prep", DependencyCondition::kSucceeded}}), 0).ok());
  ASSERT_TRUE(set_job_held(s, "train", true, 0).ok());
  ASSERT_TRUE(cancel_job(s, "prep", 1).ok());
  schedule(s, 1);
  EXPECT_EQ(job("train").state, JobState::kCancelled);
  EXPECT_FALSE(job("train").held);
}

TEST_F(DependencyTest, SubmissionRefusesWhatItCannotResolveAndSaysTheSameForAnotherTeamsJob) {
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  auto other_team = submit_job(s, after(job_spec("spy", "b"), {{"prep", DependencyCondition::kEnded}}), 0);
  ASSERT_FALSE(other_team.ok());
  auto unknown = submit_job(s, after(job_spec("spy", "b"), {{"nothing", DependencyCondition::kEnded}}), 0);
  ASSERT_FALSE(unknown.ok());
  auto without_name = [](std::string m, const std::string& name) { return m.replace(m.find(name), name.size(), "X"); };
  EXPECT_EQ(without_name(other_team.error().message, "prep"), without_name(unknown.error().message, "nothing"))
      << "the answer must not tell whether team a has a job named prep: " << other_team.error().message;
  EXPECT_NE(other_team.error().message.find("job spy, after[0]: no job named prep is kept in team b"), std::string::npos)
      << other_team.error().message;
  auto self = submit_job(s, after(job_spec("loop", "a"), {{"loop", DependencyCondition::kEnded}}), 0);
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.error().message.find("cannot depend on itself"), std::string::npos) << self.error().message;
  auto twice = submit_job(s, after(job_spec("t", "a"), {{"prep", DependencyCondition::kEnded}, {"prep", DependencyCondition::kStarted}}), 0);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("named twice"), std::string::npos) << twice.error().message;
  std::vector<JobDependency> many(kMaxDependencies + 1, {"prep", DependencyCondition::kEnded});
  auto too_many = submit_job(s, after(job_spec("t", "a"), many), 0);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("at most 32"), std::string::npos) << too_many.error().message;
  EXPECT_EQ(s.find_job("t"), nullptr) << "a refused submission changes nothing";
  // A name deleted since means nothing any more; a later job of that name is another job.
  ASSERT_TRUE(cancel_job(s, "prep", 1).ok());
  ASSERT_TRUE(delete_job(s, "prep").ok());
  EXPECT_FALSE(submit_job(s, after(job_spec("late", "a"), {{"prep", DependencyCondition::kEnded}}), 2).ok());
}

TEST_F(DependencyTest, AWaitingJobKeepsTheJobItWasResolvedToNotALaterJobOfThatName) {
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  const JobId first = job("prep").id;
  ASSERT_TRUE(submit_job(s, after(job_spec("train", "a"), {{"prep", DependencyCondition::kSucceeded}}), 0).ok());
  EXPECT_EQ(job("train").after, std::vector<JobId>{first});
}

TEST(DependencyOrder, ABatchRefusesACycleNamingItAndAForwardReference) {
  auto cyc = check_submission_order({after(job_spec("x", "a"), {{"z", DependencyCondition::kEnded}}),
                                     after(job_spec("y", "a"), {{"x", DependencyCondition::kEnded}}),
                                     after(job_spec("z", "a"), {{"y", DependencyCondition::kSucceeded}})});
  ASSERT_FALSE(cyc.ok());
  EXPECT_NE(cyc.error().message.find("(x -> z -> y -> x)"), std::string::npos) << cyc.error().message;
  auto fwd = check_submission_order({after(job_spec("x", "a"), {{"y", DependencyCondition::kEnded}}), job_spec("y", "a")});
  ASSERT_FALSE(fwd.ok());
  EXPECT_NE(fwd.error().message.find("list y before x"), std::string::npos) << fwd.error().message;
  EXPECT_TRUE(check_submission_order({job_spec("y", "a"), after(job_spec("x", "a"), {{"y", DependencyCondition::kEnded}}),
                                      after(job_spec("w", "a"), {{"outside", DependencyCondition::kEnded}})})
                  .ok());
}

TEST_F(DependencyTest, RetentionKeepsAFinishedJobAWaitingJobNamesUntilItRanOrEnded) {
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("blocker", "a").replicas(2), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("train", "a"), {{"prep", DependencyCondition::kSucceeded}}), 0).ok());
  schedule(s, 1);
  ASSERT_TRUE(finish_job(s, "prep", 2, true).ok());
  ASSERT_TRUE(submit_job(s, job_spec("hog", "a").replicas(2), 2).ok());
  schedule(s, 2);  // prep succeeded, but hog (or blocker) holds both nodes: train waits for capacity
  ASSERT_EQ(job("train").state, JobState::kPending);
  auto gone = compact_finished(s, 10, 10);
  ASSERT_TRUE(gone.ok());
  EXPECT_NE(s.find_job("prep"), nullptr) << "train never ran and reads prep";
  EXPECT_EQ(judge_dependencies(s, job("train")).state, DependencyState::kHolds);
  // Once train has run, prep may go.
  ASSERT_TRUE(cancel_job(s, job("blocker").state == JobState::kRunning ? "blocker" : "hog", 11).ok());
  schedule(s, 11);
  ASSERT_EQ(job("train").state, JobState::kRunning);
  gone = compact_finished(s, 12, 12);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(s.find_job("prep"), nullptr);
}

TEST_F(DependencyTest, TheEndingReplaysFromItsRecordAndARecordThatDoesNotHoldIsRefused) {
  ASSERT_TRUE(submit_job(s, job_spec("prep", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, after(job_spec("train", "a"), {{"prep", DependencyCondition::kSucceeded}}), 0).ok());
  const store::Op early = store::DependencyNeverHolds{"train", "prep", DependencyCondition::kSucceeded};
  auto refused = store::apply_record(s, store::Record{1, 3, early, {}});
  EXPECT_FALSE(refused.ok()) << "prep has not failed";
  ASSERT_TRUE(cancel_job(s, "prep", 4).ok());
  ASSERT_TRUE(store::apply_record(s, store::Record{2, 5, early, {}}).ok());
  EXPECT_EQ(job("train").state, JobState::kCancelled);
  EXPECT_EQ(job("train").reason_code, ReasonCode::kDependencyNever);
  // The record's JSON carries the facts as data.
  const auto j = store::op_to_json(early);
  EXPECT_EQ(j["after"], "prep");
  EXPECT_EQ(j["condition"], "succeeded");
}

TEST(DependencySpec, YamlJournalAndClientBodiesCarryItAndBadEntriesNameTheirLine) {
  auto spec = parse_job_spec(YAML::Load("name: eval\nteam: a\nafter:\n  - {job: train, condition: succeeded}\n  - {job: prep}\n"),
                             Catalog::builtin(), {"e.yaml", "", 0});
  ASSERT_TRUE(spec) << spec.error().message;
  const std::vector<JobDependency> want = {{"train", DependencyCondition::kSucceeded}, {"prep", DependencyCondition::kEnded}};
  EXPECT_EQ(spec->after, want) << "the default condition is ended";
  EXPECT_EQ(store::job_from_json(store::to_json(*spec)), *spec);
  auto back = parse_job_spec(YAML::Load(client::job_body(*spec).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *spec);
  auto bad = parse_job_spec(YAML::Load("name: eval\nteam: a\nafter:\n  - {job: train, condition: afterok}\n"), Catalog::builtin(),
                            {"e.yaml", "", 0});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("e.yaml:4"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("succeeded"), std::string::npos) << bad.error().message;
  auto unknown_key = parse_job_spec(YAML::Load("name: eval\nteam: a\nafter: [{job: t, when: ok}]\n"), Catalog::builtin(), {});
  EXPECT_FALSE(unknown_key);
  auto empty = parse_job_spec(YAML::Load("name: eval\nteam: a\nafter: [{job: ''}]\n"), Catalog::builtin(), {});
  EXPECT_FALSE(empty);
}

// A JobSet whose replicated jobs depend on one another becomes one allot job per replicated job, chained with after.
TEST(DependencyManifest, JobSetDependsOnBecomesAChainOfJobs) {
  auto m = interop::job_from_manifest(YAML::Load(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pipe, namespace: team-a}
spec:
  replicatedJobs:
    - name: prep
      template: {spec: {template: {spec: {containers: [{name: c, command: [prep], resources: {requests: {nvidia.com/gpu: 1}}}]}}}}
    - name: train
      replicas: 2
      dependsOn: [{name: prep, status: Complete}]
      template: {spec: {template: {spec: {containers: [{name: c, command: [train], resources: {requests: {nvidia.com/gpu: 8}}}]}}}}
    - name: watch
      dependsOn: [{name: train, status: Ready}]
      template: {spec: {template: {spec: {containers: [{name: c, command: [watch], resources: {requests: {nvidia.com/gpu: 1}}}]}}}}
)"), "js.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->spec.name, "pipe-prep");
  EXPECT_TRUE(m->spec.after.empty());
  EXPECT_EQ(m->spec.command, std::vector<std::string>{"prep"});
  ASSERT_EQ(m->chained.size(), 2u);
  EXPECT_EQ(m->chained[0].name, "pipe-train");
  EXPECT_EQ(m->chained[0].pod_sets.size(), 1u);
  EXPECT_EQ(m->chained[0].pod_sets[0].replicas, 2);
  EXPECT_EQ(m->chained[0].command, std::vector<std::string>{"train"});
  EXPECT_EQ(m->chained[0].after, (std::vector<JobDependency>{{"pipe-prep", DependencyCondition::kSucceeded}}));
  EXPECT_EQ(m->chained[1].after, (std::vector<JobDependency>{{"pipe-train", DependencyCondition::kStarted}}));
  std::string warnings;
  for (const auto& w : m->warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("submitted as 3 jobs"), std::string::npos) << warnings;
  EXPECT_TRUE(check_submission_order({m->spec, m->chained[0], m->chained[1]}).ok());

  auto later = interop::job_from_manifest(YAML::Load(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: pipe, namespace: team-a}
spec:
  replicatedJobs:
    - name: a
      dependsOn: [{name: b, status: Complete}]
      template: {spec: {template: {spec: {containers: [{name: c, command: [x]}]}}}}
    - name: b
      template: {spec: {template: {spec: {containers: [{name: c, command: [x]}]}}}}
)"), "js.yaml");
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.error().message.find("not an earlier replicated job"), std::string::npos) << later.error().message;
}

}  // namespace
}  // namespace allot::dependency_test
