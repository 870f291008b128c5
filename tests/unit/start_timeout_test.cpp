// Gang start timeout (core/lifecycle/start_timeout.h, docs/resiliency.md "Gang start timeout"): the policy's keys and their
// errors, the backoff's doubling and cap, the requeue that uses no retry, a scheduler that passes the job over
// until its backoff ends and wakes up then, and replay and snapshots that keep it all.
#include <gtest/gtest.h>

#include "config/spec_yaml.h"
#include "core/pass/scheduler.h"
#include "core/lifecycle/start_timeout.h"
#include "core/model/state.h"
#include "store/cluster_snapshot.h"
#include "store/record_json.h"
#include "store/replay.h"
#include "store/spec_json.h"

namespace allot::start_timeout_test {
namespace {

Result<PolicySpec> policy(const std::string& text) {
  auto d = load_yaml(text, YamlContext{"p.yaml", "", 0});
  EXPECT_TRUE(d.ok());
  return parse_policy(*d, YamlContext{"p.yaml", "policy", 0});
}

TEST(StartTimeout, PolicyKeysAreReadCheckedAndJournaled) {
  auto p = policy("{start_timeout: 300, start_backoff: 30, start_backoff_max: 600}");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->start_timeout_s, 300);
  EXPECT_EQ(p->start_backoff_s, 30);
  EXPECT_EQ(p->start_backoff_max_s, 600);
  EXPECT_EQ(store::policy_from_json(store::to_json(*p)), *p);
  auto defaults = policy("{}");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->start_timeout_s, 0);  // off
  EXPECT_EQ(defaults->start_backoff_s, 60);
  EXPECT_EQ(defaults->start_backoff_max_s, 3600);
  // Policies without the keys are written (and journaled) as before.
  const auto j = store::to_json(*defaults);
  EXPECT_FALSE(j.contains("start_timeout") || j.contains("start_backoff") || j.contains("start_backoff_max")) << j.dump();
  auto below = policy("{start_backoff: 120, start_backoff_max: 60}");
  ASSERT_FALSE(below.ok());
  EXPECT_NE(below.error().message.find("policy.start_backoff_max 60 s is below policy.start_backoff 120 s"), std::string::npos)
      << below.error().message;
  for (const char* bad : {"-1", "1.5", "soon", "[1]"}) {
    auto r = policy(std::string("{start_timeout: ") + bad + "}");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("p.yaml"), std::string::npos) << r.error().message;
  }
}

TEST(StartTimeout, BackoffDoublesUpToItsMaximum) {
  PolicySpec p;
  p.start_backoff_s = 60;
  p.start_backoff_max_s = 3600;
  EXPECT_EQ(start_backoff_s(p, 1), 60);
  EXPECT_EQ(start_backoff_s(p, 2), 120);
  EXPECT_EQ(start_backoff_s(p, 6), 1920);
  EXPECT_EQ(start_backoff_s(p, 7), 3600);
  EXPECT_EQ(start_backoff_s(p, 1000), 3600);  // no overflow however many
  p.start_backoff_s = 0;
  EXPECT_EQ(start_backoff_s(p, 5), 0);
}

// Two nodes of one GPU each, team a owning both; a two-replica job.
ClusterState cluster() {
  ClusterState s;
  EXPECT_TRUE(add_nodes(s, {{.name = "n1", .instance_type = "ml.g5.8xlarge"}, {.name = "n2", .instance_type = "ml.g5.8xlarge"}}, 0).ok());
  PolicySpec p;
  p.start_timeout_s = 300;
  EXPECT_TRUE(set_policy(s, p).ok());
  EXPECT_TRUE(upsert_team(s, TeamSpec{.name = "a", .allocation = {{"ml.g5.8xlarge", {.instances = 2}}}}).ok());
  return s;
}

JobSpec spec(const std::string& name, int replicas) {
  JobSpec j{.name = name, .team = "a", .max_retries = 1};
  j.pod_sets.push_back({.replicas = replicas, .per_replica = {.whole_node = true}});
  return j;
}

