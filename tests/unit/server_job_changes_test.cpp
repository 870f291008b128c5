// The endpoints that change submitted jobs (api_job_changes.cpp): hold and release, a new priority class,
// deletion of a finished job; labels and selectors on listings. Each change is journaled: a restart replays it.
#include "server_test_fixture.h"

namespace allot::server::test::server_job_changes_test {
namespace {

using nlohmann::json;
using ServerJobChanges = ServerTest;

TEST_F(ServerJobChanges, HoldReleaseAndPriorityAreJournaled) {
  small_cluster();
  // Team a has both nodes: two one-GPU jobs run, the third and fourth wait.
  for (const char* n : {"r1", "r2", "w1", "w2"}) ASSERT_EQ(post("/v1/jobs", job(n)).status, 201);
  auto held = post("/v1/jobs/w1/hold");
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_EQ(held.json["held"], true);
  EXPECT_EQ(held.json["reason_code"], "held");
  EXPECT_EQ(post("/v1/jobs/w1/hold").status, 409) << "already held";
  EXPECT_EQ(post("/v1/jobs/r1/hold").status, 409) << "a running job cannot be held";
  EXPECT_EQ(post("/v1/jobs/w2/release").status, 409) << "not held";
  EXPECT_EQ(post("/v1/jobs/nope/hold").status, 404);

  EXPECT_EQ(put("/v1/jobs/w2/priority", R"({"priority": "urgent"})").status, 400);
  EXPECT_EQ(put("/v1/jobs/w2/priority", R"({"class": "high"})").status, 400);
  // (A higher class may get w2 admitted, after which its priority cannot change: the bad requests go first.)
  auto prio = put("/v1/jobs/w2/priority", R"({"priority": "high"})");
  ASSERT_EQ(prio.status, 200) << prio.body;
  EXPECT_EQ(prio.json["priority"], "high");
  EXPECT_EQ(put("/v1/jobs/r1/priority", R"({"priority": "low"})").status, 409);

  // A node frees: the held job is passed over, the other waiting job runs.
  ASSERT_EQ(post("/v1/jobs/r1/cancel").status, 200);
  EXPECT_EQ(get("/v1/jobs/w2").json["state"], "Running");
  ASSERT_EQ(post("/v1/jobs/r2/cancel").status, 200);
  EXPECT_EQ(get("/v1/jobs/w1").json["state"], "Pending") << "held, though a node is free";

  restart();
  auto after = get("/v1/jobs/w1");
  EXPECT_EQ(after.json["held"], true) << "the hold survives a restart";
  EXPECT_EQ(get("/v1/jobs/w2").json["priority"], "high");
  ASSERT_EQ(post("/v1/jobs/w1/release").status, 200);
  EXPECT_TRUE(eventually([&] { return get("/v1/jobs/w1").json["state"] == "Running"; }));
}

TEST_F(ServerJobChanges, DeleteFreesTheNameAndSurvivesRestart) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("j1")).status, 201);
  auto active = del("/v1/jobs/j1");
  EXPECT_EQ(active.status, 409);
  EXPECT_NE(active.body.find("cancel it first"), std::string::npos) << active.body;
  ASSERT_EQ(post("/v1/jobs/j1/cancel").status, 200);
  auto gone = del("/v1/jobs/j1");
  ASSERT_EQ(gone.status, 200) << gone.body;
  EXPECT_EQ(gone.json["state"], "Cancelled");
  EXPECT_EQ(get("/v1/jobs/j1").status, 404);
  EXPECT_EQ(list_jobs().size(), 0u) << "listings skip deleted jobs";
  EXPECT_EQ(del("/v1/jobs/j1").status, 404);
  // The name again, with other labels: a new job.
  json again = job("j1");
  again["labels"] = {{"app", "llm"}};
  ASSERT_EQ(post("/v1/jobs", again).status, 201);
  restart();
  auto j = get("/v1/jobs/j1");
  ASSERT_EQ(j.status, 200);
  EXPECT_EQ(j.json["labels"]["app"], "llm");
  EXPECT_EQ(j.json["history"].size(), 2u) << "submitted, then admitted: the old job's history is not the new one's";
  EXPECT_EQ(list_jobs().size(), 1u);
}

