// Stops before starts across a server restart (server/lifecycle/start_gate.h, "Recovery"): a server that starts from its
// journal knows of no stop under way, so every run it hands out is held (listed, but none of it may start) until
// each agent has said what still runs on its node, or the heartbeat timeout has passed since the start.
#include "server_start_gate_fixture.h"

namespace allot::server::test::server_start_gate_recovery_test {
namespace {

using nlohmann::json;

class ServerStartGateRecovery : public StartGateTest {
 protected:
  void SetUp() override {
    StartGateTest::SetUp();
    // One replica of four GPUs: a whole node.
    auto r = post("/v1/jobs", json{{"name", "solo"}, {"team", "a"}, {"replicas", 1}, {"max_retries", 1},
                              {"per_replica", {{"accelerators", 4}}}, {"command", {"train"}}});
    ASSERT_EQ(r.status, 201) << r.body;
    first = get("/v1/jobs/solo").json["nodes"][0];
    second = first == "g1" ? "g2" : "g1";
    ASSERT_EQ(entries(heartbeat(first, running(0))["run"]).size(), 1u);
    heartbeat(second);
  }
  static json running(int attempt) { return json::array({{{"job", "solo"}, {"rank", 0}, {"state", "running"}, {"attempt", attempt}}}); }
  // solo's entries in a run list.
  static std::vector<json> entries(const json& run) {
    std::vector<json> out;
    for (const auto& a : run)
      if (a["job"] == "solo") out.push_back(a);
    return out;
  }
  // Drains solo's node: the job is suspended and placed again on the other node, as attempt 1, while its old process
  // still runs out its stop grace on the drained node.
  void move_solo() {
    ASSERT_EQ(post("/v1/nodes/" + first + "/drain").status, 200);
    auto j = get("/v1/jobs/solo").json;
    ASSERT_EQ(j["state"], "Running") << j.dump();
    ASSERT_EQ(j["nodes"][0], second) << j.dump();
  }
  std::string first, second;
};

TEST_F(ServerStartGateRecovery, ARunMovedBeforeARestartStartsOnlyOnceTheOldNodeSaysItsProcessStopped) {
  move_solo();
  // The server dies before the drained node's agent confirmed the stop; what it awaited was not journaled.
  restart();
  // The new node gets the run held: listed, not to be started, and the job says what it waits for.
  auto hb = heartbeat(second);
  auto listed = entries(hb["run"]);
  ASSERT_EQ(listed.size(), 1u) << hb.dump();
  EXPECT_EQ(listed[0]["attempt"], 1);
  EXPECT_EQ(listed[0].value("hold", false), true) << "no rank starts before the old node has said what runs: " << hb.dump();
  auto j = get("/v1/jobs/solo").json;
  ASSERT_TRUE(j.contains("waits_for_first_heartbeats")) << j.dump();
  EXPECT_EQ(j["waits_for_first_heartbeats"]["nodes"], json::array({first})) << j.dump();
  EXPECT_EQ(j["waits_for_first_heartbeats"]["count"], 1);
  // The drained node's agent still runs attempt 0: it is told to stop it, and the new run stays held for that stop.
  hb = heartbeat(first, running(0));
  ASSERT_EQ(hb["stop"].size(), 1u) << hb.dump();
  EXPECT_EQ(hb["stop"][0]["job"], "solo");
  j = get("/v1/jobs/solo").json;
  EXPECT_FALSE(j.contains("waits_for_first_heartbeats")) << "every agent has been heard: " << j.dump();
  ASSERT_TRUE(j.contains("waits_for_stops")) << j.dump();
  EXPECT_EQ(j["waits_for_stops"][0]["attempt"], 0);
  EXPECT_EQ(j["waits_for_stops"][0]["nodes"], json::array({first}));
  EXPECT_EQ(entries(heartbeat(second)["run"])[0].value("hold", false), true);
  // Its agent no longer reports it: the run is released.
  heartbeat(first);
  listed = entries(heartbeat(second)["run"]);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_FALSE(listed[0].contains("hold")) << listed[0].dump();
  EXPECT_FALSE(get("/v1/jobs/solo").json.contains("waits_for_stops"));
}

TEST_F(ServerStartGateRecovery, ARunHeldByARestartIsReleasedOnceTheSilentNodesAgentHasFencedItself) {
  move_solo();
  restart();
  // The drained node never speaks again: past the heartbeat timeout since the start its agent has stopped its
  // replicas (agent/fencing.h), so the run is released without it.
  for (int step = 0; step < 3; ++step) {
    EXPECT_EQ(entries(heartbeat(second)["run"])[0].value("hold", false), true) << step;
    advance(std::chrono::milliseconds(600));
  }
  advance(std::chrono::milliseconds(300));
  ASSERT_TRUE(eventually([&] { return !entries(heartbeat(second)["run"])[0].contains("hold"); }));
  EXPECT_FALSE(get("/v1/jobs/solo").json.contains("waits_for_first_heartbeats"));
}

TEST_F(ServerStartGateRecovery, AReplicaRunningBeforeARestartKeepsRunningWhileItsRunIsHeld) {
  restart();
  // Held, solo's process is listed to its node (so it is not stopped), and nothing is to be stopped.
  auto hb = heartbeat(first, running(0));
  auto listed = entries(hb["run"]);
  ASSERT_EQ(listed.size(), 1u) << hb.dump();
  EXPECT_EQ(listed[0]["attempt"], 0);
  EXPECT_TRUE(hb["stop"].empty()) << hb.dump();
  // The last agent heard: released, still the same attempt.
  heartbeat(second);
  listed = entries(heartbeat(first, running(0))["run"]);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_FALSE(listed[0].contains("hold")) << listed[0].dump();
  EXPECT_EQ(listed[0]["attempt"], 0);
  EXPECT_EQ(get("/v1/jobs/solo").json["restarts"], 0);
}

// A rank moved by an in-place recovery just before the restart: the restarted server learns from the old node's
// first heartbeat that its process still runs there, and holds the rank's new node until it has stopped.
TEST_F(ServerStartGateRecovery, ARankMovedInPlaceBeforeARestartStartsOnlyOnceItsOldProcessHasStopped) {
  ASSERT_EQ(post("/v1/jobs/solo/cancel").status, 200);
  heartbeat(first);
  auto r = post("/v1/jobs", json{{"name", "ring"}, {"team", "a"}, {"replicas", 2}, {"recovery", "in_place"},
                                 {"per_replica", {{"accelerators", 4}}}, {"command", {"train"}}});
  ASSERT_EQ(r.status, 201) << r.body;
  auto j = get("/v1/jobs/ring").json;
  ASSERT_EQ(j["state"], "Running") << j.dump();
  ASSERT_EQ(post("/v1/agents/register", json{{"name", "g3"}, {"instance_type", "g5.12xlarge"}, {"labels", {{"network-node-layer-3", "x"}}}}).status, 200);
  const std::string rank0 = j["placement"][0]["replicas"][0]["node"], rank1 = j["placement"][0]["replicas"][1]["node"];
  auto ring = [](int rank) { return json{{"job", "ring"}, {"rank", rank}, {"state", "running"}, {"attempt", 0}}; };
  auto ranks_in = [](const json& run) {
    std::map<int, bool> out;  // rank -> held
    for (const auto& a : run)
      if (a["job"] == "ring") out[a["rank"].get<int>()] = a.value("hold", false);
    return out;
  };
  heartbeat(rank0, json::array({ring(0)}));
  heartbeat(rank1, json::array({ring(1)}));
  heartbeat("g3");
  ASSERT_EQ(put("/v1/nodes/" + rank1 + "/health", R"({"health": "UnschedulablePendingReboot"})").status, 200);
  j = get("/v1/jobs/ring").json;
  ASSERT_EQ(j["placement"][0]["replicas"][1]["node"], "g3") << j.dump();
  // The server dies before the old node confirmed the old rank 1 stopped.
  restart();
  heartbeat("g3");
  heartbeat(rank0, json::array({ring(0)}));
  auto hb = heartbeat(rank1, json::array({ring(1)}));  // still running there: a stop under way again
  ASSERT_EQ(hb["stop"].size(), 1u) << hb.dump();
  EXPECT_TRUE(ranks_in(heartbeat("g3")["run"]).empty()) << "rank 1 must not reach g3 while it runs on " << rank1;
  j = get("/v1/jobs/ring").json;
  ASSERT_TRUE(j.contains("waits_for_stops")) << j.dump();
  EXPECT_EQ(j["waits_for_stops"][0]["rank"], 1) << j.dump();
  // The survivor keeps running meanwhile: still listed on its node.
  EXPECT_EQ(ranks_in(heartbeat(rank0, json::array({ring(0)}))["run"]).count(0), 1u);
  heartbeat(rank1);  // gone
  EXPECT_EQ(ranks_in(heartbeat("g3")["run"]), (std::map<int, bool>{{1, false}}));
  EXPECT_EQ(ranks_in(heartbeat(rank0, json::array({ring(0)}))["run"]), (std::map<int, bool>{{0, false}}));
}

}  // namespace
}  // namespace allot::server::test::server_start_gate_recovery_test
