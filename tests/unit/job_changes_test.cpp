// Changes to submitted jobs (core/lifecycle/job_changes.cpp): hold and release, a new priority class, deletion of a
// finished job; and job labels with their selectors (core/model/labels.h).
#include <gtest/gtest.h>

#include "core/model/labels.h"
#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::job_changes_test {
namespace {

using allot::test::job_spec;

class JobChangesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One ml.g5.8xlarge node: one accelerator, so one job at a time runs.
    ASSERT_TRUE(add_node(s, NodeSpec{"n1", "ml.g5.8xlarge", "", {}}, 0).ok());
    TeamSpec t;
    t.name = "a";
    AmountSpec one;
    one.instances = 1;
    t.allocation = {{"ml.g5.8xlarge", one}};
    ASSERT_TRUE(upsert_team(s, t).ok());
    PolicySpec p;
    p.task_prioritization = TaskPrioritization::kTaskRanking;
    p.priority_classes = {{"high", 90}, {"low", 10}};
    ASSERT_TRUE(set_policy(s, p).ok());
  }
  const Job& job(const std::string& name) { return *s.find_job(name); }
  ClusterState s;
};

TEST_F(JobChangesTest, HeldJobIsPassedOverUntilReleased) {
  ASSERT_TRUE(submit_job(s, job_spec("first", "a"), 0).ok());
  ASSERT_TRUE(submit_job(s, job_spec("second", "a"), 0).ok());
  ASSERT_TRUE(set_job_held(s, "first", true, 1).ok());
  schedule(s, 2);
  // The held job stays Pending and says why; the next one in line runs in its place.
  EXPECT_EQ(job("first").state, JobState::kPending);
  EXPECT_EQ(job("first").reason_code, ReasonCode::kHeld);
  EXPECT_NE(job("first").reason.str().find("held by request"), std::string::npos);
  EXPECT_EQ(job("second").state, JobState::kRunning);
  ASSERT_TRUE(cancel_job(s, "second", 3).ok());
  schedule(s, 4);
  EXPECT_EQ(job("first").state, JobState::kPending) << "a held job must not run on a free cluster";
  ASSERT_TRUE(set_job_held(s, "first", false, 5).ok());
  schedule(s, 6);
  EXPECT_EQ(job("first").state, JobState::kRunning);
}

