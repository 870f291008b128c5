// Agents and node lifecycle: registration, assignments, exits, heartbeat timeouts, logs.
#include "server/lifecycle/log_store.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_agent_test {
namespace {

using nlohmann::json;

class ServerAgent : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 3}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (int i = 1; i <= 3; ++i) {
      auto reg = post("/v1/agents/register", json{{"name", "g" + std::to_string(i)},
                                                  {"instance_type", "g5.12xlarge"},
                                                  {"address", "10.0.0." + std::to_string(i)},
                                                  {"labels", {{"network-node-layer-3", "x"}}},
                                                  {"inventory", {{"gpus", 4}}}});
      ASSERT_EQ(reg.status, 200) << reg.body;
    }
  }
  json heartbeat(const std::string& node, json replicas = json::array()) {
    auto r = post("/v1/agents/" + node + "/heartbeat", json{{"replicas", replicas}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json;
  }
  json submit(const std::string& name, int replicas, int gpus, int retries = 0) {
    auto r = post("/v1/jobs", json{{"name", name}, {"team", "a"}, {"replicas", replicas}, {"max_retries", retries},
                                   {"per_replica", {{"accelerators", gpus}}}, {"command", {"python", "train.py"}},
                                   {"env", {{"X", "1"}}}});
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json;
  }
  // Every node's run list, by node name.
  std::map<std::string, json> runs() {
    std::map<std::string, json> out;
    for (const char* n : {"g1", "g2", "g3"}) out[n] = heartbeat(n)["run"];
    return out;
  }
};

TEST_F(ServerAgent, RegisteredNodesAreAgentsWithAddresses) {
  auto nodes = get("/v1/nodes").json;
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0]["agent"], true);
  EXPECT_EQ(nodes[0]["address"], "10.0.0.1");
  EXPECT_EQ(nodes[0]["health"], "Schedulable");
  // Registering again with the same type is accepted and changes nothing but what it says.
  auto again = post("/v1/agents/register", R"({"name": "g1", "instance_type": "ml.g5.12xlarge", "address": "10.0.0.1"})");
  EXPECT_EQ(again.status, 200);
  // Both answers carry the failure timeout agents fence themselves by.
  EXPECT_EQ(again.json["heartbeat_timeout_ms"], 2000) << again.body;
  EXPECT_EQ(heartbeat("g1")["heartbeat_timeout_ms"], 2000);
}

// The last heartbeat is kept in milliseconds, so its RFC 3339 time has the fraction of a second.
TEST_F(ServerAgent, LastHeartbeatIsAnRfc3339TimeWithMilliseconds) {
  advance(std::chrono::milliseconds(1250));
  heartbeat("g2");
  auto n = get("/v1/nodes/g2");
  ASSERT_EQ(n.status, 200) << n.body;
  EXPECT_EQ(n.json["last_heartbeat"], "2023-11-14T22:13:21.250Z") << n.body;
}

