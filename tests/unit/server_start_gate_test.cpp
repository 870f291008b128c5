// Stops before starts (server/lifecycle/start_gate.h): a run's replicas reach the agents only once the replicas of the run
// it replaces are confirmed stopped; and a replica an agent reports lost fails its run.
#include "server_start_gate_fixture.h"

namespace allot::server::test::server_start_gate_test {
namespace {

using nlohmann::json;

class ServerStartGate : public StartGateTest {
 protected:
  // The attempts of `job` in a run list.
  static std::set<int> attempts_in(const json& run, const std::string& job) {
    std::set<int> out;
    for (const auto& a : run)
      if (a["job"] == job) out.insert(a["attempt"].get<int>());
    return out;
  }
};

TEST_F(ServerStartGate, ARestartReachesTheAgentsOnlyOnceTheFailedRunHasStopped) {
  // Two ranks of 2 GPUs on one node: rank 0 fails while rank 1 runs on.
  auto r = post("/v1/jobs", json{{"name", "pair"}, {"team", "a"}, {"replicas", 2}, {"max_retries", 1},
                                 {"per_replica", {{"accelerators", 2}}}, {"command", {"train"}}});
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string node = get("/v1/jobs/pair").json["nodes"][0];
  const std::string other = node == "g1" ? "g2" : "g1";
  EXPECT_EQ(attempts_in(heartbeat(node)["run"], "pair"), std::set<int>{0}) << "a first run waits for nothing";
  const json rank1_running = {{"job", "pair"}, {"rank", 1}, {"state", "running"}, {"attempt", 0}};
  auto hb = heartbeat(node, json::array({{{"job", "pair"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 3}, {"attempt", 0}},
                                         rank1_running}));
  auto j = get("/v1/jobs/pair").json;
  ASSERT_EQ(j["state"], "Running") << j.dump();
  ASSERT_EQ(j["restarts"], 1) << j.dump();
  // Attempt 1 is placed, but no agent gets it while rank 1 of attempt 0 runs; the job says what it waits for.
  EXPECT_TRUE(attempts_in(hb["run"], "pair").empty()) << hb.dump();
  ASSERT_EQ(hb["stop"].size(), 1u) << hb.dump();
  EXPECT_EQ(hb["stop"][0]["rank"], 1);
  EXPECT_TRUE(attempts_in(heartbeat(other)["run"], "pair").empty());
  ASSERT_TRUE(j.contains("waits_for_stops")) << j.dump();
  EXPECT_EQ(j["waits_for_stops"][0]["job"], "pair");
  EXPECT_EQ(j["waits_for_stops"][0]["attempt"], 0);
  EXPECT_EQ(j["waits_for_stops"][0]["nodes"], json::array({node}));
  hb = heartbeat(node, json::array({rank1_running}));
  EXPECT_TRUE(attempts_in(hb["run"], "pair").empty()) << "still running: " << hb.dump();
  // Its agent no longer reports it: stopped. The answer to that very heartbeat hands attempt 1 out.
  const std::string now_on = get("/v1/jobs/pair").json["nodes"][0];
  hb = heartbeat(node);
  const json run = now_on == node ? hb["run"] : heartbeat(now_on)["run"];
  EXPECT_EQ(attempts_in(run, "pair"), std::set<int>{1}) << run.dump();
  EXPECT_FALSE(get("/v1/jobs/pair").json.contains("waits_for_stops"));
}

TEST_F(ServerStartGate, ACancelledRunHoldsItsNodesForTheNextJobUntilEachAgentConfirms) {
  auto submit = [&](const std::string& name) {
    auto r = post("/v1/jobs", json{{"name", name}, {"team", "a"}, {"replicas", 2}, {"per_replica", {{"accelerators", 4}}},
                                   {"command", {"train"}}});
    ASSERT_EQ(r.status, 201) << r.body;
    ASSERT_EQ(get("/v1/jobs/" + name).json["state"], "Running");
  };
  submit("old");  // on both nodes
  const json old_running = json::array({{{"job", "old"}, {"rank", 0}, {"state", "running"}, {"attempt", 0}}});
  heartbeat("g1", old_running);
  ASSERT_EQ(post("/v1/jobs/old/cancel").status, 200);
  submit("next");  // on both nodes again, where old's replicas still run out their stop
  auto hb = heartbeat("g1", old_running);
  EXPECT_TRUE(attempts_in(hb["run"], "next").empty()) << hb.dump();
  auto waits = get("/v1/jobs/next").json["waits_for_stops"];
  ASSERT_EQ(waits.size(), 1u) << waits.dump();
  EXPECT_EQ(waits[0]["job"], "old");
  EXPECT_EQ(waits[0]["nodes"], json::array({"g1", "g2"}));
  // g1 confirms; g2 has not said anything since: next still waits, for g2 only.
  hb = heartbeat("g1");
  EXPECT_TRUE(attempts_in(hb["run"], "next").empty()) << hb.dump();
  EXPECT_EQ(get("/v1/jobs/next").json["waits_for_stops"][0]["nodes"], json::array({"g2"}));
  EXPECT_EQ(attempts_in(heartbeat("g2")["run"], "next"), std::set<int>{0});
  EXPECT_EQ(attempts_in(heartbeat("g1")["run"], "next"), std::set<int>{0});
}

TEST_F(ServerStartGate, AReplicaReportedLostFailsItsRunAndTheRestartSaysWhy) {
  auto r = post("/v1/jobs", json{{"name", "solo"}, {"team", "a"}, {"replicas", 1}, {"max_retries", 1},
                                 {"per_replica", {{"accelerators", 4}}}, {"command", {"train"}}});
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string node = get("/v1/jobs/solo").json["nodes"][0];
  heartbeat(node, json::array({{{"job", "solo"}, {"rank", 0}, {"state", "lost"}, {"attempt", 0}}}));
  auto j = get("/v1/jobs/solo").json;
  EXPECT_EQ(j["restarts"], 1) << j.dump();
  EXPECT_EQ(j["state"], "Running") << j.dump();
  EXPECT_NE(j["history"].dump().find("replica 0 was lost: it ended with its agent"), std::string::npos) << j.dump();
  // "lost" carries no exit code; an exit code with it is not asked for, and a state of another spelling is refused.
  auto bad = post("/v1/agents/" + node + "/heartbeat", json{{"replicas", {{{"job", "solo"}, {"rank", 0}, {"state", "gone"}}}}});
  EXPECT_EQ(bad.status, 400) << bad.body;
}


// A rank moved by an in-place recovery is the same run's: the rule between runs does not hold it, this one does.
class ServerStartGateInPlace : public ServerStartGate {
 protected:
  void SetUp() override {
    ServerStartGate::SetUp();
    auto r = post("/v1/jobs", json{{"name", "ring"}, {"team", "a"}, {"replicas", 2}, {"recovery", "in_place"},
                                   {"per_replica", {{"accelerators", 4}}}, {"command", {"train"}}});
    ASSERT_EQ(r.status, 201) << r.body;
    auto j = get("/v1/jobs/ring").json;
    ASSERT_EQ(j["state"], "Running") << j.dump();
    // The spare node the failed rank moves to, registered after the job took g1 and g2.
    auto reg = post("/v1/agents/register", json{{"name", "g3"}, {"instance_type", "g5.12xlarge"}, {"labels", {{"network-node-layer-3", "x"}}}});
    ASSERT_EQ(reg.status, 200) << reg.body;
    const auto& replicas = j["placement"][0]["replicas"];
    rank1_node = replicas[1]["node"];
    rank0_node = replicas[0]["node"];
    ASSERT_EQ(ranks_in(heartbeat(rank1_node)["run"]), std::set<int>{1});
    heartbeat(rank0_node, json::array({running(0)}));
    heartbeat(rank1_node, json::array({running(1)}));
  }
  static json running(int rank) { return {{"job", "ring"}, {"rank", rank}, {"state", "running"}, {"attempt", 0}}; }
  static std::set<int> ranks_in(const json& run) {
    std::set<int> out;
    for (const auto& a : run)
      if (a["job"] == "ring") out.insert(a["rank"].get<int>());
    return out;
  }
  // Fails rank 1's node the way an administrator does; the job recovers in place onto g3.
  void fail_rank1_node() {
    ASSERT_EQ(put("/v1/nodes/" + rank1_node + "/health", R"({"health": "UnschedulablePendingReboot"})").status, 200);
    auto j = get("/v1/jobs/ring").json;
    ASSERT_EQ(j["recovery"]["membership_epoch"], 1) << j.dump();
    ASSERT_EQ(j["placement"][0]["replicas"][1]["node"], "g3") << j.dump();
    ASSERT_EQ(j["restarts"], 0) << j.dump();
  }
  std::string rank0_node, rank1_node;
};

TEST_F(ServerStartGateInPlace, AMovedRankStartsOnItsNewNodeOnlyOnceItsOldProcessHasStopped) {
  fail_rank1_node();
  // The old rank 1 still runs on its failed node: g3 is not given rank 1 yet, and the job says what it waits for.
  EXPECT_TRUE(ranks_in(heartbeat("g3")["run"]).empty());
  auto waits = get("/v1/jobs/ring").json["waits_for_stops"];
  ASSERT_EQ(waits.size(), 1u) << waits.dump();
  EXPECT_EQ(waits[0]["rank"], 1);
  EXPECT_EQ(waits[0]["attempt"], 0);
  EXPECT_EQ(waits[0]["nodes"], json::array({rank1_node}));
  // The survivor is not held: rank 0 stays in its node's run list.
  EXPECT_EQ(ranks_in(heartbeat(rank0_node, json::array({running(0)}))["run"]), std::set<int>{0});
  // The failed node's agent reports it running: it is told to stop it, and g3 still waits.
  auto hb = heartbeat(rank1_node, json::array({running(1)}));
  ASSERT_EQ(hb["stop"].size(), 1u) << hb.dump();
  EXPECT_EQ(hb["stop"][0]["rank"], 1);
  EXPECT_TRUE(ranks_in(heartbeat("g3")["run"]).empty());
  // Its agent no longer reports it: g3 gets rank 1, in the same attempt.
  heartbeat(rank1_node);
  hb = heartbeat("g3");
  EXPECT_EQ(ranks_in(hb["run"]), std::set<int>{1}) << hb.dump();
  EXPECT_EQ(hb["run"][0]["attempt"], 0) << hb.dump();
  EXPECT_FALSE(get("/v1/jobs/ring").json.contains("waits_for_stops"));
}

TEST_F(ServerStartGateInPlace, AMovedRankWhoseOldNodeTimesOutStartsWithoutItsAgent) {
  // The failed node falls silent (its agent fenced itself): its timeout confirms the stop.
  for (int step = 0; step < 6; ++step) {
    advance(std::chrono::milliseconds(500));
    heartbeat(rank0_node, json::array({running(0)}));
    if (step < 5) heartbeat("g3");
  }
  ASSERT_TRUE(eventually([&] { return get("/v1/nodes/" + rank1_node).json["health"] == "UnschedulablePendingReboot"; }));
  auto j = get("/v1/jobs/ring").json;
  ASSERT_EQ(j["placement"][0]["replicas"][1]["node"], "g3") << j.dump();
  EXPECT_EQ(j["restarts"], 0) << j.dump();
  EXPECT_FALSE(j.contains("waits_for_stops")) << j.dump();
  EXPECT_EQ(ranks_in(heartbeat("g3")["run"]), std::set<int>{1});
}

TEST_F(ServerStartGateInPlace, AMovedRankWhoseOldNodeWasOutOfServiceAndFallsSilentStartsPastTheTimeout) {
  // An administrator took the node out (it is not Schedulable, so it is never timed out again) and its agent then
  // falls silent: past the heartbeat timeout it has fenced itself, and g3 gets rank 1 without waiting for the
  // job's recovery_timeout. The node's health stays as the administrator set it.
  fail_rank1_node();
  EXPECT_TRUE(ranks_in(heartbeat("g3")["run"]).empty()) << "the old rank 1 may still run";
  for (int step = 0; step < 6; ++step) {
    advance(std::chrono::milliseconds(500));
    heartbeat(rank0_node, json::array({running(0)}));
    heartbeat("g3");
  }
  ASSERT_TRUE(eventually([&] { return ranks_in(heartbeat("g3")["run"]) == std::set<int>{1}; }))
      << get("/v1/jobs/ring").body;
  auto node = get("/v1/nodes/" + rank1_node).json;
  EXPECT_EQ(node["health"], "UnschedulablePendingReboot") << node.dump();
  auto j = get("/v1/jobs/ring").json;
  EXPECT_EQ(j["restarts"], 0) << j.dump();
  EXPECT_FALSE(j.contains("waits_for_stops")) << j.dump();
}

TEST_F(ServerStartGateInPlace, AMovedRankWhoseOldNodeIsRetiredByItsReplacementWaitsForTheTimeoutSinceThen) {
  ASSERT_EQ(put("/v1/nodes/" + rank1_node + "/health", R"({"health": "UnschedulablePendingReplacement"})").status, 200);
  auto j = get("/v1/jobs/ring").json;
  ASSERT_EQ(j["placement"][0]["replicas"][1]["node"], "g3") << j.dump();
  // The replacement joins: the failed node is retired at once and its agent's credential revoked, while that agent
  // may still be stopping the old rank 1 within its stop grace (it cannot say so any more).
  auto reg = post("/v1/agents/register", json{{"name", rank1_node + "-r1"}, {"instance_type", "g5.12xlarge"},
                                              {"labels", {{"network-node-layer-3", "x"}}}, {"replaces", rank1_node}});
  ASSERT_EQ(reg.status, 200) << reg.body;
  ASSERT_EQ(get("/v1/nodes/" + rank1_node).status, 404) << "retired";
  EXPECT_TRUE(ranks_in(heartbeat("g3")["run"]).empty()) << "the retired node's agent may still run the old rank 1";
  // Past the heartbeat timeout (2 s) since the retirement, that agent, cut off, has fenced itself: g3 gets rank 1.
  for (int step = 0; step < 3; ++step) {
    advance(std::chrono::milliseconds(500));
    heartbeat(rank0_node, json::array({running(0)}));
    EXPECT_TRUE(ranks_in(heartbeat("g3")["run"]).empty()) << "within the timeout, at step " << step;
  }
  for (int step = 0; step < 4; ++step) {
    advance(std::chrono::milliseconds(500));
    heartbeat(rank0_node, json::array({running(0)}));
    heartbeat("g3");
  }
  ASSERT_TRUE(eventually([&] { return ranks_in(heartbeat("g3")["run"]) == std::set<int>{1}; })) << get("/v1/jobs/ring").body;
  EXPECT_EQ(get("/v1/jobs/ring").json["restarts"], 0);
}

TEST_F(ServerStartGateInPlace, TheNodeARankMovedToIsTheRunsForTheJobsThatCome) {
  fail_rank1_node();
  heartbeat(rank1_node);  // the old rank 1 is gone
  ASSERT_EQ(ranks_in(heartbeat("g3")["run"]), std::set<int>{1});
  heartbeat("g3", json::array({running(1)}));
  // The run is cancelled; the next job takes the two healthy nodes, rank 0's and g3, where rank 1 now runs.
  ASSERT_EQ(post("/v1/jobs/ring/cancel").status, 200);
  auto r = post("/v1/jobs", json{{"name", "next"}, {"team", "a"}, {"replicas", 2}, {"per_replica", {{"accelerators", 4}}},
                                 {"command", {"train"}}});
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_EQ(get("/v1/jobs/next").json["state"], "Running");
  heartbeat(rank0_node);
  heartbeat(rank1_node);
  auto hb = heartbeat("g3", json::array({running(1)}));
  EXPECT_TRUE(attempts_in(hb["run"], "next").empty()) << "rank 1 of ring still runs on g3: " << hb.dump();
  auto waits = get("/v1/jobs/next").json["waits_for_stops"];
  ASSERT_EQ(waits.size(), 1u) << waits.dump();
  EXPECT_EQ(waits[0]["nodes"], json::array({"g3"})) << waits.dump();
  EXPECT_EQ(attempts_in(heartbeat("g3")["run"], "next"), std::set<int>{0});
}

}  // namespace
}  // namespace allot::server::test::server_start_gate_test
