// Preemption records through the server: the journal carries each group, GET /v1/events shows it as an object
// on the victim's event, GET /v1/jobs/NAME on the victim and the preemptor, a restart rebuilds both, and a
// member never reads the job names of a team it is not in.
#include "server_test_fixture.h"

namespace allot::server::test::server_preemption_test {
namespace {

class ServerPreemption : public ServerTest {
 protected:
  // Teams a and b of one g5.8xlarge each, both lending and borrowing all of it; b runs two jobs, borrowing
  // a's instance, until a submits one and reclaims it.
  void reclaim() {
    auto r = post("/v1/apply", R"({"teams": [
        {"name": "a", "fair_share_weight": 10, "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
         "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}},
        {"name": "b", "fair_share_weight": 10, "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}],
         "sharing": {"strategy": "LendAndBorrow", "borrow_limit": 100}}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(post("/v1/nodes", R"([{"name": "n[1-2]", "instance_type": "ml.g5.8xlarge"}])").status, 201);
    ASSERT_EQ(post("/v1/jobs", job("b-1", "b")).status, 201);
    ASSERT_EQ(post("/v1/jobs", job("b-2", "b")).status, 201);
    ASSERT_TRUE(eventually([&] { return get("/v1/jobs/b-2").json["state"] == "Running"; }));
    ASSERT_EQ(post("/v1/jobs", job("a-1", "a")).status, 201);
    ASSERT_TRUE(eventually([&] { return get("/v1/jobs/a-1").json["state"] == "Running"; }));
  }
  std::string token_of(const std::string& team) { return bearer({{"role", "member"}, {"teams", {team}}}); }
  static nlohmann::json preempt_event(const nlohmann::json& events) {
    for (const auto& e : events["events"])
      if (e["kind"] == "preempt") return e;
    return nullptr;
  }
};

TEST_F(ServerPreemption, TheVictimsEventCarriesTheGroupWithTeamsFigures) {
  reclaim();
  const nlohmann::json e = preempt_event(get("/v1/events?since=0").json);
  ASSERT_TRUE(e.is_object());
  EXPECT_EQ(e["job"], "b-2");
  const nlohmann::json& p = e["preemption"];
  EXPECT_EQ(p["preemptor"], "a-1");
  EXPECT_EQ(p["preemptor_team"], "a");
  EXPECT_EQ(p["rules"], nlohmann::json::array({"reclaim"}));
  EXPECT_EQ(p["victims"], nlohmann::json::parse(R"([{"job": "b-2", "team": "b", "rule": "reclaim"}])"));
  ASSERT_EQ(p["teams"].size(), 2u);
  const nlohmann::json& b = p["teams"][1];
  EXPECT_EQ(b["team"], "b");
  EXPECT_EQ(b["share_before"], 0.05);  // borrowed 1 of a pool of 2, weight 10
  EXPECT_EQ(b["share_after"], 0.0);
  const nlohmann::json& g5 = b["types"][0];
  EXPECT_EQ(g5["instance_type"], "ml.g5.8xlarge");
  EXPECT_EQ(g5["usage_before"], nlohmann::json::parse(R"({"accelerators": 2, "vcpu": 64, "memory_gib": 256})"));
  EXPECT_EQ(g5["usage_after"]["accelerators"], 1);
  EXPECT_EQ(g5["borrowed_before"]["accelerators"], 1);
  EXPECT_EQ(g5["borrowed_after"]["accelerators"], 0);
  EXPECT_EQ(p["teams"][0]["types"][0]["usage_after"]["accelerators"], 1);  // a-1 runs

  auto m = get("/metrics").body;
  // Counted under the victim's team and the instance type its run held.
  EXPECT_NE(m.find("allot_preemptions_by_rule_total{rule=\"reclaim\",team=\"b\",instance_type=\"ml.g5.8xlarge\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("allot_preemptions_by_rule_total{rule=\"reclaim\",team=\"a\",instance_type=\"ml.g5.8xlarge\"} 0"), std::string::npos) << m;
  EXPECT_EQ(m.find("rule=\"unrecorded\""), std::string::npos) << m;
}

TEST_F(ServerPreemption, DescribeShowsTheVictimWhoAndThePreemptorItsVictimsAfterARestartToo) {
  reclaim();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "live" : "after a restart");
    auto victim = get("/v1/jobs/b-2").json;
    ASSERT_EQ(victim["preemption_records"].size(), 1u) << victim.dump();
    EXPECT_EQ(victim["preemption_records"][0]["as"], "victim");
    EXPECT_EQ(victim["preemption_records"][0]["preemptor"], "a-1");
    auto preemptor = get("/v1/jobs/a-1").json;
    ASSERT_EQ(preemptor["preemption_records"].size(), 1u) << preemptor.dump();
    EXPECT_EQ(preemptor["preemption_records"][0]["as"], "preemptor");
    EXPECT_EQ(preemptor["preemption_records"][0]["victims"][0]["job"], "b-2");
    EXPECT_EQ(victim["preemption_records"][0]["at"], preemptor["preemption_records"][0]["at"]);
    EXPECT_EQ(get("/v1/jobs/b-1").json["preemption_records"], nlohmann::json::array());
    if (round == 0) restart();
  }
}

// Cohort trees (docs/scheduling.md, "Cohort trees"): a (group x) and b (group y) meet at the top of the cohort,
// so fair-sharing preemption compares groups x and y. The victim's reason names them and quotes their shares, and
// the record's `groups` carries those shares through the event, describe and a restart (the journal keeps them).
// z lends 2 of the 4 nodes; b runs 3 (borrowing 2: y's share 2/4), a its 1; a-2 borrows 1 and takes one of b's
// (x after admission 1/4, y after losing it 1/4: LessThanOrEqualToFinalShare).
TEST_F(ServerPreemption, AFairShareVictimAcrossGroupsNamesTheGroupsAndTheRecordKeepsTheirShares) {
  auto r = post("/v1/apply", R"({"policy": {"idle_compute": "fair-share", "fair_share_preemption": true, "groups": [{"name": "x"}, {"name": "y"}]},
      "teams": [
        {"name": "a", "group": "x", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}], "sharing": {"borrow_limit": 300}},
        {"name": "b", "group": "y", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 1}], "sharing": {"borrow_limit": 300}},
        {"name": "z", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 2}], "sharing": {"strategy": "Lend"}}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(post("/v1/nodes", R"([{"name": "n[1-4]", "instance_type": "ml.g5.8xlarge"}])").status, 201);
  for (const char* name : {"a-1", "b-1", "b-2", "b-3"}) {
    ASSERT_EQ(post("/v1/jobs", job(name, std::string(1, name[0]))).status, 201);
    ASSERT_TRUE(eventually([&] { return get(std::string("/v1/jobs/") + name).json["state"] == "Running"; })) << name;
  }
  ASSERT_EQ(post("/v1/jobs", job("a-2", "a")).status, 201);
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/a-2").json["state"] == "Running"; })) << get("/v1/jobs/a-2").body;
  const nlohmann::json e = preempt_event(get("/v1/events?since=0").json);
  ASSERT_TRUE(e.is_object());
  const std::string victim = e["job"];
  const nlohmann::json groups = nlohmann::json::parse(R"([{"group": "x", "share_before": 0.0, "share_after": 0.25},
                                                          {"group": "y", "share_before": 0.5, "share_after": 0.25}])");
  EXPECT_EQ(e["preemption"]["groups"], groups) << e.dump();
  EXPECT_EQ(e["preemption"]["victims"][0]["rule"], "fair_share");
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "live" : "after a restart");
    auto v = get("/v1/jobs/" + victim).json;
    EXPECT_NE(v["history"].dump().find("preempted (fair share): group y is above its fair share; job a-2 of team a takes its place by "
                                       "LessThanOrEqualToFinalShare (teams a and b meet at the top of the cohort, so group x and group y "
                                       "are compared: group x's share after admission is at most group y's after); shares: group x (team "
                                       "a's) 0.000 -> 0.250, group y (team b's) 0.500 -> 0.250"),
              std::string::npos)
        << v.dump();
    ASSERT_EQ(v["preemption_records"].size(), 1u) << v.dump();
    EXPECT_EQ(v["preemption_records"][0]["groups"], groups);
    if (round == 0) restart();
  }
}

