// Job arrays (core/model/array.h; docs/jobs.md, "Arrays"): the spec in YAML, the journal and the client body, with bad
// input refused; the tasks an array submission makes; all or nothing at submission (a name taken, a pending-jobs
// limit); the throttle in the scheduler pass, lowest index first, holding nothing back; a large array's pass; the
// Kubernetes Indexed Job that is an array.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "client/spec_json.h"
#include "config/spec_yaml.h"
#include "core/model/array.h"
#include "core/pass/scheduler.h"
#include "interop/k8s_manifest.h"
#include "store/spec_json.h"

#include "spec_builders.h"

namespace allot::array_test {
namespace {

using allot::test::job_spec;

JobSpec array_of(JobSpec spec, int count, int parallel) {
  spec.array = ArraySpec{.count = count, .parallel = parallel};
  return spec;
}

Result<JobSpec> parse(const std::string& yaml) { return parse_job_spec(YAML::Load(yaml), Catalog::builtin(), {"a.yaml", "", 0}); }

TEST(ArraySpecs, YamlJournalAndClientBodiesCarryItAndBadInputIsRefused) {
  auto spec = parse("name: sweep\nteam: a\narray: {count: 100, parallel: 10}\n");
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_TRUE(spec->array);
  EXPECT_EQ(spec->array->count, 100);
  EXPECT_EQ(spec->array->parallel, 10);
  EXPECT_FALSE(spec->array->index) << "a submission has no index";
  EXPECT_EQ(store::job_from_json(store::to_json(*spec)), *spec);
  auto back = parse_job_spec(YAML::Load(client::job_body(*spec).dump()), Catalog::builtin(), {});
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, *spec);
  auto whole = parse("name: sweep\nteam: a\narray: {count: 7}\n");
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->array->parallel, 7) << "parallel defaults to count";

  auto refused = [](const std::string& yaml, const std::string& says) {
    auto r = parse(yaml);
    ASSERT_FALSE(r) << yaml;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  };
  refused("name: s\nteam: a\narray: {count: 0}\n", "1..100000");
  refused("name: s\nteam: a\narray: {count: 100001}\n", "1..100000");
  refused("name: s\nteam: a\narray: {count: 4, parallel: 5}\n", "1..4");
  refused("name: s\nteam: a\narray: {parallel: 5}\n", "count");
  refused("name: s\nteam: a\narray: {count: 4, index: 1}\n", "index");
  refused("name: s\nteam: a\narray: 4\n", "a.yaml:3");
  refused("name: s\nteam: a\nreplicas: {min: 1, max: 4}\narray: {count: 4}\n", "elastic");
}

TEST(ArraySpecs, TasksAreNamedAndIndexedAndTheJournalKeepsTheirIndex) {
  auto tasks = array_tasks(array_of(job_spec("sweep", "a"), 3, 2));
  ASSERT_TRUE(tasks) << tasks.error().message;
  ASSERT_EQ(tasks->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const JobSpec& t = (*tasks)[static_cast<size_t>(i)];
    EXPECT_EQ(t.name, "sweep-" + std::to_string(i));
    EXPECT_EQ(t.array->name, "sweep");
    EXPECT_EQ(t.array->index, i);
    EXPECT_EQ(t.array->parallel, 2);
    EXPECT_EQ(store::job_from_json(store::to_json(t)), t) << "the journal keeps the task's array and index";
  }
  EXPECT_FALSE(array_tasks(job_spec("plain", "a"))) << "not an array";
  EXPECT_FALSE(array_tasks((*tasks)[1])) << "a task is not a submission";
  // Checked on the core's side as well, whoever built the spec.
  EXPECT_FALSE(check_array(array_of(job_spec("s", "a"), 5, 6)));
  EXPECT_FALSE(check_array(array_of(job_spec("s", "a").replicas(4).min_replicas(2), 5, 1)));
  EXPECT_FALSE(check_array(array_of(job_spec(std::string(251, 'x'), "a"), 100, 1))) << "x...-99 is past 253 characters";
  EXPECT_TRUE(check_array(array_of(job_spec(std::string(250, 'x'), "a"), 100, 1))) << "x...-99 is 253 characters";
  JobSpec forged = (*tasks)[1];
  forged.name = "sweep-7";
  EXPECT_FALSE(check_array(forged)) << "a task's name is its array's and index";
}

