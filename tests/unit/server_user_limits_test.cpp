// Per-user limits in the server (core/quota/user_limits.h; docs/teams-and-policy.md, "Per-user limits"): a token
// carries a user, its jobs carry it and the audit trail names it; a job past running_jobs waits with reason
// user_limit (the Queue page's category too) and starts when another of the same user ends; a submission past
// pending_jobs is refused with 409 naming the limit; a job spec may not name another user; limits survive a
// restart from the journal and from a snapshot; a limit change whose journal write fails is not in effect, before
// or after a restart, and one acknowledged is.
#include "server/writer/state_snapshot.h"
#include "server/views/wait_category.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_user_limits_test {
namespace {

using nlohmann::json;

class ServerUserLimits : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    small_cluster();
    ASSERT_EQ(post("/v1/apply", json{{"teams", json::array({limited_team(1, 2)})}}).status, 200);
    auto t = post("/v1/tokens", json{{"role", "member"}, {"teams", {"a"}}, {"user", "alice"}});
    ASSERT_EQ(t.status, 201) << t.body;
    EXPECT_EQ(t.json["user"], "alice");
    alice_token_ = t.json["token"].get<std::string>();
  }
  // Team a of small_cluster() with alice limited to `running` running and `pending` waiting jobs.
  static json limited_team(int running, int pending) {
    return {{"name", "a"},
            {"allocation", json::array({{{"instance_type", "ml.g5.8xlarge"}, {"instances", 2}}})},
            {"user_limits", json::array({{{"user", "alice"}, {"running_jobs", running}, {"pending_jobs", pending}}})}};
  }
  // POST as alice's token.
  Response as_alice(const std::string& path, const json& body) { return post_as(alice_token_, path, body); }
  json job_of(const std::string& name) { return get("/v1/jobs/" + name).json; }
  std::string alice_token_;
};

TEST_F(ServerUserLimits, AJobWaitsForItsUsersLimitAndStartsWhenAnotherOfTheSameUserEnds) {
  auto first = as_alice("/v1/jobs", job("u1"));
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.json["user"], "alice") << "the job carries its token's user";
  ASSERT_EQ(as_alice("/v1/jobs", job("u2")).status, 201);
  EXPECT_EQ(job_of("u1")["state"], "Running");
  json u2 = job_of("u2");
  EXPECT_EQ(u2["state"], "Pending");
  EXPECT_EQ(u2["reason_code"], "user_limit");
  EXPECT_EQ(u2["reason"], "waiting: user alice of team a has 1 running job, at its limit of 1 (running_jobs)");
  EXPECT_EQ(wait_category(ReasonCode::kUserLimit, true), WaitCategory::kUserLimit);
  auto queue = get("/v1/dashboard/queue");
  EXPECT_NE(queue.body.find("\"category\":\"user_limit\""), std::string::npos) << queue.body;
  // Another user's job (the admin token has none) runs on the free node although u2 came first.
  ASSERT_EQ(post("/v1/jobs", job("other")).status, 201);
  EXPECT_EQ(job_of("other")["state"], "Running");
  EXPECT_FALSE(job_of("other").contains("user"));
  // Per-user metrics.
  auto metrics = get("/metrics");
  EXPECT_NE(metrics.body.find("allot_user_jobs{team=\"a\",user=\"alice\",state=\"running\"} 1"), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find("allot_user_jobs{team=\"a\",user=\"alice\",state=\"waiting\"} 1"), std::string::npos);
  // u1 ends: u2 starts (other's node frees nothing; u1's does).
  ASSERT_EQ(post("/v1/jobs/u1/cancel").status, 200);
  EXPECT_EQ(job_of("u2")["state"], "Running") << job_of("u2").dump();
  // The audit trail names the user.
  auto audit = get("/v1/audit?limit=100");
  bool named = false;
  for (const auto& e : audit.json) named |= e.value("target", "") == "u1" && e.value("user", "") == "alice";
  EXPECT_TRUE(named) << audit.body;
}

TEST_F(ServerUserLimits, ASubmissionPastPendingJobsIsRefusedNamingTheLimit) {
  ASSERT_EQ(as_alice("/v1/jobs", job("p1")).status, 201);  // runs
  ASSERT_EQ(as_alice("/v1/jobs", job("p2")).status, 201);  // waits (running_jobs 1)
  ASSERT_EQ(as_alice("/v1/jobs", job("p3")).status, 201);  // waits: 2 waiting, the limit
  auto refused = as_alice("/v1/jobs", job("p4"));
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("user alice of team a has 2 waiting jobs, at its limit of 2 (user_limits pending_jobs)"), std::string::npos)
      << refused.body;
  EXPECT_EQ(get("/v1/jobs/p4").status, 404);
  // The same through a dry run, and for a batch: refused, nothing submitted.
  EXPECT_EQ(as_alice("/v1/jobs?dry_run=true", job("p4")).status, 409);
  EXPECT_EQ(as_alice("/v1/jobs", json{{"jobs", json::array({job("p5"), job("p6")})}}).status, 409);
  EXPECT_EQ(get("/v1/jobs/p5").status, 404);
}