TEST_F(ServerAgent, AssignmentsFollowThePlacement) {
  // 2 replicas of 4 GPUs: two whole g5.12xlarge nodes.
  auto j = submit("train", 2, 4);
  ASSERT_EQ(j["state"], "Running") << j.dump();
  auto r = runs();
  json all = json::array();
  for (auto& [node, list] : r)
    for (auto& a : list) all.push_back(a);
  ASSERT_EQ(all.size(), 2u);
  std::set<int> ranks;
  const std::string first_node = j["placement"][0]["replicas"][0]["node"];
  for (const auto& a : all) {
    ranks.insert(a["rank"].get<int>());
    EXPECT_EQ(a["world_size"], 2);
    EXPECT_EQ(a["local_rank"], 0);
    EXPECT_EQ(a["master_addr"], "10.0.0." + first_node.substr(1)) << "MASTER_ADDR is rank 0's node address";
    EXPECT_GE(a["master_port"].get<int>(), 29500);
    EXPECT_EQ(a["command"], json({"python", "train.py"}));
    EXPECT_EQ(a["env"]["X"], "1");
    EXPECT_EQ(a["accelerators"], json({0, 1, 2, 3}));
    EXPECT_EQ(a["accelerator_kind"], "nvidia-gpu");
    EXPECT_EQ(a["cpus"], "0-47");
    EXPECT_EQ(a["attempt"], 0);
    // The request per replica (a whole g5.12xlarge: 48 vCPUs, 192 GiB) for the replica's cgroup limits.
    EXPECT_EQ(a["vcpu_milli"], 48000);
    EXPECT_EQ(a["memory_mib"], 192 * 1024);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
  // Two replicas on one node get local ranks 0 and 1.
  submit("pair", 2, 1);
  auto pair = get("/v1/jobs/pair").json;
  ASSERT_EQ(pair["node_count"], 1) << pair.dump();
  const std::string node = pair["nodes"][0];
  std::set<int> local;
  const json hb = heartbeat(node);
  for (const auto& a : hb["run"])
    if (a["job"] == "pair") local.insert(a["local_rank"].get<int>());
  EXPECT_EQ(local, (std::set<int>{0, 1})) << hb.dump();
}

TEST_F(ServerAgent, AllExitsZeroSucceedsAnyNonZeroFailsAndRetries) {
  submit("ok", 2, 4);
  auto placement = get("/v1/jobs/ok").json["placement"][0]["replicas"];
  const std::string n0 = placement[0]["node"], n1 = placement[1]["node"];
  heartbeat(n0, json::array({{{"job", "ok"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 0}, {"attempt", 0}}}));
  EXPECT_EQ(get("/v1/jobs/ok").json["state"], "Running") << "one replica of two has exited";
  // A late duplicate of the same exit changes nothing.
  heartbeat(n0, json::array({{{"job", "ok"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 0}}}));
  heartbeat(n1, json::array({{{"job", "ok"}, {"rank", 1}, {"state", "exited"}, {"exit_code", 0}}}));
  EXPECT_EQ(get("/v1/jobs/ok").json["state"], "Succeeded");

  submit("flaky", 1, 4, /*retries=*/1);
  std::string node = get("/v1/jobs/flaky").json["nodes"][0];
  // An exit reported from a node the replica is not on is ignored.
  std::string other = node == "g1" ? "g2" : "g1";
  heartbeat(other, json::array({{{"job", "flaky"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 9}}}));
  EXPECT_EQ(get("/v1/jobs/flaky").json["state"], "Running");
  heartbeat(node, json::array({{{"job", "flaky"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 137}, {"attempt", 0}}}));
  auto j = get("/v1/jobs/flaky").json;
  EXPECT_EQ(j["restarts"], 1);
  EXPECT_EQ(j["state"], "Running") << "auto-resume restarts it at once: " << j.dump();
  EXPECT_NE(j["history"].dump().find("replica 0 exited with code 137"), std::string::npos);
  node = j["nodes"][0];
  // The old attempt's exit, reported late, does not touch the new run.
  heartbeat(node, json::array({{{"job", "flaky"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 137}, {"attempt", 0}}}));
  EXPECT_EQ(get("/v1/jobs/flaky").json["state"], "Running");
  auto run = heartbeat(node)["run"];
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0]["attempt"], 1);
  heartbeat(node, json::array({{{"job", "flaky"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 1}, {"attempt", 1}}}));
  EXPECT_EQ(get("/v1/jobs/flaky").json["state"], "Failed");
}