class ArrayPass : public ::testing::Test {
 protected:
  // Four ml.g5.8xlarge nodes (one accelerator each); team a owns all four.
  void SetUp() override {
    for (int i = 1; i <= 4; ++i) ASSERT_TRUE(add_node(s, NodeSpec{"n" + std::to_string(i), "ml.g5.8xlarge", "", {}}, 0).ok());
    TeamSpec t;
    t.name = "a";
    AmountSpec n;
    n.instances = 4;
    t.allocation = {{"ml.g5.8xlarge", n}};
    ASSERT_TRUE(upsert_team(s, t).ok());
  }
  const Job& job(const std::string& name) { return *s.find_job(name); }
  int running(const std::string& array) {
    int n = 0;
    for (JobId id : s.running_jobs) n += s.jobs[id.index()].spec.array && s.jobs[id.index()].spec.array->name == array;
    return n;
  }
  ClusterState s;
};

TEST_F(ArrayPass, AtMostParallelRunLowestIndexFirstAndTheRestHoldNothingBack) {
  ASSERT_TRUE(submit_array(s, array_of(job_spec("sweep", "a"), 6, 2), 0));
  ASSERT_TRUE(submit_job(s, job_spec("solo", "a"), 0));
  schedule(s, 1);
  EXPECT_EQ(job("sweep-0").state, JobState::kRunning);
  EXPECT_EQ(job("sweep-1").state, JobState::kRunning);
  EXPECT_EQ(job("solo").state, JobState::kRunning) << "tasks kept out by the throttle hold nothing back";
  for (int i = 2; i < 6; ++i) {
    const Job& t = job("sweep-" + std::to_string(i));
    EXPECT_EQ(t.state, JobState::kPending);
    EXPECT_EQ(t.reason_code, ReasonCode::kArrayThrottle) << t.reason.str();
    EXPECT_TRUE(t.feasible);
  }
  EXPECT_EQ(job("sweep-4").reason.str(),
            "waiting: array sweep admits at most 2 of its tasks at once (parallel), and 2 of them are running or ahead of this one");
  // A node is idle, and stays so: the throttle, not capacity, holds the tasks.
  schedule(s, 2);
  EXPECT_EQ(running("sweep"), 2);
  // A task ends: the next in index order takes its place; a failed one with a retry comes back first.
  ASSERT_TRUE(finish_job(s, "sweep-0", 3, true));
  schedule(s, 3);
  EXPECT_EQ(job("sweep-2").state, JobState::kRunning);
  EXPECT_EQ(job("sweep-3").state, JobState::kPending);
  ArrayCounts c = count_array(s, *find_array(s, "sweep"));
  EXPECT_EQ(array_counts_text(c), "2 running, 3 pending, 1 succeeded");
  EXPECT_EQ(array_state(c), JobState::kRunning);
  EXPECT_EQ(c.total, 6);
}

TEST_F(ArrayPass, ARetriedTaskKeepsItsPlaceAndTouchesNoOther) {
  JobSpec spec = array_of(job_spec("sweep", "a"), 4, 2);
  spec.max_retries = 1;
  ASSERT_TRUE(submit_array(s, spec, 0));
  schedule(s, 1);
  ASSERT_TRUE(finish_job(s, "sweep-1", 5, false));
  EXPECT_EQ(job("sweep-1").state, JobState::kSuspended);
  schedule(s, 5);
  EXPECT_EQ(job("sweep-1").state, JobState::kRunning) << "first among the waiting tasks: its submission's place";
  EXPECT_EQ(job("sweep-1").restarts, 1);
  EXPECT_EQ(job("sweep-0").restarts, 0);
  EXPECT_EQ(job("sweep-2").reason_code, ReasonCode::kArrayThrottle);
  ASSERT_TRUE(finish_job(s, "sweep-1", 6, false));
  EXPECT_EQ(job("sweep-1").state, JobState::kFailed) << "no retries left";
  schedule(s, 6);
  EXPECT_EQ(job("sweep-2").state, JobState::kRunning) << "a failed task frees its slot";
}

