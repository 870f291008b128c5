// Node silence measured against the server's own liveness, and the disruption rule (server/lifecycle/node_silence.h,
// docs/resiliency.md "A silent agent"): a server that stalled gives every node a fresh timeout; when most nodes
// go silent at once none is timed out, and the events say why. The clock is the fixture's.
#include "server/lifecycle/node_silence.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_node_silence_test {
namespace {

using nlohmann::json;

class ServerNodeSilence : public ServerTest {
 protected:
  void SetUp() override {
    // A stall: the writer's next batch with a command sleeps past stall_gap() (1 s at a 2 s timeout) while the
    // clock moves past the heartbeat timeout, as a process stopped with SIGSTOP and resumed sees it.
    options_.before_batch = [this] {
      if (!stall_.exchange(false)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1300));
      now_ms_ += 2500;
    };
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 4}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (const char* n : {"g1", "g2", "g3", "g4"}) {
      auto reg = post("/v1/agents/register", json{{"name", n}, {"instance_type", "ml.g5.12xlarge"},
                                                  {"labels", {{"network-node-layer-3", "x"}}}, {"heartbeat_interval_ms", 500}});
      ASSERT_EQ(reg.status, 200) << reg.body;
    }
    r = post("/v1/jobs", json{{"name", "j"}, {"team", "a"}, {"replicas", 1}, {"max_retries", 0},
                              {"per_replica", {{"accelerators", 4}}}, {"command", {"python", "train.py"}}});
    ASSERT_EQ(r.status, 201) << r.body;
    ASSERT_TRUE(eventually([&] { return get("/v1/jobs/j").json["state"] == "Running"; }));
    job_node_ = get("/v1/jobs/j").json["nodes"][0];
  }
  void beat(const std::string& node) {
    auto r = post("/v1/agents/" + node + "/heartbeat",
                  json{{"replicas", node == job_node_ ? json::array({{{"job", "j"}, {"rank", 0}, {"state", "running"}}}) : json::array()}});
    EXPECT_EQ(r.status, 200) << r.body;
  }
  std::string health_of(const std::string& node) { return get("/v1/nodes/" + node).json.value("health", ""); }
  json events_of(const std::string& kind) {
    json out = json::array();
    const json all = get("/v1/events?since=0").json;  // kept: a range over a temporary's member would dangle
    for (const auto& e : all["events"])
      if (e["kind"] == kind) out.push_back(e);
    return out;
  }
  std::atomic<bool> stall_{false};
  std::string job_node_;
};

TEST_F(ServerNodeSilence, AServerStallGivesEveryNodeAFreshTimeout) {
  for (const char* n : {"g1", "g2", "g3", "g4"}) beat(n);
  stall_ = true;
  // Any change goes through the writer: its batch is the one that stalls.
  ASSERT_EQ(post("/v1/tokens", R"({"role": "agent-join"})").status, 201);
  ASSERT_TRUE(eventually([&] { return !events_of("liveness").empty(); }));
  EXPECT_NE(events_of("liveness")[0]["message"].get<std::string>().find("did not run for"), std::string::npos);
  advance(std::chrono::milliseconds(100));
  for (const char* n : {"g1", "g2", "g3", "g4"}) EXPECT_EQ(health_of(n), "Schedulable") << n;
  auto j = get("/v1/jobs/j").json;
  EXPECT_EQ(j["state"], "Running") << j.dump();
  EXPECT_EQ(j["restarts"], 0);
  // A fresh timeout, not immunity: a node that stays silent after the stall times out as usual, with the others
  // heartbeating (one silent node of four is no disruption).
  const std::string quiet = job_node_ == "g1" ? "g2" : "g1";
  for (int step = 0; step < 6; ++step) {
    advance(std::chrono::milliseconds(500));
    for (const char* n : {"g1", "g2", "g3", "g4"})
      if (quiet != n) beat(n);
  }
  ASSERT_TRUE(eventually([&] { return health_of(quiet) == "UnschedulablePendingReboot"; }));
  EXPECT_EQ(get("/v1/jobs/j").json["state"], "Running");
}