TEST_F(JobChangesTest, HoldRefusesWhatItCannotDo) {
  ASSERT_TRUE(submit_job(s, job_spec("run", "a"), 0).ok());
  schedule(s, 1);
  ASSERT_EQ(job("run").state, JobState::kRunning);
  auto running = set_job_held(s, "run", true, 2);
  ASSERT_FALSE(running.ok());
  EXPECT_EQ(running.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(running.error().message.find("only a Pending or Suspended job"), std::string::npos);
  ASSERT_TRUE(submit_job(s, job_spec("wait", "a"), 2).ok());
  EXPECT_FALSE(set_job_held(s, "wait", false, 3).ok()) << "releasing a job that is not held";
  ASSERT_TRUE(set_job_held(s, "wait", true, 3).ok());
  EXPECT_FALSE(set_job_held(s, "wait", true, 4).ok()) << "holding a held job";
  EXPECT_EQ(set_job_held(s, "nope", true, 4).error().code, ErrorCode::kNotFound);
  // Cancelling a held job ends it, and it is no longer held.
  ASSERT_TRUE(cancel_job(s, "wait", 5).ok());
  EXPECT_FALSE(job("wait").held);
}

TEST_F(JobChangesTest, NewPriorityClassReordersTheQueue) {
  ASSERT_TRUE(submit_job(s, job_spec("blocker", "a"), 0).ok());
  schedule(s, 1);
  ASSERT_TRUE(submit_job(s, job_spec("early", "a").priority("low"), 2).ok());
  ASSERT_TRUE(submit_job(s, job_spec("late", "a").priority("low"), 3).ok());
  ASSERT_TRUE(set_job_priority(s, "late", "high", 4).ok());
  EXPECT_EQ(job("late").priority, 90);
  EXPECT_EQ(job("late").spec.priority, "high");
  ASSERT_TRUE(cancel_job(s, "blocker", 5).ok());
  schedule(s, 6);
  EXPECT_EQ(job("late").state, JobState::kRunning) << "the higher class goes first";
  EXPECT_EQ(job("early").state, JobState::kPending);
  // No class: the lowest, weight 0. Unknown classes and running jobs are refused.
  ASSERT_TRUE(set_job_priority(s, "early", "", 7).ok());
  EXPECT_EQ(job("early").priority, 0);
  auto unknown = set_job_priority(s, "early", "urgent", 8);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("priority classes: high, low"), std::string::npos) << unknown.error().message;
  EXPECT_EQ(set_job_priority(s, "late", "low", 8).error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(JobChangesTest, DeletedJobFreesItsNameAndNumbersAttemptsOn) {
  ASSERT_TRUE(submit_job(s, job_spec("train", "a"), 0).ok());
  schedule(s, 1);
  auto active = delete_job(s, "train");
  ASSERT_FALSE(active.ok());
  EXPECT_NE(active.error().message.find("cancel it first"), std::string::npos);
  ASSERT_TRUE(cancel_job(s, "train", 2).ok());
  const JobId old = job("train").id;
  ASSERT_TRUE(delete_job(s, "train").ok());
  EXPECT_EQ(s.find_job("train"), nullptr);
  EXPECT_TRUE(s.jobs[old.index()].deleted);
  // The same name again: a new job, whose attempts follow the old one's (the old ran once: attempt 0).
  auto again = submit_job(s, job_spec("train", "a"), 3);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->index(), old.index());
  EXPECT_EQ(job("train").attempt_base, 1);
  EXPECT_EQ(delete_job(s, "nope").error().code, ErrorCode::kNotFound);
}

// Retention (compact_finished): finished jobs at or before the cutoff leave, whether deleted or not; waiting
// and running ones, and those that finished later, stay; names are free and attempts numbered on.
TEST_F(JobChangesTest, CompactionTakesOnlyJobsFinishedByTheCutoff) {
  ASSERT_TRUE(submit_job(s, job_spec("done-early", "a"), 0).ok());
  schedule(s, 1);
  ASSERT_TRUE(finish_job(s, "done-early", 10, true).ok());   // finished at 10
  ASSERT_TRUE(submit_job(s, job_spec("cancelled", "a"), 11).ok());
  ASSERT_TRUE(cancel_job(s, "cancelled", 12).ok());          // finished at 12
  ASSERT_TRUE(delete_job(s, "cancelled").ok());
  ASSERT_TRUE(submit_job(s, job_spec("running", "a"), 13).ok());
  ASSERT_TRUE(submit_job(s, job_spec("waiting", "a"), 13).ok());
  schedule(s, 14);
  ASSERT_TRUE(submit_job(s, job_spec("late", "a"), 15).ok());
  ASSERT_TRUE(cancel_job(s, "late", 30).ok());               // finished at 30
  ASSERT_EQ(job("running").state, JobState::kRunning);
  const JobId early = job("done-early").id;

  auto future = compact_finished(s, 41, 40);
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.error().message.find("after the record's time"), std::string::npos) << future.error().message;
  EXPECT_EQ(s.compacted_jobs, 0u) << "a refused compaction changes nothing";

  auto gone = compact_finished(s, 12, 40);
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  ASSERT_EQ(gone->size(), 2u);  // done-early (at 10) and the deleted "cancelled" (at 12, the cutoff itself)
  EXPECT_EQ(s.compacted_jobs, 2u);
  EXPECT_EQ(s.compacted_before, 12);
  EXPECT_EQ(s.compacted_at, 40);
  EXPECT_EQ(s.find_job("done-early"), nullptr);
  const Job& tomb = s.jobs[early.index()];
  EXPECT_TRUE(tomb.compacted && tomb.deleted);
  EXPECT_EQ(tomb.id, early);
  EXPECT_TRUE(tomb.spec.name.empty() && tomb.history.empty() && tomb.pod_sets.empty()) << "a tombstone keeps only its ID";
  EXPECT_FALSE(is_active(tomb.state));
  EXPECT_EQ(job("running").state, JobState::kRunning);
  EXPECT_EQ(job("waiting").state, JobState::kPending);
  EXPECT_EQ(job("late").state, JobState::kCancelled) << "finished after the cutoff: kept";

  // Nothing more to take at the same cutoff; a later one takes "late".
  EXPECT_TRUE(compact_finished(s, 12, 41)->empty());
  EXPECT_EQ(compact_finished(s, 30, 42)->size(), 1u);
  EXPECT_EQ(s.find_job("late"), nullptr);

  // The name is free, and the new job's runs are numbered after the old one's (it ran once).
  ASSERT_TRUE(submit_job(s, job_spec("done-early", "a"), 43).ok());
  EXPECT_EQ(job("done-early").attempt_base, 1);
  EXPECT_NE(job("done-early").id, early);
  // The scheduler goes on as before: the waiting job runs once the running one finishes.
  ASSERT_TRUE(finish_job(s, "running", 44, true).ok());
  schedule(s, 45);
  EXPECT_EQ(job("waiting").state, JobState::kRunning);
}

