// Gang start timeout in the server (server/lifecycle/start_timeouts.h, docs/resiliency.md "Gang start timeout"): a run not
// every replica of which its agent reports running within policy.start_timeout is requeued without a retry, the
// node that did not start its replica is named and counted, the job backs off and then runs again; a run whose
// replicas all started is left alone; a replica pulling its image has not started; the journal keeps it all.
#include "server_test_fixture.h"

namespace allot::server::test::server_start_timeout_test {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// What an emulated agent does with the replicas its run list gives it.
enum class Agent { kStarts, kPulls, kIgnores };

class ServerStartTimeout : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"policy": {"start_timeout": 3, "start_backoff": 4, "start_backoff_max": 600},
                                   "teams": [{"name": "a", "fair_share_weight": 1,
                                              "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 2}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (const char* n : {"g1", "g2"}) {
      auto reg = post("/v1/agents/register", json{{"name", n}, {"instance_type", "g5.12xlarge"}, {"labels", {{"network-node-layer-3", "x"}}}});
      ASSERT_EQ(reg.status, 200) << reg.body;
      run_[n] = json::array();
    }
    // One replica on each node.
    auto s = post("/v1/jobs", json{{"name", "gang"}, {"team", "a"}, {"replicas", 2}, {"max_retries", 0},
                                   {"per_replica", {{"accelerators", 4}}}, {"command", {"train"}}});
    ASSERT_EQ(s.status, 201) << s.body;
    ASSERT_EQ(get("/v1/jobs/gang").json["state"], "Running");
  }
  // One heartbeat of `node`'s agent: it reports every replica of its last run list as `mode` says.
  void beat(const std::string& node, Agent mode) {
    json reports = json::array();
    if (mode != Agent::kIgnores)
      for (const auto& a : run_[node])
        reports.push_back({{"job", a["job"]}, {"rank", a["rank"]}, {"attempt", a["attempt"]},
                           {"state", mode == Agent::kStarts ? "running" : "pulling"}});
    auto r = post("/v1/agents/" + node + "/heartbeat", json{{"replicas", reports}});
    ASSERT_EQ(r.status, 200) << r.body;
    run_[node] = r.json["run"];
  }
  // Moves the clock by `ms` in half-second steps, both agents heartbeating at each.
  void run_for(int ms, Agent g1, Agent g2) {
    for (int t = 0; t < ms; t += 500) {
      advance(milliseconds(500));
      beat("g1", g1);
      beat("g2", g2);
    }
  }
  std::map<std::string, json> run_;
};

TEST_F(ServerStartTimeout, ARunNotWhollyStartedIsRequeuedWithoutARetryAndRunsAgainAfterItsBackoff) {
  run_for(2000, Agent::kStarts, Agent::kPulls);  // g2 pulls the image and gets no further
  EXPECT_EQ(get("/v1/jobs/gang").json["state"], "Running");
  run_for(2000, Agent::kStarts, Agent::kPulls);
  auto j = get("/v1/jobs/gang").json;
  ASSERT_EQ(j["state"], "Suspended") << j.dump();
  EXPECT_EQ(j["reason_code"], "start_timeout");
  EXPECT_EQ(j["restarts"], 0) << "a start timeout uses no retry";
  EXPECT_EQ(j["preemptions"], 1);
  EXPECT_EQ(j["start_timeouts"], 1);
  EXPECT_TRUE(j.contains("backoff_until")) << j.dump();
  const std::string reason = j["reason"];
  EXPECT_NE(reason.find("on node g2 (pulling its image) did not start"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("on node g1"), std::string::npos) << "g1 started its replica: " << reason;
  EXPECT_EQ(get("/v1/nodes/g2").json["start_timeouts"], 1);
  EXPECT_FALSE(get("/v1/nodes/g1").json.contains("start_timeouts"));
  // It backs off 4 s, then runs again; this time both start, and it is left alone however long it runs.
  run_for(1500, Agent::kStarts, Agent::kStarts);
  EXPECT_EQ(get("/v1/jobs/gang").json["state"], "Suspended");
  run_for(3500, Agent::kStarts, Agent::kStarts);
  j = get("/v1/jobs/gang").json;
  ASSERT_EQ(j["state"], "Running") << j.dump();
  run_for(6000, Agent::kStarts, Agent::kStarts);
  j = get("/v1/jobs/gang").json;
  EXPECT_EQ(j["state"], "Running") << j.dump();
  EXPECT_EQ(j["start_timeouts"], 1);
  EXPECT_EQ(j["restarts"], 0);
}

TEST_F(ServerStartTimeout, TheBackoffDoublesAndTheJournalKeepsIt) {
  // The agents hold the replicas and never run them: each run times out; the second backoff is 8 s.
  run_for(4000, Agent::kIgnores, Agent::kIgnores);
  auto j = get("/v1/jobs/gang").json;
  ASSERT_EQ(j["reason_code"], "start_timeout") << j.dump();
  EXPECT_NE(j["reason"].get<std::string>().find("on node g1"), std::string::npos) << j.dump();
  run_for(8000, Agent::kIgnores, Agent::kIgnores);  // 4 s of backoff, then 3 s until the next timeout
  j = get("/v1/jobs/gang").json;
  ASSERT_EQ(j["start_timeouts"], 2) << j.dump();
  EXPECT_NE(j["reason"].get<std::string>().find("(backoff 8 s after start timeout 2)"), std::string::npos) << j.dump();
  EXPECT_EQ(get("/v1/nodes/g1").json["start_timeouts"], 2);
  // A restarted server replays it: still backing off, until the same time, and the nodes' counts.
  const json until = j["backoff_until"];
  restart();
  j = get("/v1/jobs/gang").json;
  EXPECT_EQ(j["state"], "Suspended") << j.dump();
  EXPECT_EQ(j["reason_code"], "start_timeout");
  EXPECT_EQ(j["backoff_until"], until);
  EXPECT_EQ(get("/v1/nodes/g2").json["start_timeouts"], 2);
}

}  // namespace
}  // namespace allot::server::test::server_start_timeout_test
