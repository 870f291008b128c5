// Wall-time limits (core/lifecycle/time_limit.h): the spec's readers and their errors, the journal's exact JSON, a
// manifest's activeDeadlineSeconds, the resolution of defaults and maxima, the clock across restarts, and replay
// and snapshots that end a job from journaled data alone.
#include <gtest/gtest.h>

#include "config/spec_yaml.h"
#include "core/pass/scheduler.h"
#include "core/model/state.h"
#include "core/lifecycle/time_limit.h"
#include "interop/k8s_manifest.h"
#include "interop/kueue.h"
#include "store/cluster_snapshot.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "store/spec_json.h"

namespace allot::time_limit_test {
namespace {

YAML::Node yaml(const std::string& text) {
  auto d = load_yaml(text, YamlContext{"t.yaml", "", 0});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message);
  return d.ok() ? *d : YAML::Node();
}

Result<JobSpec> job(const std::string& text) { return parse_job_spec(yaml(text), Catalog::builtin(), YamlContext{"t.yaml", "submit", 0}); }
Result<TeamSpec> team(const std::string& text) { return parse_team(yaml(text), Catalog::builtin(), YamlContext{"t.yaml", "teams", 0}); }

const char* kJob = "{name: j, team: a, replicas: 1, per_replica: {whole_node: true}";

TEST(TimeLimit, JobYamlReadsSecondsAndRefusesBadValues) {
  auto ok = job(std::string(kJob) + ", time_limit: 3600}");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->time_limit_s, 3600);
  auto none = job(std::string(kJob) + "}");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->time_limit_s);
  for (const char* bad : {"0", "-5", "1.5", "1h", "[1]"}) {
    auto r = job(std::string(kJob) + ", time_limit: " + bad + "}");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("time_limit"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("t.yaml"), std::string::npos) << r.error().message;
  }
}

TEST(TimeLimit, TeamAndClassSettingsAreReadAndChecked) {
  auto t = team("{name: a, default_time_limit: 600, max_time_limit: 3600, time_limit_resets_on_restart: true}");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->time_limits.default_s, 600);
  EXPECT_EQ(t->time_limits.max_s, 3600);
  EXPECT_TRUE(t->time_limits.resets_on_restart);
  auto above = team("{name: a, default_time_limit: 7200, max_time_limit: 3600}");
  ASSERT_FALSE(above.ok());
  EXPECT_NE(above.error().message.find("default_time_limit 7200 above its max_time_limit 3600"), std::string::npos)
      << above.error().message;
  EXPECT_FALSE(team("{name: a, max_time_limit: 0}").ok());
  EXPECT_FALSE(team("{name: a, time_limit_resets_on_restart: sometimes}").ok());
  auto p = parse_policy(yaml("priority_classes: [{name: short, weight: 5, default_time_limit: 60, max_time_limit: 120}]"),
                        YamlContext{"t.yaml", "policy", 0});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->priority_classes[0].time_limits.default_s, 60);
  EXPECT_EQ(p->priority_classes[0].time_limits.max_s, 120);
}

TEST(TimeLimit, JournalJsonRoundTrips) {
  JobSpec j = *job(std::string(kJob) + ", time_limit: 42}");
  EXPECT_EQ(store::job_from_json(store::to_json(j)), j);
  JobSpec plain = *job(std::string(kJob) + "}");
  EXPECT_FALSE(store::to_json(plain).contains("time_limit_s"));  // records without limits read as before
  TeamSpec t = *team("{name: a, default_time_limit: 10, max_time_limit: 20, time_limit_resets_on_restart: true}");
  EXPECT_EQ(store::team_from_json(store::to_json(t)), t);
  PolicySpec p;
  p.priority_classes.push_back({.name = "c", .weight = 3, .time_limits = {.default_s = 5, .max_s = 9}});
  EXPECT_EQ(store::policy_from_json(store::to_json(p)), p);
  const store::Op op = store::TimeLimitExceeded{"j", 42};
  auto back = store::op_from_json(store::op_to_json(op));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, op);
}

