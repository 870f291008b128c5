// Dependencies in the server (core/model/dependency.h; docs/jobs.md, "Dependencies"): a chain submitted over the API
// waits with reason `dependency`, a failure ends the job that needed a success (a journaled dependency_never record)
// and lets the one that needed an end run; another team's job is refused without saying whether it exists; a batch
// with a cycle is refused naming it; a restart (replay of the journal) keeps a waiting job waiting and the ending
// ended.
#include "server/views/wait_category.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_dependency_test {
namespace {

using nlohmann::json;

class ServerDependency : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 1}]},
                                             {"name": "b", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 1}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    auto reg = post("/v1/agents/register", json{{"name", "g1"}, {"instance_type", "ml.g5.12xlarge"}, {"address", "10.0.0.1"}});
    ASSERT_EQ(reg.status, 200) << reg.body;
  }
  static json spec(const std::string& name, const std::string& team, json after = nullptr) {
    json j = {{"name", name}, {"team", team}, {"per_replica", {{"accelerators", 1}}}, {"command", {"run"}}};
    if (!after.is_null()) j["after"] = std::move(after);
    return j;
  }
  // g1's agent reports the job's replica exited with `code` (the attempt its run list gave it).
  void exits(const std::string& job, int code) {
    auto hb = post("/v1/agents/g1/heartbeat", json{{"replicas", json::array()}});
    ASSERT_EQ(hb.status, 200) << hb.body;
    int attempt = -1;
    for (const auto& a : hb.json["run"])
      if (a["job"] == job) attempt = a["attempt"];
    ASSERT_GE(attempt, 0) << job << " is not in g1's run list: " << hb.body;
    auto r = post("/v1/agents/g1/heartbeat",
                  json{{"replicas", json::array({{{"job", job}, {"rank", 0}, {"state", "exited"}, {"exit_code", code}, {"attempt", attempt}}})}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  json job(const std::string& name) { return get("/v1/jobs/" + name).json; }
};

TEST_F(ServerDependency, AFailureEndsTheJobThatNeededASuccessAndRunsTheOneThatNeededAnEnd) {
  ASSERT_EQ(post("/v1/jobs", spec("prep", "a")).status, 201);
  auto train = post("/v1/jobs", spec("train", "a", json::array({{{"job", "prep"}, {"condition", "succeeded"}}})));
  ASSERT_EQ(train.status, 201) << train.body;
  ASSERT_EQ(post("/v1/jobs", spec("cleanup", "a", json::array({{{"job", "prep"}}}))).status, 201);
  EXPECT_EQ(job("prep")["state"], "Running");
  json t = job("train");
  EXPECT_EQ(t["state"], "Pending");
  EXPECT_EQ(t["reason_code"], "dependency");
  EXPECT_EQ(t["reason"], "waits for job prep of team a to succeed (after: succeeded; it is Running)");
  EXPECT_EQ(t["after"], json::parse(R"([{"job": "prep", "condition": "succeeded", "state": "waits", "job_state": "Running"}])"));
  EXPECT_EQ(job("cleanup")["after"][0]["condition"], "ended") << "the default condition";
  // The Queue page's category for it.
  EXPECT_EQ(wait_category(ReasonCode::kDependency, true), WaitCategory::kDependency);
  EXPECT_EQ(wait_category_label(WaitCategory::kDependency), "dependency");
  auto queue = get("/v1/dashboard/queue");
  ASSERT_EQ(queue.status, 200) << queue.body;
  EXPECT_NE(queue.body.find("\"category\":\"dependency\""), std::string::npos) << queue.body;

  // A server restart while they wait: still waiting, judged again.
  restart();
  EXPECT_EQ(job("train")["reason_code"], "dependency");
  EXPECT_EQ(job("cleanup")["state"], "Pending");

  exits("prep", 1);
  EXPECT_EQ(job("prep")["state"], "Failed");
  t = job("train");
  EXPECT_EQ(t["state"], "Cancelled") << t.dump();
  EXPECT_EQ(t["reason_code"], "dependency_never");
  EXPECT_NE(t["reason"].get<std::string>().find("job prep of team a ended Failed"), std::string::npos) << t["reason"];
  EXPECT_EQ(t["after"][0]["state"], "never");
  EXPECT_EQ(job("cleanup")["state"], "Running") << "prep ended: cleanup's dependency holds";
  auto events = get("/v1/events?since=0").json["events"];
  bool journaled = false;
  for (const auto& e : events) journaled |= e["kind"] == "dependency_never" && e["job"] == "train";
  EXPECT_TRUE(journaled) << events.dump();

  // The ending is in the journal: a restart (kill -9 leaves the same journal) replays it.
  restart();
  t = job("train");
  EXPECT_EQ(t["state"], "Cancelled");
  EXPECT_EQ(t["reason_code"], "dependency_never");
  EXPECT_EQ(job("cleanup")["state"], "Running");
}

TEST_F(ServerDependency, AnotherTeamsJobIsRefusedAsAnUnknownOneAndASelfReferenceOrCycleIsRefused) {
  ASSERT_EQ(post("/v1/jobs", spec("prep", "a")).status, 201);
  auto spy = post("/v1/jobs", spec("spy", "b", json::array({{{"job", "prep"}}})));
  EXPECT_EQ(spy.status, 400) << spy.body;
  auto unknown = post("/v1/jobs", spec("spy", "b", json::array({{{"job", "nope"}}})));
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  std::string a = spy.body, b = unknown.body;
  a.replace(a.find("prep"), 4, "X");
  b.replace(b.find("nope"), 4, "X");
  EXPECT_EQ(a, b) << "the refusal must not tell whether team a has a job named prep";
  auto bad_condition = post("/v1/jobs", spec("c", "a", json::array({{{"job", "prep"}, {"condition", "afterok"}}})));
  EXPECT_EQ(bad_condition.status, 400);
  EXPECT_NE(bad_condition.body.find("succeeded"), std::string::npos) << "the message lists the conditions: " << bad_condition.body;
  auto self = post("/v1/jobs", spec("me", "a", json::array({{{"job", "me"}}})));
  EXPECT_EQ(self.status, 400);
  EXPECT_NE(self.body.find("cannot depend on itself"), std::string::npos) << self.body;
  auto cycle = post("/v1/jobs", json{{"jobs", json::array({spec("x", "a", json::array({{{"job", "y"}}})),
                                                           spec("y", "a", json::array({{{"job", "x"}}}))})}});
  EXPECT_EQ(cycle.status, 400);
  EXPECT_NE(cycle.body.find("x -> y -> x"), std::string::npos) << cycle.body;
  EXPECT_EQ(get("/v1/jobs/x").status, 404) << "nothing of a refused submission is submitted";
  // In order, a batch may chain its jobs.
  auto chain = post("/v1/jobs", json{{"jobs", json::array({spec("s1", "a"), spec("s2", "a", json::array({{{"job", "s1"}, {"condition", "started"}}}))})}});
  EXPECT_EQ(chain.status, 201) << chain.body;
}

}  // namespace
}  // namespace allot::server::test::server_dependency_test