TEST_F(ServerNodeSilence, MostNodesSilentAtOnceAreHeldSuspectAndTimedOutOnlyOnceFewAre) {
  for (const char* n : {"g1", "g2", "g3", "g4"}) beat(n);
  // Every agent falls silent past the 2 s timeout: a disruption, not four failed nodes.
  advance(std::chrono::milliseconds(2600));
  ASSERT_TRUE(eventually([&] { return !events_of("disruption").empty(); }));
  const std::string why = events_of("disruption")[0]["message"];
  EXPECT_NE(why.find("4 of 4 nodes"), std::string::npos) << why;
  EXPECT_NE(why.find("neither restarted nor failed"), std::string::npos) << why;
  advance(std::chrono::milliseconds(1000));
  for (const char* n : {"g1", "g2", "g3", "g4"}) {
    auto node = get(std::string("/v1/nodes/") + n).json;
    EXPECT_EQ(node["health"], "Schedulable") << node.dump();
    EXPECT_TRUE(node.contains("suspect")) << node.dump();
  }
  auto j = get("/v1/jobs/j").json;
  EXPECT_EQ(j["state"], "Running") << j.dump();
  EXPECT_EQ(j["restarts"], 0);
  // Two come back: 2 of 4 silent is under the rule's 55%, so the disruption is over, and every timeout starts
  // afresh: the third node back, a moment later, is not timed out for being last.
  const std::string quiet = job_node_ == "g4" ? "g3" : "g4";
  std::vector<std::string> others;
  for (const char* n : {"g1", "g2", "g3", "g4"})
    if (quiet != n && job_node_ != n) others.push_back(n);
  const std::string last = others.at(1);
  beat(job_node_);
  beat(others.at(0));
  ASSERT_TRUE(eventually([&] { return events_of("disruption").size() == 2; }));
  const std::string over = events_of("disruption")[1]["message"];
  EXPECT_NE(over.find("disruption over: 2 of 4"), std::string::npos) << over;
  EXPECT_NE(over.find("starts afresh"), std::string::npos) << over;
  advance(std::chrono::milliseconds(300));
  beat(last);
  for (const char* n : {"g1", "g2", "g3", "g4"}) EXPECT_EQ(health_of(n), "Schedulable") << n;
  // One silent node of four is a node failure again: a whole timeout after the disruption ended, it is timed out.
  for (int step = 0; step < 5; ++step) {
    advance(std::chrono::milliseconds(500));
    for (const char* n : {"g1", "g2", "g3", "g4"})
      if (quiet != n) beat(n);
  }
  ASSERT_TRUE(eventually([&] { return health_of(quiet) == "UnschedulablePendingReboot"; }));
  EXPECT_EQ(health_of(last), "Schedulable");
  EXPECT_EQ(get("/v1/jobs/j").json["state"], "Running");
  EXPECT_EQ(get("/v1/jobs/j").json["restarts"], 0);
}