TEST(TimeLimit, ManifestActiveDeadlineSecondsIsTheLimit) {
  auto m = interop::job_from_manifest(yaml(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: k, namespace: team-a}
spec:
  activeDeadlineSeconds: 90
  template:
    spec:
      containers:
        - name: c
          command: [sleep, "300"]
          resources: {limits: {nvidia.com/gpu: 1}}
)"),
                                      "k.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->spec.time_limit_s, 90);
  auto pt = interop::job_from_manifest(yaml(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p, namespace: team-a}
spec:
  runPolicy: {activeDeadlineSeconds: 120}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: c
              command: [python, train.py]
              resources: {limits: {nvidia.com/gpu: 1}}
)"),
                                       "p.yaml");
  ASSERT_TRUE(pt.ok()) << pt.error().message;
  EXPECT_EQ(pt->spec.time_limit_s, 120);
  auto js = interop::job_from_manifest(yaml(R"(
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: team-a}
spec:
  replicatedJobs:
    - name: a
      template:
        spec:
          activeDeadlineSeconds: 100
          template: {spec: {containers: [{name: c, command: [true], resources: {limits: {nvidia.com/gpu: 1}}}]}}
    - name: b
      template:
        spec:
          activeDeadlineSeconds: 50
          template: {spec: {containers: [{name: c, command: [true], resources: {limits: {nvidia.com/gpu: 1}}}]}}
)"),
                                       "js.yaml");
  ASSERT_TRUE(js.ok()) << js.error().message;
  EXPECT_EQ(js->spec.time_limit_s, 50);  // one gang: the smallest
  bool warned = false;
  for (const auto& w : js->warnings) warned |= w.find("the smallest, 50 s, is the whole gang's time limit") != std::string::npos;
  EXPECT_TRUE(warned);
  auto bad = interop::job_from_manifest(yaml(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: k, namespace: team-a}
spec:
  activeDeadlineSeconds: 0
  template: {spec: {containers: [{name: c, command: [true], resources: {limits: {nvidia.com/gpu: 1}}}]}}
)"),
                                        "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("activeDeadlineSeconds"), std::string::npos) << bad.error().message;
}

// Two nodes, team a (1000 s default, 2000 s max), class short (300 s max).
ClusterState limits_cluster() {
  ClusterState s;
  EXPECT_TRUE(add_nodes(s, {{.name = "n1", .instance_type = "ml.g5.8xlarge"}, {.name = "n2", .instance_type = "ml.g5.8xlarge"}}, 0).ok());
  PolicySpec p;
  p.priority_classes.push_back({.name = "short", .weight = 10, .time_limits = {.max_s = 300}});
  EXPECT_TRUE(set_policy(s, p).ok());
  TeamSpec t{.name = "a", .allocation = {{"ml.g5.8xlarge", {.instances = 2}}}};
  t.time_limits = {.default_s = 1000, .max_s = 2000};
  EXPECT_TRUE(upsert_team(s, t).ok());
  return s;
}

JobSpec spec(const std::string& name, std::optional<int64_t> limit, const std::string& priority = "") {
  JobSpec j{.name = name, .team = "a", .priority = priority, .max_retries = 3};
  j.pod_sets.push_back({.replicas = 1, .per_replica = {.whole_node = true}});
  j.time_limit_s = limit;
  return j;
}

TEST(TimeLimit, SubmissionResolvesDefaultsAndRefusesAboveTheMaximum) {
  ClusterState s = limits_cluster();
  auto d = submit_job(s, spec("d", std::nullopt), 0);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(s.jobs[d->index()].time_limit_s, 1000);
  // The class's maximum (300) is stricter than the team's default (1000): the job gets 300.
  auto c = submit_job(s, spec("c", std::nullopt, "short"), 0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(s.jobs[c->index()].time_limit_s, 300);
  auto over = submit_job(s, spec("over", 2500), 0);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().message,
            "job over: time_limit 2500 s is above the maximum of team a (max_time_limit 2000 s); give a time_limit of 1..2000 s, "
            "or none for the default");
  auto over_class = submit_job(s, spec("over-class", 400, "short"), 0);
  ASSERT_FALSE(over_class.ok());
  EXPECT_NE(over_class.error().message.find("priority class short (max_time_limit 300 s)"), std::string::npos)
      << over_class.error().message;
  EXPECT_FALSE(s.find_job("over"));  // a refused submission changes nothing
}

TEST(TimeLimit, TheClockCountsEveryRunAndEndsTheJob) {
  ClusterState s = limits_cluster();
  const JobId id = *submit_job(s, spec("j", 100), 0);
  const Job& j = s.jobs[id.index()];
  EXPECT_EQ(time_left(j, 0), 100);
  EXPECT_FALSE(time_limit_at(j));  // waiting: the clock stands still
  (void)schedule(s, 10);
  ASSERT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(time_limit_at(j), 110);
  // Its node fails at 50 after 40 s of running; it restarts on the other node with 60 s left.
  const std::string first = s.nodes[j.placement.nodes()[0].index()].name;
  ASSERT_TRUE(fail_node(s, first, 50).ok());
  (void)schedule(s, 50);
  ASSERT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.restarts, 1);
  EXPECT_EQ(time_used(j, 50), 40);
  EXPECT_EQ(time_left(j, 50), 60);
  EXPECT_EQ(next_time_limit(s), 110);
  // A snapshot keeps the clock.
  auto restored = store::cluster_from_json(store::cluster_to_json(s));
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(time_limit_at(*restored->find_job("j")), 110);
  EXPECT_TRUE(past_time_limit(s, 109).empty());
  // Replaying a record that ends it before its limit is refused; at its limit it ends Failed without a retry.
  auto early = store::apply_record(s, store::Record{1, 109, store::TimeLimitExceeded{"j", 100}, {}});
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.error().message.find("reaches its time limit at 110"), std::string::npos) << early.error().message;
  ASSERT_EQ(past_time_limit(s, 110), std::vector<JobId>{id});
  ASSERT_TRUE(store::apply_record(s, store::Record{2, 110, store::TimeLimitExceeded{"j", 100}, {}}).ok());
  EXPECT_EQ(j.state, JobState::kFailed);
  EXPECT_EQ(j.reason_code, ReasonCode::kDeadlineExceeded);
  EXPECT_EQ(j.restarts, 1);
  EXPECT_NE(j.reason.str().find("it ran 100 s, its time limit is 100 s"), std::string::npos) << j.reason.str();
  EXPECT_TRUE(s.running_jobs.empty());
  EXPECT_FALSE(next_time_limit(s));
  EXPECT_EQ(parse_reason_code("deadline_exceeded"), ReasonCode::kDeadlineExceeded);
}