TEST(StartTimeout, RequeuesWithoutARetryAndPassesTheJobOverUntilItsBackoffEnds) {
  ClusterState s = cluster();
  const JobId gang = *submit_job(s, spec("gang", 2), 0);
  const Job& j = s.jobs[gang.index()];
  (void)schedule(s, 10);
  ASSERT_EQ(j.state, JobState::kRunning);
  ASSERT_TRUE(store::apply_record(s, store::Record{1, 400, store::StartTimeout{"gang", {"n2"}, 60, "rank 1 on node n2 did not start"}, {}}).ok());
  EXPECT_EQ(j.state, JobState::kSuspended);
  EXPECT_EQ(j.reason_code, ReasonCode::kStartTimeout);
  EXPECT_EQ(j.restarts, 0);  // no retry used
  EXPECT_EQ(j.preemptions, 1);
  EXPECT_EQ(j.start_timeouts, 1);
  EXPECT_EQ(j.backoff_until, 460);
  EXPECT_NE(j.reason.str().find("start timeout: rank 1 on node n2 did not start; requeued without using a retry, it may run "
                                "again from t=460 (backoff 60 s after start timeout 1)"),
            std::string::npos)
      << j.reason.str();
  EXPECT_TRUE(s.running_jobs.empty());  // its capacity is free at once
  // A one-replica job behind it takes the room it left; the gang is passed over and the pass wakes up at 460.
  const JobId other = *submit_job(s, spec("other", 1), 401);
  ScheduleResult r = schedule(s, 401);
  EXPECT_EQ(s.jobs[other.index()].state, JobState::kRunning);
  EXPECT_EQ(j.state, JobState::kSuspended);
  EXPECT_EQ(j.reason_code, ReasonCode::kStartTimeout);  // its reason stays while it backs off
  ASSERT_TRUE(r.next_wakeup);
  EXPECT_EQ(*r.next_wakeup, 460);
  (void)schedule(s, 459);
  EXPECT_EQ(j.state, JobState::kSuspended);
  // At 460 it waits as any Suspended job, while "other" holds a node.
  (void)schedule(s, 460);
  EXPECT_EQ(j.state, JobState::kSuspended);
  EXPECT_EQ(j.reason_code, ReasonCode::kNoIdleQuota);  // it would have to borrow what "other" holds
  ASSERT_TRUE(finish_job(s, "other", 470, true).ok());
  (void)schedule(s, 470);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.restarts, 0);
  // A snapshot keeps the count and the last backoff.
  auto restored = store::cluster_from_json(store::cluster_to_json(s));
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(restored->find_job("gang")->start_timeouts, 1);
  EXPECT_EQ(restored->find_job("gang")->backoff_until, 460);
  EXPECT_EQ(parse_reason_code("start_timeout"), ReasonCode::kStartTimeout);
}

TEST(StartTimeout, ReplayRefusesWhatCannotHaveHappened) {
  ClusterState s = cluster();
  (void)submit_job(s, spec("gang", 2), 0);
  // Not running yet: there is no run to time out.
  auto waiting = store::apply_record(s, store::Record{1, 5, store::StartTimeout{"gang", {"n1"}, 60, "x"}, {}});
  ASSERT_FALSE(waiting.ok());
  EXPECT_NE(waiting.error().message.find("job gang is not running (Pending)"), std::string::npos) << waiting.error().message;
  (void)schedule(s, 10);
  EXPECT_FALSE(store::apply_record(s, store::Record{2, 20, store::StartTimeout{"gang", {"n1"}, -1, "x"}, {}}).ok());
  EXPECT_FALSE(store::apply_record(s, store::Record{3, 20, store::StartTimeout{"nobody", {"n1"}, 60, "x"}, {}}).ok());
  EXPECT_EQ(s.find_job("gang")->state, JobState::kRunning);  // a refused record changes nothing
}

}  // namespace
}  // namespace allot::start_timeout_test