TEST_F(ServerUserLimits, AJobSpecMayNameOnlyItsTokensUser) {
  json spec = job("imp");
  spec["user"] = "bob";
  auto denied = as_alice("/v1/jobs", spec);
  EXPECT_EQ(denied.status, 403) << denied.body;
  EXPECT_NE(denied.body.find("this token's user is alice"), std::string::npos) << denied.body;
  spec["user"] = "alice";
  EXPECT_EQ(as_alice("/v1/jobs", spec).status, 201);
  // An admin may submit for any user; the limit applies to that user.
  json for_alice = job("by-admin");
  for_alice["user"] = "alice";
  ASSERT_EQ(post("/v1/jobs", for_alice).status, 201);
  EXPECT_EQ(job_of("by-admin")["reason_code"], "user_limit");
  // Bad input.
  EXPECT_EQ(post("/v1/tokens", json{{"role", "agent-join"}, {"user", "x"}}).status, 400);
  auto bad_name = post("/v1/tokens", json{{"role", "viewer"}, {"user", "a b"}});
  EXPECT_EQ(bad_name.status, 400);
  EXPECT_NE(bad_name.body.find("user name 'a b' is not allowed"), std::string::npos) << bad_name.body;
  auto bad_team = post("/v1/apply", json{{"teams", json::array({{{"name", "a"}, {"user_limits", json::array({{{"user", "alice"}}})}}})}});
  EXPECT_EQ(bad_team.status, 400) << bad_team.body;
  EXPECT_NE(bad_team.body.find("sets no limit"), std::string::npos) << bad_team.body;
  EXPECT_EQ(get("/v1/teams").json[0]["user_limits"][0]["running_jobs"], 1) << "the refused change changed nothing";
}

TEST_F(ServerUserLimits, LimitsAndUsersSurviveARestartFromTheJournalAndFromASnapshot) {
  ASSERT_EQ(as_alice("/v1/jobs", job("r1")).status, 201);
  ASSERT_EQ(as_alice("/v1/jobs", job("r2")).status, 201);
  const json team_before = get("/v1/teams").json;
  restart();
  EXPECT_EQ(get("/v1/teams").json, team_before);
  EXPECT_EQ(job_of("r2")["reason_code"], "user_limit");
  EXPECT_EQ(job_of("r1")["user"], "alice");
  // From a snapshot of the same journal.
  stop();
  ServerState live;
  std::vector<Event> events;
  for (const auto& r : journal_->records()) ASSERT_TRUE(apply(live, r, events).ok()) << r.seq;
  auto fresh = std::make_shared<store::MemStore>();
  ASSERT_TRUE(fresh->append(journal_->records()).ok());
  ASSERT_TRUE(fresh->put_snapshot(journal_->records().back().seq, encode_state_snapshot(live, events)).ok());
  journal_ = fresh;
  start();
  EXPECT_EQ(server_->stats().snapshots_refused, 0u);
  EXPECT_EQ(get("/v1/teams").json, team_before);
  EXPECT_EQ(job_of("r2")["user"], "alice");
  ASSERT_EQ(post("/v1/jobs/r1/cancel").status, 200);
  EXPECT_EQ(job_of("r2")["state"], "Running") << "the restored limit still counts r2's user";
}

// The server dies (or its disk fails) between a limit change and its journal write: the change was never
// acknowledged, and it is not in effect, neither at once (the state is rebuilt from the journal) nor after a
// restart. The change acknowledged before it is kept.
TEST_F(ServerUserLimits, ALimitChangeWhoseJournalWriteFailsIsNotInEffect) {
  journal_->fail_next_appends(1);
  auto failed = post("/v1/apply", json{{"teams", json::array({limited_team(5, 5)})}});
  EXPECT_GE(failed.status, 500) << failed.body;
  EXPECT_EQ(get("/v1/teams").json[0]["user_limits"][0]["running_jobs"], 1);
  restart();
  EXPECT_EQ(get("/v1/teams").json[0]["user_limits"][0]["running_jobs"], 1);
  ASSERT_EQ(as_alice("/v1/jobs", job("f1")).status, 201);
  ASSERT_EQ(as_alice("/v1/jobs", job("f2")).status, 201);
  EXPECT_EQ(job_of("f2")["reason_code"], "user_limit") << "the acknowledged limit of 1 holds";
  // Raised for good: f2 runs at the pass that follows, and after a restart the limit is still 2.
  ASSERT_EQ(post("/v1/apply", json{{"teams", json::array({limited_team(2, 2)})}}).status, 200);
  EXPECT_EQ(job_of("f2")["state"], "Running");
  restart();
  EXPECT_EQ(get("/v1/teams").json[0]["user_limits"][0]["running_jobs"], 2);
}

}  // namespace
}  // namespace allot::server::test::server_user_limits_test