// Members read their own teams' job names only (as GET /v1/jobs lists only theirs): in a record, another team's
// jobs appear with their team and rule and a null name. The teams' figures stay: /v1/teams shows them anyway.
TEST_F(ServerPreemption, MembersDoNotReadOtherTeamsJobNamesInARecord) {
  reclaim();
  const std::string a = token_of("a"), b = token_of("b");
  auto mine = get_as(a, "/v1/jobs/a-1");
  ASSERT_EQ(mine.status, 200) << mine.body;
  const nlohmann::json& rec = mine.json["preemption_records"][0];
  EXPECT_EQ(rec["preemptor"], "a-1");
  EXPECT_TRUE(rec["victims"][0]["job"].is_null()) << rec.dump();
  EXPECT_EQ(rec["victims"][0]["team"], "b");
  EXPECT_EQ(rec["victims"][0]["rule"], "reclaim");
  // Nor do the reason texts name it: not the admission's, nor its history's, nor the jobs list's, nor the events'.
  EXPECT_EQ(mine.body.find("b-2"), std::string::npos) << mine.body;
  EXPECT_NE(mine.json["reason"].get<std::string>().find("after preempting a job of team b"), std::string::npos) << mine.body;
  auto listed = get_as(a, "/v1/jobs");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.body.find("b-2"), std::string::npos) << listed.body;
  auto a_events = get_as(a, "/v1/events?since=0");
  EXPECT_EQ(a_events.body.find("b-2"), std::string::npos) << a_events.body;
  // Team a's member does not see b's event at all; b's member sees it without a's job name.
  EXPECT_TRUE(preempt_event(get_as(a, "/v1/events?since=0").json).is_null());
  const nlohmann::json e = preempt_event(get_as(b, "/v1/events?since=0").json);
  ASSERT_TRUE(e.is_object());
  EXPECT_TRUE(e["preemption"]["preemptor"].is_null()) << e.dump();
  EXPECT_EQ(e["preemption"]["preemptor_team"], "a");
  EXPECT_EQ(e["preemption"]["victims"][0]["job"], "b-2");
  EXPECT_EQ(e["message"], "preempted: preempted (reclaim): team a takes back its lent quota for a job of team a; team b was above "
                          "its nominal quota") << e.dump();
  auto victim = get_as(b, "/v1/jobs/b-2");
  EXPECT_TRUE(victim.json["preemption_records"][0]["preemptor"].is_null()) << victim.body;
  EXPECT_EQ(victim.body.find("a-1"), std::string::npos) << victim.body;  // reason and history included
  // Admins and viewers see every name.
  EXPECT_EQ(get("/v1/jobs/a-1").json["preemption_records"][0]["victims"][0]["job"], "b-2");
  EXPECT_NE(get("/v1/jobs/a-1").json["reason"].get<std::string>().find("after preempting job b-2 of team b"), std::string::npos);
  EXPECT_NE(get("/v1/jobs/b-2").body.find("for job a-1 of team a"), std::string::npos);
}

}  // namespace
}  // namespace allot::server::test::server_preemption_test