TEST_F(ArrayPass, SubmissionIsAllOrNothing) {
  ASSERT_TRUE(submit_job(s, job_spec("sweep-3", "a"), 0));
  const size_t jobs = s.jobs.size();
  auto taken = submit_array(s, array_of(job_spec("sweep", "a"), 5, 1), 0);
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message.find("sweep-3"), std::string::npos) << taken.error().message;
  EXPECT_EQ(s.jobs.size(), jobs) << "not even task 0";
  EXPECT_FALSE(find_array(s, "sweep"));
  // The array's own name is taken too, both ways.
  ASSERT_TRUE(submit_array(s, array_of(job_spec("grid", "a"), 2, 1), 0));
  EXPECT_FALSE(submit_job(s, job_spec("grid", "a"), 0));
  EXPECT_FALSE(submit_array(s, array_of(job_spec("grid", "a"), 2, 1), 0));
  EXPECT_FALSE(submit_array(s, array_of(job_spec("sweep-3", "a"), 2, 1), 0));
  // The submission itself is never a job.
  EXPECT_FALSE(submit_job(s, array_of(job_spec("whole", "a"), 2, 1), 0));
}

TEST_F(ArrayPass, APendingJobsLimitCountsEveryTask) {
  TeamSpec t = s.teams[0].spec;
  t.user_limits = {UserLimitSpec{.user = "ann", .pending_jobs = 5}};
  ASSERT_TRUE(upsert_team(s, t).ok());
  JobSpec spec = array_of(job_spec("sweep", "a"), 6, 1);
  spec.user = "ann";
  auto r = submit_array(s, spec, 0);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("6 tasks of this array"), std::string::npos) << r.error().message;
  EXPECT_TRUE(s.jobs.empty());
  spec.array->count = 5;
  EXPECT_TRUE(submit_array(s, spec, 0));
}

// A large array's pass: every waiting task is sorted out in O(1) (its array is full), the pass admits none of
// them, and every one says why. (Figures are bench/array_bench.sh's; this checks the outcome at scale.)
TEST_F(ArrayPass, TwentyThousandWaitingTasks) {
  ASSERT_TRUE(submit_array(s, array_of(job_spec("big", "a"), 20000, 3), 0));
  schedule(s, 1);
  EXPECT_EQ(running("big"), 3);
  schedule(s, 2);
  EXPECT_EQ(running("big"), 3);
  EXPECT_EQ(job("big-19999").reason_code, ReasonCode::kArrayThrottle);
  EXPECT_EQ(job("big-0").state, JobState::kRunning);
  EXPECT_EQ(job("big-3").state, JobState::kPending);
}

TEST(ArrayManifest, AnIndexedJobWithMoreCompletionsThanParallelismIsAnArray) {
  auto job = [](const std::string& spec_lines, const std::string& annotations = "{}") {
    return interop::job_from_manifest(
        YAML::Load("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: a, annotations: " + annotations + "}\nspec:\n" +
                   spec_lines +
                   "  template: {spec: {containers: [{name: c, command: [run], resources: {requests: {nvidia.com/gpu: 1}}}]}}\n"),
        "j.yaml");
  };
  auto m = job("  parallelism: 10\n  completions: 100\n  completionMode: Indexed\n  backoffLimit: 9\n  backoffLimitPerIndex: 2\n");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE(m->spec.array);
  EXPECT_EQ(m->spec.array->count, 100);
  EXPECT_EQ(m->spec.array->parallel, 10);
  EXPECT_EQ(m->spec.pod_sets[0].replicas, 1) << "one pod per task";
  EXPECT_EQ(m->spec.max_retries, 2) << "backoffLimitPerIndex is each task's";
  EXPECT_FALSE(m->spec.completion_index);
  for (const auto& w : m->warnings) EXPECT_EQ(w.find("completions"), std::string::npos) << w;
  // Not an array: a gang, as before, with its warning.
  auto gang = job("  parallelism: 4\n  completions: 8\n");
  ASSERT_TRUE(gang) << gang.error().message;
  EXPECT_FALSE(gang->spec.array);
  EXPECT_EQ(gang->spec.pod_sets[0].replicas, 4);
  bool warned = false;
  for (const auto& w : gang->warnings) warned |= w.find("completions is not used") != std::string::npos;
  EXPECT_TRUE(warned);
  auto same = job("  parallelism: 4\n  completions: 4\n  completionMode: Indexed\n");
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_FALSE(same->spec.array);
  EXPECT_TRUE(same->spec.completion_index);
  auto elastic = job("  parallelism: 4\n  completions: 8\n  completionMode: Indexed\n", "{kueue.x-k8s.io/job-min-parallelism: \"2\"}");
  ASSERT_FALSE(elastic);
  EXPECT_NE(elastic.error().message.find("cannot be elastic"), std::string::npos) << elastic.error().message;
}

}  // namespace
}  // namespace allot::array_test
