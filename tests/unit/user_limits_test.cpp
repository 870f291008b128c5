// Per-user limits inside a team (core/quota/user_limits.h; docs/teams-and-policy.md, "Per-user limits"): the pass passes
// a job over while its user is at running_jobs or an accelerator limit (reason user_limit, naming the user and the
// limit), counts the admissions it makes itself, never preempts for such a job and lets other users' jobs run; a
// submission past pending_jobs is refused; bad limits are refused where they are read; the team's limits and the
// job's user survive the journal's JSON and a replay.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "client/render.h"
#include "config/spec_yaml.h"
#include "core/pass/scheduler.h"
#include "core/quota/user_limits.h"
#include "store/replay.h"
#include "store/spec_json.h"
#include "view/state_json.h"

#include "spec_builders.h"

namespace allot::user_limits_test {
namespace {

using allot::test::job_spec;

JobSpec by(JobSpec spec, std::string user) {
  spec.user = std::move(user);
  return spec;
}

UserLimitSpec user_limit(std::string user, std::optional<int64_t> running, std::optional<int64_t> pending,
                         std::map<std::string, int64_t> accelerators = {}) {
  return UserLimitSpec{.user = std::move(user), .running_jobs = running, .pending_jobs = pending, .accelerators = std::move(accelerators)};
}

class UserLimitsTest : public ::testing::Test {
 protected:
  // Two ml.p4d.24xlarge nodes (8 accelerators each); team r owns both.
  void SetUp() override {
    ASSERT_TRUE(add_node(s, NodeSpec{"p1", "ml.p4d.24xlarge", "", {}}, 0).ok());
    ASSERT_TRUE(add_node(s, NodeSpec{"p2", "ml.p4d.24xlarge", "", {}}, 0).ok());
    PriorityClassSpec high;
    high.name = "high";
    high.weight = 100;
    s.policy.priority_classes = {high};
    s.policy.task_prioritization = TaskPrioritization::kTaskRanking;
    team.name = "r";
    AmountSpec n;
    n.instances = 2;
    team.allocation = {{"ml.p4d.24xlarge", n}};
    team.user_limits = {user_limit("alice", 2, std::nullopt, {{"ml.p4d.24xlarge", 8}}), user_limit("bob", 1, 2)};
    ASSERT_TRUE(upsert_team(s, team).ok());
  }
  const Job& job(const std::string& name) { return *s.find_job(name); }
  void submit(const JobSpec& spec) { ASSERT_TRUE(submit_job(s, spec, 0).ok()) << spec.name; }
  ClusterState s;
  TeamSpec team;
};

TEST_F(UserLimitsTest, RunningJobsLimitCountsTheAdmissionsOfTheSamePass) {
  for (const char* name : {"a1", "a2", "a3"}) submit(by(job_spec(name, "r").accelerators(2), "alice"));
  submit(job_spec("anon", "r").accelerators(2));  // no user: never limited
  schedule(s, 0);
  EXPECT_EQ(job("a1").state, JobState::kRunning);
  EXPECT_EQ(job("a2").state, JobState::kRunning);
  EXPECT_EQ(job("a3").state, JobState::kPending);
  EXPECT_EQ(job("a3").reason_code, ReasonCode::kUserLimit);
  EXPECT_EQ(job("a3").reason.str(), "waiting: user alice of team r has 2 running jobs, at its limit of 2 (running_jobs)");
  EXPECT_TRUE(job("a3").feasible);
  EXPECT_EQ(job("anon").state, JobState::kRunning) << "submitted after a3, it is not blocked by it";
  // One of alice's jobs ends: a3 runs at the next pass.
  ASSERT_TRUE(finish_job(s, "a1", 10, true).ok());
  schedule(s, 10);
  EXPECT_EQ(job("a3").state, JobState::kRunning);
}

TEST_F(UserLimitsTest, AcceleratorLimitJudgesWhatTheUsersRunningJobsHold) {
  submit(by(job_spec("big", "r").accelerators(6), "alice"));
  submit(by(job_spec("more", "r").accelerators(4), "alice"));   // 6 + 4 > 8
  schedule(s, 0);
  EXPECT_EQ(job("big").state, JobState::kRunning);
  EXPECT_EQ(job("more").reason_code, ReasonCode::kUserLimit);
  EXPECT_EQ(job("more").reason.str(),
            "waiting: user alice of team r holds 6 accelerators of ml.p4d.24xlarge and this job needs 4 more, over its "
            "limit of 8 (accelerators)");
  submit(by(job_spec("small", "r").accelerators(2), "alice"));  // 6 + 2 = 8: fits, although after "more" in the queue
  schedule(s, 1);
  EXPECT_EQ(job("small").state, JobState::kRunning) << "a job of the same user within the limit is not held back";
  EXPECT_EQ(s.usage[0][0].accelerators, 8);
  EXPECT_EQ(job("more").reason.str(), "waiting: user alice of team r has 2 running jobs, at its limit of 2 (running_jobs)")
      << "the running_jobs limit is judged first";
}

TEST_F(UserLimitsTest, APassedOverJobNeverPreemptsAndBlocksNoOneElse) {
  submit(by(job_spec("a1", "r").accelerators(8), "alice"));
  submit(by(job_spec("a2", "r").accelerators(4), "bob"));
  submit(job_spec("low", "r").accelerators(4));
  schedule(s, 0);
  ASSERT_EQ(job("low").state, JobState::kRunning);
  // alice is at her accelerator limit: her urgent job would preempt `low` (same team, lower priority) without it.
  submit(by(job_spec("urgent", "r").accelerators(4).priority("high"), "alice"));
  ScheduleResult r = schedule(s, 1);
  EXPECT_EQ(job("urgent").state, JobState::kPending);
  EXPECT_EQ(job("urgent").reason_code, ReasonCode::kUserLimit);
  EXPECT_EQ(job("low").state, JobState::kRunning);
  EXPECT_EQ(job("low").preemptions, 0);
  EXPECT_TRUE(r.decisions.empty());
  // Without the limit, the same job preempts: the gate is what held it.
  team.user_limits.clear();
  ASSERT_TRUE(upsert_team(s, team).ok());
  schedule(s, 2);
  EXPECT_EQ(job("urgent").state, JobState::kRunning);
  EXPECT_EQ(job("low").preemptions, 1);
}

TEST_F(UserLimitsTest, PendingJobsLimitRefusesTheSubmissionAndChangesNothing) {
  team.user_limits = {user_limit("bob", 0, 2)};  // bob runs nothing: his jobs all wait
  ASSERT_TRUE(upsert_team(s, team).ok());
  submit(by(job_spec("b1", "r"), "bob"));
  submit(by(job_spec("b2", "r"), "bob"));
  const size_t jobs = s.jobs.size();
  auto refused = submit_job(s, by(job_spec("b3", "r"), "bob"), 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(refused.error().message.rfind("job b3: user bob of team r has 2 waiting jobs, at its limit of 2 (user_limits pending_jobs)", 0), 0u)
      << refused.error().message;
  EXPECT_EQ(s.jobs.size(), jobs);
  EXPECT_EQ(s.find_job("b3"), nullptr);
  EXPECT_TRUE(submit_job(s, by(job_spec("c1", "r"), "carol"), 0).ok()) << "another user is not counted";
  EXPECT_TRUE(submit_job(s, job_spec("c2", "r"), 0).ok()) << "nor a job without a user";
}

TEST_F(UserLimitsTest, NoLimitsMeansTheSameDecisionsAsBefore) {
  ClusterState limited = s;
  team.user_limits.clear();
  ASSERT_TRUE(upsert_team(s, team).ok());
  for (ClusterState* c : {&s, &limited})
    for (const char* name : {"x1", "x2", "x3"}) ASSERT_TRUE(submit_job(*c, by(job_spec(name, "r").accelerators(4), "carol"), 0).ok());
  // carol has no entry in `limited`, and `s` has no limits at all: the same admissions.
  auto a = schedule(s, 0), b = schedule(limited, 0);
  ASSERT_EQ(a.decisions.size(), b.decisions.size());
  for (const char* name : {"x1", "x2", "x3"}) EXPECT_EQ(s.find_job(name)->state, limited.find_job(name)->state) << name;
}

TEST(UserLimitsInput, BadLimitsAreRefusedWithWhatIsAllowed) {
  ClusterState s;
  auto refused = [&](std::vector<UserLimitSpec> limits) {
    TeamSpec t;
    t.name = "t";
    t.user_limits = std::move(limits);
    auto st = upsert_team(s, t);
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(s.find_team("t"), nullptr) << "nothing changed";
    return st.ok() ? std::string() : st.error().message;
  };
  EXPECT_EQ(refused({user_limit("a", 1, 1), user_limit("a", 2, 2)}), "team t, user_limits[1]: user a is listed twice; give each user one entry");
  EXPECT_NE(refused({user_limit("no/slash", 1, 1)}).find("user name 'no/slash' is not allowed; a user name is 1..64 characters"), std::string::npos);
  EXPECT_NE(refused({user_limit("a", -1, 1)}).find("user_limits[0].running_jobs must be 0..1000000, got -1"), std::string::npos);
  EXPECT_NE(refused({user_limit("a", 1, std::nullopt, {{"ml.nope", 1}})}).find("user_limits[0].accelerators: "), std::string::npos);
  EXPECT_NE(refused({user_limit("a", std::nullopt, std::nullopt)}).find("has no limit; give running_jobs, pending_jobs or accelerators"),
            std::string::npos);
  // The YAML reader says where.
  const Catalog catalog = Catalog::builtin();
  auto yaml = [&](const char* text) { return parse_team(YAML::Load(text), catalog, YamlContext{"teams.yaml", "", 0}); };
  auto twice = yaml("name: t\nuser_limits:\n  - {user: a, running_jobs: 1}\n  - {user: a, running_jobs: 2}\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("user a appears twice"), std::string::npos) << twice.error().message;
  EXPECT_NE(twice.error().message.find("teams.yaml:4"), std::string::npos) << twice.error().message;
  auto negative = yaml("name: t\nuser_limits:\n  - {user: a, accelerators: {ml.p4d.24xlarge: -2}}\n");
  ASSERT_FALSE(negative.ok());
  auto unknown_key = yaml("name: t\nuser_limits:\n  - {user: a, max_jobs: 2}\n");
  ASSERT_FALSE(unknown_key.ok());
  EXPECT_NE(unknown_key.error().message.find("max_jobs"), std::string::npos) << unknown_key.error().message;
  auto good = yaml("name: t\nuser_limits:\n  - {user: alice, running_jobs: 2, pending_jobs: 5, accelerators: {p4d.24xlarge: 8}}\n");
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->user_limits, std::vector<UserLimitSpec>{user_limit("alice", 2, 5, {{"ml.p4d.24xlarge", 8}})});
}

TEST_F(UserLimitsTest, LimitsAndUsersSurviveTheJournalsJsonAndAReplay) {
  EXPECT_EQ(store::team_from_json(store::to_json(team)), team);
  const JobSpec spec = by(job_spec("a1", "r"), "alice");
  EXPECT_EQ(store::job_from_json(store::to_json(spec)), spec);
  // A job without a user writes no key: journals written before users read as they always have.
  EXPECT_FALSE(store::to_json(JobSpec(job_spec("x", "r"))).contains("user"));
  TeamSpec plain = team;
  plain.user_limits.clear();
  EXPECT_FALSE(store::to_json(plain).contains("user_limits"));

  // Replayed: the team's limits and the jobs' users, and so the same gate.
  ClusterState replayed;
  uint64_t seq = 0;
  auto put = [&](store::Op op) { ASSERT_TRUE(store::apply_record(replayed, store::Record{++seq, 0, std::move(op), {}}).ok()); };
  put(store::AddNode{NodeSpec{"p1", "ml.p4d.24xlarge", "", {}}, "", false});
  put(store::AddNode{NodeSpec{"p2", "ml.p4d.24xlarge", "", {}}, "", false});
  put(store::SetPolicy{s.policy});
  put(store::UpsertTeam{store::team_from_json(store::to_json(team))});
  for (const char* name : {"a1", "a2", "a3"}) put(store::Submit{store::job_from_json(store::to_json(JobSpec(by(job_spec(name, "r"), "alice"))))});
  schedule(replayed, 0);
  EXPECT_EQ(replayed.find_job("a3")->reason_code, ReasonCode::kUserLimit);
  EXPECT_EQ(replayed.teams[0].user_limits.size(), 2u);
}

TEST_F(UserLimitsTest, DescribeShowsTheLimitsAndTheJobsUser) {
  submit(by(job_spec("a1", "r"), "alice"));
  const std::string team_text = client::describe_team(view::team_json(s, s.teams[0]));
  EXPECT_NE(team_text.find("User limit:  alice: running_jobs 2, accelerators ml.p4d.24xlarge 8"), std::string::npos) << team_text;
  EXPECT_NE(team_text.find("User limit:  bob: running_jobs 1, pending_jobs 2"), std::string::npos) << team_text;
  const std::string job_text = client::describe_job(view::job_json(s, job("a1"), true, view::Times::kRfc3339), 0);
  EXPECT_NE(job_text.find("User:        alice"), std::string::npos) << job_text;
}

}  // namespace
}  // namespace allot::user_limits_test
