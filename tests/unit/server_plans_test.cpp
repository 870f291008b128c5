// Capacity plans in the server (api_plans.cpp, plan_steps.cpp, docs/plans.md): who may create, read and delete
// them; the writer steps a plan through its states as the clock passes its times; its nodes join only while it
// is Active, and an agent cannot move a node into a plan; jobs wait for their plan; a restart replays it all.
#include "server_test_fixture.h"
#include "view/times.h"

namespace allot::server::test::server_plans_test {
namespace {

using nlohmann::json;
using ServerPlans = ServerTest;

// The fixture's clock in Unix seconds.
int64_t seconds(int64_t ms) { return ms / 1000; }

json plan(const std::string& name, int64_t start, int64_t end, int64_t grace = 0, const std::string& team = "a", int count = 1) {
  json p = {{"name", name}, {"instance_type", "ml.g5.8xlarge"}, {"count", count}, {"start", start}, {"end", end}, {"grace", grace}};
  if (!team.empty()) p["team"] = team;
  return p;
}

json plan_node(const std::string& name, const std::string& plan) {
  return {{"name", name}, {"instance_type", "ml.g5.8xlarge"}, {"address", "127.0.0.1"}, {"labels", {{"allot.dev/plan", plan}}}};
}

TEST_F(ServerPlans, OnlyAnAdminCreatesOrDeletesPlansAndEveryReaderListsThem) {
  small_cluster();
  const int64_t now = seconds(now_ms_);
  ASSERT_EQ(post("/v1/plans", plan("burst", now + 100, now + 1000)).status, 201);
  for (const char* role : {"member", "viewer"}) {
    SCOPED_TRACE(role);
    const std::string as = bearer({{"role", role}, {"teams", {"a"}}});
    EXPECT_EQ(post_as(as, "/v1/plans", plan("mine", now + 100, now + 1000)).status, 403);
    EXPECT_EQ(del_as(as, "/v1/plans/burst").status, 403);
    auto list = get_as(as, "/v1/plans");
    ASSERT_EQ(list.status, 200) << list.body;
    ASSERT_EQ(list.json.size(), 1u);
    EXPECT_EQ(list.json[0]["name"], "burst");
    EXPECT_EQ(list.json[0]["state"], "Scheduled");
    EXPECT_EQ(get_as(as, "/v1/plans/burst").status, 200);
  }
  EXPECT_EQ(get("/v1/plans/mine").status, 404) << "a refused creation changes nothing";
  EXPECT_EQ(get("/v1/plans/burst").status, 200) << "a refused deletion changes nothing";
  EXPECT_EQ(del("/v1/plans/burst").status, 204);
  EXPECT_EQ(get("/v1/plans/burst").status, 404);
  EXPECT_EQ(del("/v1/plans/burst").status, 404);
}

// A plan lists the active jobs that name it; a member sees its own teams' job names there and another team's
// job only as "a job of team B" (docs/security.md, "No oracle").
TEST_F(ServerPlans, MembersSeeOnlyTheirOwnTeamsJobNamesInPlans) {
  small_cluster();
  const int64_t now = seconds(now_ms_);
  ASSERT_EQ(post("/v1/plans", plan("shared", now + 100, now + 1000, 0, "")).status, 201);
  for (const auto& [name, team] : {std::pair{"plan-job-a", "a"}, std::pair{"secret-plan-job-b", "b"}}) {
    json j = job(name, team);
    j["plan"] = "shared";
    ASSERT_EQ(post("/v1/jobs", j).status, 201);
  }
  EXPECT_EQ(get("/v1/plans/shared").json["jobs"], json({"plan-job-a", "secret-plan-job-b"})) << "an admin sees every name";
  const std::string member = bearer({{"role", "member"}, {"teams", {"a"}}});
  for (const char* path : {"/v1/plans", "/v1/plans/shared"}) {
    SCOPED_TRACE(path);
    auto r = get_as(member, path);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body.find("secret-plan-job-b"), std::string::npos) << r.body;
    const json& p = r.json.is_array() ? r.json[0] : r.json;
    EXPECT_EQ(p["jobs"], json({"plan-job-a", "a job of team b"})) << r.body;
  }
}

TEST_F(ServerPlans, BadPlansAreRefusedWithWhatIsWrong) {
  small_cluster();
  const int64_t now = seconds(now_ms_);
  auto past = post("/v1/plans", plan("past", now - 1000, now - 10));
  EXPECT_EQ(past.status, 400);
  EXPECT_NE(past.body.find("has passed"), std::string::npos) << past.body;
  auto team = post("/v1/plans", plan("nobody", now + 10, now + 100, 0, "zz"));
  EXPECT_EQ(team.status, 400);
  EXPECT_NE(team.body.find("unknown team"), std::string::npos) << team.body;
  EXPECT_EQ(post("/v1/plans", plan("BadName", now + 10, now + 100)).status, 400);
  EXPECT_EQ(post("/v1/plans", plan("backwards", now + 100, now + 10)).status, 400);
  EXPECT_EQ(post("/v1/plans", plan("grace", now + 10, now + 100, 500)).status, 400);
  ASSERT_EQ(post("/v1/plans", plan("twice", now + 10, now + 100)).status, 201);
  EXPECT_EQ(post("/v1/plans", plan("twice", now + 10, now + 100)).status, 409);
  EXPECT_EQ(get("/v1/plans").json.size(), 1u);

  json j = job("on-nothing");
  j["plan"] = "nope";
  auto r = post("/v1/jobs", j);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("unknown plan 'nope'"), std::string::npos) << r.body;
}