TEST_F(ServerAgent, TheCpusARunningReplicaReportsShowInItsJobFromItsOwnNodeOnly) {
  submit("bound", 1, 4, /*retries=*/1);
  const std::string node = get("/v1/jobs/bound").json["nodes"][0];
  const std::string other = node == "g1" ? "g2" : "g1";
  // Another node cannot speak for the replica; an older attempt's report does not count either.
  heartbeat(other, json::array({{{"job", "bound"}, {"rank", 0}, {"state", "running"}, {"attempt", 0}, {"cpus", "9"}}}));
  heartbeat(node, json::array({{{"job", "bound"}, {"rank", 0}, {"state", "running"}, {"attempt", 5}, {"cpus", "8"}}}));
  auto replica = get("/v1/jobs/bound").json["placement"][0]["replicas"][0];
  EXPECT_FALSE(replica.contains("cpus_bound")) << replica.dump();
  EXPECT_EQ(replica["cpus"], "0-47");  // the plan
  // The emulated g5.12xlarge's 48 planned CPUs folded onto a 4-CPU machine.
  heartbeat(node, json::array({{{"job", "bound"}, {"rank", 0}, {"state", "running"}, {"attempt", 0}, {"cpus", "0-3"}}}));
  replica = get("/v1/jobs/bound").json["placement"][0]["replicas"][0];
  EXPECT_EQ(replica["cpus_bound"], "0-3") << replica.dump();
  // A new attempt starts without the old one's binding.
  heartbeat(node, json::array({{{"job", "bound"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 1}, {"attempt", 0}}}));
  auto j = get("/v1/jobs/bound").json;
  ASSERT_EQ(j["state"], "Running") << j.dump();
  EXPECT_FALSE(j["placement"][0]["replicas"][0].contains("cpus_bound")) << j.dump();
}

TEST_F(ServerAgent, StopListsReplicasNoLongerPlacedHere) {
  submit("j", 1, 4);
  std::string node = get("/v1/jobs/j").json["nodes"][0];
  auto hb = heartbeat(node, json::array({{{"job", "j"}, {"rank", 0}, {"state", "running"}, {"attempt", 0}},
                                         {{"job", "ghost"}, {"rank", 3}, {"state", "running"}}}));
  ASSERT_EQ(hb["stop"].size(), 1u);
  EXPECT_EQ(hb["stop"][0]["job"], "ghost");
  ASSERT_EQ(post("/v1/jobs/j/cancel").status, 200);
  hb = heartbeat(node, json::array({{{"job", "j"}, {"rank", 0}, {"state", "running"}, {"attempt", 0}}}));
  EXPECT_TRUE(hb["run"].empty());
  ASSERT_EQ(hb["stop"].size(), 1u);
  EXPECT_EQ(hb["stop"][0]["job"], "j");
}

TEST_F(ServerAgent, SilentNodeTimesOutAndItsJobsResumeElsewhere) {
  submit("j", 1, 4, /*retries=*/3);
  const std::string node = get("/v1/jobs/j").json["nodes"][0];
  // Everyone but `node` keeps heartbeating while the clock passes the 2 s timeout.
  for (int step = 0; step < 6; ++step) {
    advance(std::chrono::milliseconds(500));
    for (const char* n : {"g1", "g2", "g3"})
      if (node != n) heartbeat(n);
  }
  ASSERT_TRUE(eventually([&] { return get("/v1/nodes/" + node).json["health"] == "UnschedulablePendingReboot"; }));
  auto j = get("/v1/jobs/j").json;
  EXPECT_EQ(j["state"], "Running");
  EXPECT_NE(j["nodes"][0], node) << "the job restarted on a healthy node";
  EXPECT_EQ(j["restarts"], 1);
  // The node comes back with its next heartbeat; an administrator's health is not undone that way.
  heartbeat(node);
  EXPECT_EQ(get("/v1/nodes/" + node).json["health"], "Schedulable");
  ASSERT_EQ(put("/v1/nodes/" + node + "/health", R"({"health": "UnschedulablePendingReboot"})").status, 200);
  heartbeat(node);
  EXPECT_EQ(get("/v1/nodes/" + node).json["health"], "UnschedulablePendingReboot");
  // Registering again is the agent saying it is back: Schedulable. It cannot move the node while at it.
  const std::string address = "10.0.0." + node.substr(1);
  auto moved = post("/v1/agents/register", json{{"name", node}, {"instance_type", "ml.g5.12xlarge"}, {"address", "10.9.9.9"}});
  EXPECT_EQ(moved.status, 409) << moved.body;
  ASSERT_EQ(post("/v1/agents/register", json{{"name", node}, {"instance_type", "ml.g5.12xlarge"}, {"address", address}}).status, 200);
  EXPECT_EQ(get("/v1/nodes/" + node).json["health"], "Schedulable");
  auto events = get("/v1/events?since=0").json["events"].dump();
  EXPECT_NE(events.find("by timeout"), std::string::npos);
}