TEST(TimeLimit, ResetOnRestartGivesEachRunTheWholeLimit) {
  ClusterState s = limits_cluster();
  TeamSpec t = s.find_team("a")->spec;
  t.time_limits.resets_on_restart = true;
  ASSERT_TRUE(upsert_team(s, t).ok());
  const JobId id = *submit_job(s, spec("j", 100), 0);
  const Job& j = s.jobs[id.index()];
  (void)schedule(s, 0);
  ASSERT_TRUE(fail_node(s, s.nodes[j.placement.nodes()[0].index()].name, 70).ok());
  (void)schedule(s, 70);
  ASSERT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(time_left(j, 70), 100);
  EXPECT_EQ(time_limit_at(j), 170);
}

TEST(TimeLimit, JobsWithoutLimitsNeverEnd) {
  ClusterState s;
  ASSERT_TRUE(add_nodes(s, {{.name = "n1", .instance_type = "ml.g5.8xlarge"}}, 0).ok());
  ASSERT_TRUE(upsert_team(s, TeamSpec{.name = "a", .allocation = {{"ml.g5.8xlarge", {.instances = 1}}}}).ok());
  JobSpec free = spec("free", std::nullopt);
  const JobId id = *submit_job(s, free, 0);
  (void)schedule(s, 0);
  EXPECT_EQ(s.jobs[id.index()].time_limit_s, 0);
  EXPECT_FALSE(time_left(s.jobs[id.index()], 1'000'000));
  EXPECT_TRUE(past_time_limit(s, 1'000'000'000).empty());
  EXPECT_FALSE(exceed_time_limit(s, "free", 1'000'000'000).ok());
}

}  // namespace
}  // namespace allot::time_limit_test

namespace allot::time_limit_test {
namespace {

// Kueue has no time limits: export writes them as annotations, import and the teams file give them back.
TEST(TimeLimit, KueueExportAndImportKeepThem) {
  PolicySpec policy;
  policy.priority_classes.push_back({.name = "short", .weight = 10, .time_limits = {.default_s = 60, .max_s = 120}});
  TeamSpec t{.name = "team-a", .allocation = {{"ml.g5.8xlarge", {.instances = 2}}}};
  t.time_limits = {.default_s = 3600, .max_s = 7200, .resets_on_restart = true};
  auto out = interop::export_kueue(policy, {t}, Catalog::builtin(), {});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_NE(out->yaml.find("allot.scheduler/max-time-limit: \"7200\""), std::string::npos) << out->yaml;
  interop::KueueImport back;
  ASSERT_TRUE(interop::import_kueue(out->yaml, "export", Catalog::builtin(), back).ok());
  ASSERT_TRUE(interop::finish_kueue_import(back));
  ASSERT_EQ(back.teams.size(), 1u);
  EXPECT_EQ(back.teams[0].time_limits, t.time_limits);
  ASSERT_EQ(back.policy.priority_classes.size(), 1u);
  EXPECT_EQ(back.policy.priority_classes[0].time_limits, policy.priority_classes[0].time_limits);
  // The teams file reads back to the same settings.
  const std::string file = interop::teams_file_yaml(back);
  auto teams = parse_teams(yaml(file)["teams"], Catalog::builtin(), YamlContext{"teams.yaml", "teams", 0});
  ASSERT_TRUE(teams.ok()) << teams.error().message << "\n" << file;
  EXPECT_EQ((*teams)[0].time_limits, t.time_limits);
  // A bad annotation is left out with a warning.
  std::string bad = out->yaml;
  bad.replace(bad.find("\"7200\""), 6, "\"soon\"");
  interop::KueueImport b;
  ASSERT_TRUE(interop::import_kueue(bad, "bad", Catalog::builtin(), b).ok());
  ASSERT_EQ(b.teams.size(), 1u);
  EXPECT_FALSE(b.teams[0].time_limits.max_s);
  bool warned = false;
  for (const auto& w : b.warnings) warned |= w.find("max-time-limit") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace allot::time_limit_test