// The agent's side of a stall (docs/resiliency.md, "Leases and fencing"): an agent that heard no answer for 3/4 of
// the timeout stopped its replica and says so (failure fenced). After the server's own stall that is the
// server's fault: the run is requeued without using a retry, so a job with none left runs again.
TEST_F(ServerNodeSilence, AReplicaFencedWhileTheServerStalledIsRequeuedWithoutARetry) {
  for (const char* n : {"g1", "g2", "g3", "g4"}) beat(n);
  stall_ = true;
  ASSERT_EQ(post("/v1/tokens", R"({"role": "agent-join"})").status, 201);
  ASSERT_TRUE(eventually([&] { return !events_of("liveness").empty(); }));
  advance(std::chrono::milliseconds(100));
  const json fenced = {{"job", "j"}, {"rank", 0}, {"state", "exited"}, {"attempt", 0}, {"exit_code", 143},
                       {"failure", {{"reason", "fenced"}, {"message", "no heartbeat answered for 1500 ms"}}}};
  auto r = post("/v1/agents/" + job_node_ + "/heartbeat", json{{"replicas", json::array({fenced})}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(eventually([&] {
    const json j = get("/v1/jobs/j").json;
    return j["state"] == "Running" && j["preemptions"] == 1;
  })) << get("/v1/jobs/j").body;
  const json j = get("/v1/jobs/j").json;
  EXPECT_EQ(j["restarts"], 0) << j.dump();
  EXPECT_EQ(j["preemptions"], 1) << j.dump();
  const json requeues = events_of("requeue");
  ASSERT_EQ(requeues.size(), 1u) << requeues.dump();
  EXPECT_NE(requeues[0]["message"].get<std::string>().find("while the server could not hear its agents; requeued without using a retry"),
            std::string::npos) << requeues.dump();
}

// Without a stall of the server's, the same report is the node's silence: an exit like any other, as before agents
// said they fenced (no retry left: the job fails).
TEST_F(ServerNodeSilence, AReplicaFencedWhileTheServerHeardIsAnExitLikeAnyOther) {
  for (const char* n : {"g1", "g2", "g3", "g4"}) beat(n);
  const json fenced = {{"job", "j"}, {"rank", 0}, {"state", "exited"}, {"attempt", 0}, {"exit_code", 143},
                       {"failure", {{"reason", "fenced"}, {"message", "no heartbeat answered for 1500 ms"}}}};
  auto r = post("/v1/agents/" + job_node_ + "/heartbeat", json{{"replicas", json::array({fenced})}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/j").json["state"] == "Failed"; })) << get("/v1/jobs/j").body;
  EXPECT_NE(get("/v1/jobs/j").json["reason"].get<std::string>().find("exited with code 143"), std::string::npos);
  // A fenced exit carries its exit code: without one it is refused, and nothing changes.
  json bare = fenced;
  bare.erase("exit_code");
  r = post("/v1/agents/" + job_node_ + "/heartbeat", json{{"replicas", json::array({bare})}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("needs its exit_code"), std::string::npos) << r.body;
}

TEST_F(ServerNodeSilence, WithoutTheRuleEverySilentNodeIsTimedOut) {
  stop();
  options_.disruption_min_nodes = 0;
  start();
  for (const char* n : {"g1", "g2", "g3", "g4"}) beat(n);
  advance(std::chrono::milliseconds(2600));
  for (const char* n : {"g1", "g2", "g3", "g4"})
    ASSERT_TRUE(eventually([&] { return health_of(n) == "UnschedulablePendingReboot"; })) << n;
  EXPECT_TRUE(events_of("disruption").empty());
}

// The rule on its own (no server): it holds only while a node past the timeout is expected to heartbeat, and its
// count of every agent is made then, or to say how a held disruption ends.
TEST(AssessDisruption, HoldsOnlyWhileANodeExpectedToHeartbeatIsPastTheTimeout) {
  ServerState st;
  std::vector<NodeSpec> specs;
  for (const char* n : {"g1", "g2", "g3", "g4"}) specs.push_back({.name = n, .instance_type = "ml.g5.12xlarge"});
  ASSERT_TRUE(add_nodes(st.cluster, specs, 0).ok());
  const int64_t now = 100'000;
  for (const auto& s : specs) {
    NodeInfo& info = st.nodes[s.name];
    info.agent = true;
    info.heartbeat_interval_ms = 500;
    info.last_heartbeat_ms = now - 3'000;  // all four silent past a 2 s timeout
  }
  ServerOptions options;
  options.heartbeat_timeout = std::chrono::milliseconds(2000);
  options.disruption_min_nodes = 3;
  options.disruption_share = 0.5;
  std::vector<PastTimeout> past;
  for (const auto& s : specs) {  // g1 first
    auto it = st.nodes.find(s.name);
    past.push_back({&it->first, &it->second});
  }

  EXPECT_EQ(assess_disruption(st, options, now, {}, false), Disruption{}) << "nobody past the timeout: uncounted";
  EXPECT_EQ(assess_disruption(st, options, now, past, false), (Disruption{4, 4, true}));
  // Ending a held disruption, the counts are made although nobody is past the timeout.
  st.hearing_since_ms = now;
  EXPECT_EQ(assess_disruption(st, options, now, {}, true), (Disruption{0, 4, false}));
  st.hearing_since_ms = 0;
  // A node waiting for its replacement is not expected to heartbeat: past the timeout alone, it holds nothing.
  ASSERT_TRUE(set_node_health(st.cluster, "g1", NodeHealth::kUnschedulablePendingReplacement, 0).ok());
  EXPECT_EQ(assess_disruption(st, options, now, std::span(past).first(1), false), Disruption{});
  EXPECT_EQ(assess_disruption(st, options, now, std::span(past).first(1), true), (Disruption{3, 3, false}));
  EXPECT_EQ(assess_disruption(st, options, now, past, false), (Disruption{3, 3, true}));
}

}  // namespace
}  // namespace allot::server::test::server_node_silence_test