TEST_F(ServerAgent, LogsAreKeptPerReplicaAndBounded) {
  submit("j", 2, 4);
  // Each rank's logs come from the agent of the node it was placed on; another node's agent is refused.
  const json placed = get("/v1/jobs/j").json["placement"][0]["replicas"];
  const std::string node0 = placed[0]["node"], node1 = placed[1]["node"];
  ASSERT_NE(node0, node1);
  auto foreign = post("/v1/agents/" + node0 + "/logs", json{{"job", "j"}, {"rank", 1}, {"data", "forged"}});
  EXPECT_EQ(foreign.status, 403) << foreign.body;
  ASSERT_EQ(post("/v1/agents/" + node1 + "/logs", json{{"job", "j"}, {"rank", 1}, {"data", "hello "}}).status, 204);
  ASSERT_EQ(post("/v1/agents/" + node1 + "/logs", json{{"job", "j"}, {"rank", 1}, {"data", "world\n"}}).status, 204);
  auto r = get("/v1/jobs/j/logs?replica=1");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_EQ(get("/v1/jobs/j/logs?replica=1&tail=6").body, "world\n");
  EXPECT_EQ(get("/v1/jobs/j/logs").body, "") << "replica 0 has logged nothing";
  // 3 MiB in chunks: only about the last MiB (at most two) is kept, and the end is intact.
  std::string chunk(512 * 1024, 'x');
  for (int i = 0; i < 6; ++i) ASSERT_EQ(post("/v1/agents/" + node0 + "/logs", json{{"job", "j"}, {"rank", 0}, {"data", chunk}}).status, 204);
  ASSERT_EQ(post("/v1/agents/" + node0 + "/logs", json{{"job", "j"}, {"rank", 0}, {"data", "END"}}).status, 204);
  auto big = get("/v1/jobs/j/logs?replica=0");
  EXPECT_LE(big.body.size(), 2u << 20);
  EXPECT_GE(big.body.size(), 1u << 20);
  EXPECT_EQ(big.body.substr(big.body.size() - 3), "END");
}

// Found by long fuzzing (issue 33): a valid job name of 129 characters ("a." 64 times and "a") is 321 bytes once
// its dots are spelled %2E, more than a file name may be, and its log upload got 500 for ever. It is stored and
// read back like any other.
TEST_F(ServerAgent, LogOfAJobWhoseEncodedNameExceedsAFileNameIsStored) {
  std::string name;
  for (int i = 0; i < 64; ++i) name += "a.";
  name += "a";
  ASSERT_EQ(name.size(), 129u);
  submit(name, 1, 4);
  const std::string node = get("/v1/jobs/" + name).json["placement"][0]["replicas"][0]["node"];
  auto up = post("/v1/agents/" + node + "/logs", json{{"job", name}, {"rank", 0}, {"data", "long name\n"}, {"attempt", 0}});
  ASSERT_EQ(up.status, 204) << up.body;
  auto r = get("/v1/jobs/" + name + "/logs");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "long name\n");
  // Under the bounded key: the encoding's start, '~' and the name's SHA-256.
  EXPECT_LE(LogStore::key(name).size(), 255u);
  EXPECT_TRUE(std::filesystem::exists(data_dir_ / "logs" / LogStore::key(name) / "0.log"));
}

}  // namespace
}  // namespace allot::server::test::server_agent_test