TEST_F(JobChangesTest, RemovedTeamsAreNotOffered) {
  TeamSpec b;
  b.name = "b";
  ASSERT_TRUE(upsert_team(s, b).ok());
  ASSERT_TRUE(remove_team(s, "b").ok());
  JobSpec j = job_spec("x", "a");
  j.team = "c";
  auto unknown = submit_job(s, j, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("teams: a"), std::string::npos) << unknown.error().message;
  EXPECT_EQ(unknown.error().message.find("teams: a, b"), std::string::npos) << unknown.error().message;
  EXPECT_EQ(unknown.error().message.substr(unknown.error().message.find("teams: ")), "teams: a") << unknown.error().message;
  ASSERT_TRUE(upsert_team(s, b).ok());
  EXPECT_EQ(s.team_names(), "a, b") << "defined again, it is offered again";
}

TEST(Labels, RulesFollowKubernetes) {
  EXPECT_EQ(label_problem("app", "llm"), "");
  EXPECT_EQ(label_problem("kueue.x-k8s.io/queue-name", "hyperpod-ns-a-localqueue"), "");
  EXPECT_EQ(label_problem("tier", ""), "");
  EXPECT_NE(label_problem("", "x"), "");
  EXPECT_NE(label_problem("-app", "x"), "");
  EXPECT_NE(label_problem("Example.COM/app", "x"), "") << "a prefix is a lower-case DNS subdomain";
  EXPECT_NE(label_problem("app", std::string(64, 'a')), "");
  EXPECT_NE(label_problem("app", "a b"), "");
}

TEST(Labels, SelectorsMatchAsKubectlDoes) {
  auto sel = parse_label_selector("app=llm, tier!=batch");
  ASSERT_TRUE(sel.ok());
  ASSERT_EQ(sel->size(), 2u);
  EXPECT_TRUE(selector_matches(*sel, {{"app", "llm"}}));
  EXPECT_TRUE(selector_matches(*sel, {{"app", "llm"}, {"tier", "serve"}}));
  EXPECT_FALSE(selector_matches(*sel, {{"app", "llm"}, {"tier", "batch"}}));
  EXPECT_FALSE(selector_matches(*sel, {{"tier", "serve"}}));
  auto doubled = parse_label_selector("app==llm");
  ASSERT_TRUE(doubled.ok());
  EXPECT_TRUE(selector_matches(*doubled, {{"app", "llm"}}));
  EXPECT_TRUE(parse_label_selector("")->empty());
  auto bad = parse_label_selector("app");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("is not key=value"), std::string::npos);
  EXPECT_FALSE(parse_label_selector("app=a b").ok());
}

}  // namespace
}  // namespace allot::job_changes_test