TEST_F(ServerPlans, StartAndEndAreRfc3339TimesAndUnixSecondsAreStillTaken) {
  small_cluster();
  const int64_t now = seconds(now_ms_);
  json p = plan("dated", 0, 0);
  p["start"] = view::rfc3339(now + 100);
  p["end"] = view::rfc3339(now + 1000);
  ASSERT_EQ(post("/v1/plans", p).status, 201);
  auto got = get("/v1/plans/dated").json;
  EXPECT_EQ(got["start"], view::rfc3339(now + 100)) << got.dump();
  EXPECT_EQ(got["end"], view::rfc3339(now + 1000));
  // What a client before RFC 3339 times sent: Unix seconds; listed as RFC 3339 all the same.
  ASSERT_EQ(post("/v1/plans", plan("numbered", now + 100, now + 1000)).status, 201);
  EXPECT_EQ(get("/v1/plans/numbered").json["end"], view::rfc3339(now + 1000));
  // Neither: refused, naming the field and the forms taken; nothing is created.
  p = plan("garbled", 0, now + 1000);
  p["start"] = "next tuesday";
  auto bad = post("/v1/plans", p);
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("start"), std::string::npos) << bad.body;
  EXPECT_NE(bad.body.find("RFC 3339"), std::string::npos) << bad.body;
  EXPECT_EQ(get("/v1/plans/garbled").status, 404);
}

TEST_F(ServerPlans, APlanStepsWithTheClockAndItsNodesJoinOnlyWhileActive) {
  small_cluster();
  const int64_t now = seconds(now_ms_);
  ASSERT_EQ(post("/v1/plans", plan("burst", now + 10, now + 100, 20)).status, 201);
  json j = job("on-plan");
  j["plan"] = "burst";
  ASSERT_EQ(post("/v1/jobs", j).status, 201);
  EXPECT_EQ(get("/v1/jobs/on-plan").json["reason_code"], "plan_pending");

  // Before the start the plan's agent is refused, with the reason (as data) an agent started early waits on.
  auto early = post("/v1/agents/register", plan_node("burst-1", "burst"));
  EXPECT_EQ(early.status, 409);
  EXPECT_NE(early.body.find("has not started yet"), std::string::npos) << early.body;
  EXPECT_EQ(nlohmann::json::parse(early.body)["error"].value("reason", ""), "plan_not_started") << early.body;
  // A node already in the cluster cannot be moved into the plan by its agent.
  auto moved = post("/v1/agents/register", plan_node("n1", "burst"));
  EXPECT_EQ(moved.status, 409) << moved.body;

  advance(std::chrono::seconds(10));
  ASSERT_TRUE(eventually([&] { return get("/v1/plans/burst").json["state"] == "Active"; }));
  EXPECT_EQ(get("/v1/teams/a").json["nominal"]["accelerators"], 3) << get("/v1/teams/a").body;
  EXPECT_EQ(get("/v1/jobs/on-plan").json["reason_code"], "plan_pending") << "its node has not joined";
  auto joined = post("/v1/agents/register", plan_node("burst-1", "burst"));
  ASSERT_EQ(joined.status, 200) << joined.body;
  // The plan reserves one node: a second is refused.
  EXPECT_EQ(post("/v1/agents/register", plan_node("burst-2", "burst")).status, 409);
  // Its own agent cannot take it out of the plan either.
  auto out = post("/v1/agents/register", json{{"name", "burst-1"}, {"instance_type", "ml.g5.8xlarge"}, {"address", "127.0.0.1"}});
  EXPECT_EQ(out.status, 409) << out.body;
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/on-plan").json["state"] == "Running"; }));
  EXPECT_EQ(get("/v1/jobs/on-plan").json["placement"][0]["replicas"][0]["node"], "burst-1");

  advance(std::chrono::seconds(70));  // end - grace
  ASSERT_TRUE(eventually([&] { return get("/v1/plans/burst").json["state"] == "Ending"; }));
  auto suspended = get("/v1/jobs/on-plan").json;
  EXPECT_EQ(suspended["state"], "Suspended");
  EXPECT_NE(suspended["reason"].get<std::string>().find("plan burst ends"), std::string::npos) << suspended.dump();
  EXPECT_EQ(get("/v1/teams/a").json["nominal"]["accelerators"], 2);

  advance(std::chrono::seconds(20));
  ASSERT_TRUE(eventually([&] { return get("/v1/plans/burst").json["state"] == "Expired"; }));
  EXPECT_EQ(get("/v1/nodes/burst-1").status, 404) << "the plan's node left";
  EXPECT_EQ(get("/v1/jobs/on-plan").json["reason_code"], "plan_ended");

  // A restart replays the steps as they were journaled.
  restart();
  EXPECT_EQ(get("/v1/plans/burst").json["state"], "Expired");
  EXPECT_EQ(get("/v1/nodes/burst-1").status, 404);
  EXPECT_EQ(get("/v1/jobs/on-plan").json["reason_code"], "plan_ended");
}

}  // namespace
}  // namespace allot::server::test::server_plans_test