// A deletion's logs go only once the journal holds it: when the write fails, the job is rebuilt from the
// journal, and its logs are still there with it.
TEST_F(ServerJobChanges, AFailedDeleteKeepsTheLogs) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("j1")).status, 201);
  auto running = get("/v1/jobs/j1");
  ASSERT_EQ(running.json["state"], "Running") << running.body;
  const std::string node = running.json["placement"][0]["replicas"][0]["node"];
  ASSERT_EQ(post("/v1/agents/" + node + "/logs", json{{"job", "j1"}, {"rank", 0}, {"data", "step 1\n"}}).status, 204);
  ASSERT_EQ(post("/v1/jobs/j1/cancel").status, 200);

  journal_->fail_next_appends(1, "injected: disk full");
  auto failed = del("/v1/jobs/j1");
  EXPECT_EQ(failed.status, 500) << failed.body;
  ASSERT_EQ(get("/v1/jobs/j1").status, 200) << "the job is rebuilt from the journal";
  EXPECT_EQ(get("/v1/jobs/j1/logs").body, "step 1\n") << "a deletion that was not journaled took the logs";

  ASSERT_EQ(del("/v1/jobs/j1").status, 200);
  ASSERT_EQ(post("/v1/jobs", job("j1")).status, 201);
  EXPECT_EQ(get("/v1/jobs/j1/logs").body, "") << "a journaled deletion takes the logs: the new job starts with none";
}

TEST_F(ServerJobChanges, SelectorsPickJobsByLabel) {
  small_cluster();
  auto with = [](const std::string& name, json labels) {
    json j = job(name);
    j["labels"] = std::move(labels);
    return j;
  };
  ASSERT_EQ(post("/v1/jobs", with("a1", {{"app", "llm"}, {"stage", "sft"}})).status, 201);
  ASSERT_EQ(post("/v1/jobs", with("a2", {{"app", "llm"}, {"stage", "eval"}})).status, 201);
  ASSERT_EQ(post("/v1/jobs", with("b1", {{"app", "vision"}})).status, 201);
  EXPECT_EQ(list_jobs("selector=app%3Dllm").size(), 2u);
  auto sft = list_jobs("selector=app%3Dllm%2Cstage%21%3Deval");
  ASSERT_EQ(sft.size(), 1u);
  EXPECT_EQ(sft[0]["name"], "a1");
  auto bad = get("/v1/jobs?selector=app");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("is not key=value"), std::string::npos) << bad.body;
  auto bad_label = post("/v1/jobs", with("c1", {{"-x", "y"}}));
  EXPECT_EQ(bad_label.status, 400);
  EXPECT_NE(bad_label.body.find("label key '-x'"), std::string::npos) << bad_label.body;
}

TEST_F(ServerJobChanges, DeletedPriorityClassShowsOnOldJobs) {
  small_cluster();
  json j = job("old");
  j["priority"] = "high";
  ASSERT_EQ(post("/v1/jobs", j).status, 201);
  EXPECT_EQ(get("/v1/jobs/old").json["priority_class_deleted"], false);
  ASSERT_EQ(post("/v1/jobs/old/cancel").status, 200);
  ASSERT_EQ(del("/v1/priority-classes/high").status, 204);
  auto after = get("/v1/jobs/old");
  EXPECT_EQ(after.json["priority"], "high");
  EXPECT_EQ(after.json["priority_class_deleted"], true);
}

TEST_F(ServerJobChanges, MembersChangeOnlyTheirTeamsJobs) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("a1")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("a2")).status, 201);
  ASSERT_EQ(post("/v1/jobs", job("a3")).status, 201);
  const std::string member = bearer({{"role", "member"}, {"teams", {"b"}}});
  // Another team's job is answered as a missing one (no 403-versus-404 oracle); the audit trail keeps the 403.
  auto hold = post_as(member, "/v1/jobs/a3/hold");
  EXPECT_EQ(hold.status, 404);
  auto missing = post_as(member, "/v1/jobs/z3/hold");
  std::string expected = missing.body;
  expected.replace(expected.find("z3"), 2, "a3");
  EXPECT_EQ(hold.body, expected);
  EXPECT_EQ(wrap(client_as(member)->Put("/v1/jobs/a3/priority", R"({"priority": "high"})", "application/json")).status, 404);
  ASSERT_EQ(post("/v1/jobs/a1/cancel").status, 200);
  EXPECT_EQ(del_as(member, "/v1/jobs/a1").status, 404);
  EXPECT_EQ(get("/v1/jobs/a1").status, 200) << "a refused deletion changes nothing";
  EXPECT_FALSE(get("/v1/jobs/a3").json.contains("held"));
  bool audited = false;
  for (const auto& e : get("/v1/audit").json)
    audited |= e["action"] == "POST /v1/jobs/a3/hold" && e["status"] == 403 && e["target"] == "a3" && e["role"] == "member";
  EXPECT_TRUE(audited) << get("/v1/audit").body;
}

}  // namespace
}  // namespace allot::server::test::server_job_changes_test
