// GET /v1/usage (docs/api.md, "Usage") on a running server: the figures per team and user (the submitting token),
// what each role may see, the checks on the query, and a restart that answers the same report.
#include "server_test_fixture.h"

namespace allot::server::test::server_usage_api_test {
namespace {

class UsageApi : public ServerTest {
 protected:
  // A token of `role` for `team`; returns (id, bearer).
  std::pair<std::string, std::string> token(const std::string& role, const std::string& team) {
    auto r = post("/v1/tokens", nlohmann::json{{"role", role}, {"teams", {team}}});
    EXPECT_EQ(r.status, 201) << r.body;
    return {r.json["id"].get<std::string>(), r.json["token"].get<std::string>()};
  }
  static const nlohmann::json* row(const nlohmann::json& report, const std::string& team, const std::string& user) {
    for (const auto& r : report["rows"])
      if (r.value("team", "") == team && r.value("user", "") == user) return &r;
    return nullptr;
  }
};

TEST_F(UsageApi, FiguresPerTeamAndUserAndWhoSeesThem) {
  // Teams a and b hold two GPUs each (each may borrow one more); four nodes of one GPU.
  auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 2}]},
                                           {"name": "b", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 2}]}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  r = post("/v1/nodes", R"([{"name": "n[1-4]", "instance_type": "ml.g5.8xlarge"}])");
  ASSERT_EQ(r.status, 201) << r.body;
  const auto [alice, alice_bearer] = token("member", "a");
  const auto [bob, bob_bearer] = token("member", "b");
  const auto viewer = token("viewer", "a").second;
  ASSERT_EQ(post_as(alice_bearer, "/v1/jobs", job("a-1", "a", 3)).status, 201);  // three GPUs: one borrowed from b
  advance(std::chrono::hours(2));
  ASSERT_EQ(post_as(bob_bearer, "/v1/jobs", job("b-1", "b", 2)).status, 201);  // b reclaims: a-1 is preempted
  advance(std::chrono::hours(1));

  const auto admin = get("/v1/usage?since=1d&by=team,user");
  ASSERT_EQ(admin.status, 200) << admin.body;
  const auto* a = row(admin.json, "a", alice);
  ASSERT_TRUE(a) << admin.body;
  EXPECT_EQ((*a)["used_s"], 3 * 7200);
  EXPECT_EQ((*a)["admitted"], 1);
  const auto* b = row(admin.json, "b", bob);
  ASSERT_TRUE(b) << admin.body;
  EXPECT_EQ((*b)["used_s"], 2 * 3600);
  const auto* a_team = row(admin.json, "a", "(team)");
  ASSERT_TRUE(a_team) << admin.body;
  EXPECT_EQ((*a_team)["borrowed_s"], 7200);
  EXPECT_EQ((*row(admin.json, "b", "(team)"))["lent_s"], 7200);
  EXPECT_EQ(admin.json["total"]["used_s"], 3 * 7200 + 2 * 3600);

  // A viewer reads every team, a member its own only: never the other team's users.
  EXPECT_EQ(get_as(viewer, "/v1/usage?since=1d&by=team,user").json, admin.json);
  const auto mine = get_as(bob_bearer, "/v1/usage?since=1d&by=team,user");
  ASSERT_EQ(mine.status, 200) << mine.body;
  for (const auto& r : mine.json["rows"]) EXPECT_EQ(r["team"], "b") << mine.body;
  EXPECT_EQ(mine.body.find(alice), std::string::npos) << mine.body;
  EXPECT_EQ(mine.json["total"]["used_s"], 2 * 3600);
  // Agents and join tokens may not read it.
  EXPECT_EQ(get_as(join_token_, "/v1/usage").status, 403);

  // Grouped by team only (the default): one row per team.
  const auto by_team = get("/v1/usage?since=1d");
  ASSERT_EQ(by_team.status, 200);
  ASSERT_EQ(by_team.json["rows"].size(), 2u) << by_team.body;
  EXPECT_FALSE(by_team.json["rows"][0].contains("user"));

  // A restart rebuilds the same aggregates from the journal.
  restart();
  EXPECT_EQ(get("/v1/usage?since=1d&by=team,user").json, admin.json);
}

TEST_F(UsageApi, BadQueriesAreRefusedWithTheReason) {
  struct Case {
    const char* query;
    const char* says;
  } cases[] = {
      {"by=team,project", "unknown key 'project'"},
      {"by=team,team", "listed twice"},
      {"by=", "by: empty"},
      {"since=30x", "neither a duration"},
      {"since=yesterday", "neither a duration"},
      {"until=2d&since=3d&by=user,,team", "unknown key ''"},
      {"since=1d&until=2d", "is not before until"},
  };
  for (const auto& c : cases) {
    const auto r = get(std::string("/v1/usage?") + c.query);
    EXPECT_EQ(r.status, 400) << c.query << ": " << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << c.query << ": " << r.body;
  }
  EXPECT_EQ(get("/v1/usage?since=2026-11-01T00:00:00Z&until=2026-11-02T00:00:00Z&by=instance_type,priority").status, 200);
}

}  // namespace
}  // namespace allot::server::test::server_usage_api_test
