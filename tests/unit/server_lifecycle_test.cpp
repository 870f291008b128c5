// Node lifecycle in the server (server/lifecycle/node_lifecycle.h, docs/resiliency.md): a failed check acted on after the
// fault window, the reboot order and the return; a held exit charged to a silent peer; a replacement that retires
// the failed node and waits for its deep check. The clock is the fixture's: nothing here waits on wall time.
#include "server_test_fixture.h"

namespace allot::server::test::server_lifecycle_test {
namespace {

using nlohmann::json;

class ServerLifecycle : public ServerTest {
 protected:
  void SetUp() override {
    options_.provisioner = "true";  // asked, does nothing: the test registers the replacement itself
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 3}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (const char* n : {"g1", "g2", "g3"}) ASSERT_EQ(reg(n).status, 200);
  }
  Response reg(const std::string& name, const std::string& replaces = "") {
    json body = {{"name", name}, {"instance_type", "ml.g5.12xlarge"}, {"labels", {{"network-node-layer-3", "x"}}},
                 {"heartbeat_interval_ms", 500}, {"boot", 1}};
    if (!replaces.empty()) body["replaces"] = replaces;
    return post("/v1/agents/register", body);
  }
  static json check(const std::string& status, const std::string& on_failure = "reboot") {
    return {{"name", "gpu"}, {"status", status}, {"detail", status == "failed" ? "XID 13 on GPU 0" : "ok"}, {"on_failure", on_failure}, {"at_ms", 1}};
  }
  json beat(const std::string& node, json health = nullptr, json replicas = json::array()) {
    json body = {{"replicas", replicas}};
    if (!health.is_null()) body["health"] = health;
    auto r = post("/v1/agents/" + node + "/heartbeat", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json;
  }
  static json healthy(int boot) { return {{"checks", {check("passed")}}, {"configured", 1}, {"boot", boot}}; }
  std::string health_of(const std::string& node) { return get("/v1/nodes/" + node).json.value("health", ""); }
  void submit(const std::string& name, int replicas) {
    auto r = post("/v1/jobs", json{{"name", name}, {"team", "a"}, {"replicas", replicas}, {"max_retries", 2},
                                   {"per_replica", {{"accelerators", 4}}}, {"command", {"python", "train.py"}}});
    ASSERT_EQ(r.status, 201) << r.body;
  }
};

TEST_F(ServerLifecycle, AFailedCheckRebootsTheNodeAfterTheWindowAndItsReturnNeedsPassingChecks) {
  submit("j", 1);
  const std::string node = get("/v1/jobs/j").json["nodes"][0];
  beat(node, {{"checks", {check("failed")}}, {"configured", 1}, {"boot", 1}});
  // Suspect at once (nothing new lands there), acted on only when the window ends.
  auto n = get("/v1/nodes/" + node).json;
  EXPECT_EQ(n["health"], "Schedulable");
  EXPECT_TRUE(n.contains("suspect")) << n.dump();
  EXPECT_EQ(get("/v1/jobs/j").json["restarts"], 0);
  for (const char* other : {"g1", "g2", "g3"}) beat(other, other == node ? json(nullptr) : healthy(1));
  advance(std::chrono::milliseconds(1100));
  for (const char* other : {"g1", "g2", "g3"}) beat(other, other == node ? json(nullptr) : healthy(1));
  ASSERT_TRUE(eventually([&] { return health_of(node) == "UnschedulablePendingReboot"; }));
  auto j = get("/v1/jobs/j").json;
  EXPECT_EQ(j["restarts"], 1);
  EXPECT_NE(j["nodes"][0], node);
  EXPECT_NE(j["restart_history"][0]["cause"].get<std::string>().find("XID 13 on GPU 0"), std::string::npos) << j.dump();
  // The agent is told to reboot until it reports a new boot; the same fault after it escalates elsewhere (e2e).
  EXPECT_EQ(beat(node, {{"checks", {check("failed")}}, {"configured", 1}, {"boot", 1}}).value("reboot", false), true);
  EXPECT_EQ(health_of(node), "UnschedulablePendingReboot");
  // A new boot without every check reported is not yet enough.
  auto after = beat(node, {{"checks", json::array()}, {"configured", 1}, {"boot", 2}});
  EXPECT_FALSE(after.value("reboot", false));
  EXPECT_EQ(health_of(node), "UnschedulablePendingReboot");
  beat(node, healthy(2));
  EXPECT_EQ(health_of(node), "Schedulable");
  auto history = get("/v1/nodes/" + node).json["health_history"].dump();
  EXPECT_NE(history.find("the reboot cleared the fault"), std::string::npos) << history;
}

TEST_F(ServerLifecycle, AnExitWhileAPeerNodeIsSilentIsChargedToThatNodeOnce) {
  submit("pair", 2);
  auto placed = get("/v1/jobs/pair").json["placement"][0]["replicas"];
  const std::string a = placed[0]["node"], b = placed[1]["node"];
  // Rank 0 dies of its peer first; the exit is held while b might still turn out to be fine.
  beat(a, nullptr, json::array({{{"job", "pair"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 1}, {"attempt", 0}}}));
  EXPECT_EQ(get("/v1/jobs/pair").json["state"], "Running");
  // b misses its heartbeats (interval 500 ms): suspect after 1.2 s, and the held exit is charged to it.
  for (int step = 0; step < 3; ++step) {
    advance(std::chrono::milliseconds(500));
    for (const char* n : {"g1", "g2", "g3"})
      if (b != n) beat(n);
  }
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/pair").json["restarts"] == 1; }));
  auto j = get("/v1/jobs/pair").json;
  const std::string cause = j["restart_history"][0]["cause"];
  EXPECT_NE(cause.find("node " + b + " is failing"), std::string::npos) << cause;
  EXPECT_NE(cause.find("replica 0 exited with code 1"), std::string::npos) << cause;
  EXPECT_EQ(j["restart_history"][0]["node"], b) << "charged to the failing node, not the job: " << j.dump();
  // Never placed on the node that missed its heartbeat; and its timeout later costs the job nothing more.
  if (j["state"] == "Running") {
    for (const auto& r : j["placement"][0]["replicas"]) EXPECT_NE(r["node"], b);
  }
  for (int step = 0; step < 4; ++step) {
    advance(std::chrono::milliseconds(500));
    for (const char* n : {"g1", "g2", "g3"})
      if (b != n) beat(n);
  }
  ASSERT_TRUE(eventually([&] { return health_of(b) == "UnschedulablePendingReboot"; }));
  EXPECT_EQ(get("/v1/jobs/pair").json["restarts"], 1);
  // The charge is journaled with the restart: a restarted server rebuilds it from the record.
  restart();
  j = get("/v1/jobs/pair").json;
  ASSERT_EQ(j["restart_history"].size(), 1u) << j.dump();
  EXPECT_EQ(j["restart_history"][0]["node"], b) << j.dump();
}

// A GPU that falls off the bus kills the process before any check has run: the exit arrives first, while the agent's
// checks after it run (exit_checks_running). The exit waits for them; the fault they find fails the node, which
// restarts the job once, charged to the node; the job never goes back to that node.
TEST_F(ServerLifecycle, AFaultThatKillsTheProcessFirstIsOneRestartChargedToTheNode) {
  submit("solo", 1);
  const std::string node = get("/v1/jobs/solo").json["nodes"][0];
  json judging = healthy(1);
  judging["exit_checks_running"] = true;
  beat(node, judging, json::array({{{"job", "solo"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 137}, {"attempt", 0}}}));
  auto j = get("/v1/jobs/solo").json;
  EXPECT_EQ(j["state"], "Running") << "held until the node's health is known: " << j.dump();
  EXPECT_EQ(j["restarts"], 0);
  auto n = get("/v1/nodes/" + node).json;
  EXPECT_TRUE(n.contains("suspect")) << n.dump();
  // The checks ran: XID 79, a replacement. The exit is still held: the node's fault takes it when its window ends.
  beat(node, {{"checks", {check("failed", "replace")}}, {"configured", 1}, {"boot", 1}, {"exit_checks_running", false}});
  EXPECT_EQ(get("/v1/jobs/solo").json["restarts"], 0);
  advance(std::chrono::milliseconds(1100));
  for (const char* other : {"g1", "g2", "g3"}) beat(other, other == node ? json(nullptr) : healthy(1));
  ASSERT_TRUE(eventually([&] { return health_of(node) == "UnschedulablePendingReplacement"; }));
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/solo").json["state"] == "Running"; }));
  j = get("/v1/jobs/solo").json;
  EXPECT_EQ(j["restarts"], 1) << j.dump();
  EXPECT_NE(j["nodes"][0], node);
  EXPECT_EQ(j["restart_history"][0]["node"], node) << "charged to the node: " << j.dump();
  // The exit reported again (its heartbeat's answer was lost) changes nothing: it belongs to the attempt that ended.
  beat(node, nullptr, json::array({{{"job", "solo"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 137}, {"attempt", 0}}}));
  EXPECT_EQ(get("/v1/jobs/solo").json["restarts"], 1);
}

// The same abnormal exit on a node whose checks then pass is the job's own failure, judged once the node has reported
// healthy: until then the node is suspect, so the restart cannot land on it before its health is known.
TEST_F(ServerLifecycle, AnAbnormalExitOnAHealthyNodeIsTheJobsOnceItsChecksPass) {
  submit("solo", 1);
  const std::string node = get("/v1/jobs/solo").json["nodes"][0];
  json judging = healthy(1);
  judging["exit_checks_running"] = true;
  beat(node, judging, json::array({{{"job", "solo"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 1}, {"attempt", 0}}}));
  advance(std::chrono::milliseconds(3000));  // far past any peer hold: still held, the checks have not reported
  for (const char* other : {"g1", "g2", "g3"}) beat(other, other == node ? judging : healthy(1));
  EXPECT_EQ(get("/v1/jobs/solo").json["state"], "Running");
  EXPECT_TRUE(get("/v1/nodes/" + node).json.contains("suspect"));
  beat(node, healthy(1));
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/solo").json["restarts"] == 1; }));
  auto j = get("/v1/jobs/solo").json;
  EXPECT_NE(j["restart_history"][0]["cause"].get<std::string>().find("replica 0 exited with code 1"), std::string::npos) << j.dump();
  EXPECT_EQ(j["restart_history"][0]["node"], "") << "the job's own failure: " << j.dump();
  ASSERT_TRUE(eventually([&] { return !get("/v1/nodes/" + node).json.contains("suspect"); }));
  EXPECT_EQ(health_of(node), "Schedulable");
}

TEST_F(ServerLifecycle, AReplacementRetiresTheFailedNodeAndWaitsForItsDeepCheck) {
  beat("g1", {{"checks", {check("failed", "replace")}}, {"configured", 1}, {"boot", 1}});
  advance(std::chrono::milliseconds(1100));
  beat("g2");
  beat("g3");
  ASSERT_TRUE(eventually([&] { return health_of("g1") == "UnschedulablePendingReplacement"; }));
  // Only a node waiting for a replacement can be replaced, and only under a new name.
  EXPECT_EQ(reg("g2-r1", "g2").status, 409);
  EXPECT_EQ(reg("g1-r1", "g1").status, 200);
  EXPECT_EQ(get("/v1/nodes/g1").status, 404) << "the failed node is retired";
  EXPECT_EQ(health_of("g1-r1"), "Unschedulable");
  EXPECT_EQ(get("/v1/nodes/g1-r1").json["replaces"], "g1");
  EXPECT_TRUE(beat("g1-r1", healthy(1)).value("deep_check", false));
  beat("g1-r1", {{"checks", {check("passed")}}, {"configured", 1}, {"boot", 1}, {"deep_check", {{"status", "passed"}, {"detail", "8 rounds"}}}});
  EXPECT_EQ(health_of("g1-r1"), "Schedulable");
  // The retired node's agent cannot come back under its old name.
  credentials_.erase("g1");
  EXPECT_EQ(reg("g1").status, 409);
  // A malformed health report is refused whole.
  auto bad = post("/v1/agents/g2/heartbeat", json{{"replicas", json::array()}, {"health", {{"checks", {{{"name", "x"}, {"status", "fine"}}}}}}});
  EXPECT_EQ(bad.status, 400) << bad.body;
}

// The GPU fault that kills rank 0 first, on a two-node job: its exit was reported, so when the node's fault restarts
// the job its stop there is known. The replacement may register (retiring the node and cutting its agent off) before
// the peer's stop is confirmed; the new run then waits for the peer only, not for the retired node's agent to have
// fenced itself (the heartbeat timeout).
TEST_F(ServerLifecycle, ARestartWaitsOnlyForThePeerWhenTheFailedNodesRankHadExitedBeforeItsReplacementCame) {
  submit("pair", 2);
  auto placed = get("/v1/jobs/pair").json["placement"][0]["replicas"];
  const std::string a = placed[0]["node"], b = placed[1]["node"];
  const json rank1 = {{"job", "pair"}, {"rank", 1}, {"state", "running"}, {"attempt", 0}};
  beat(b, healthy(1), json::array({rank1}));
  json judging = healthy(1);
  judging["exit_checks_running"] = true;
  beat(a, judging, json::array({{{"job", "pair"}, {"rank", 0}, {"state", "exited"}, {"exit_code", 137}, {"attempt", 0}}}));
  beat(a, {{"checks", {check("failed", "replace")}}, {"configured", 1}, {"boot", 1}, {"exit_checks_running", false}});
  advance(std::chrono::milliseconds(1100));
  for (const char* n : {"g1", "g2", "g3"})
    if (a != n) beat(n, healthy(1), n == b ? json::array({rank1}) : json::array());
  ASSERT_TRUE(eventually([&] { return health_of(a) == "UnschedulablePendingReplacement"; }));
  auto j = get("/v1/jobs/pair").json;
  ASSERT_EQ(j["restarts"], 1) << j.dump();
  ASSERT_EQ(j["state"], "Running") << j.dump();
  // It waits for b's rank 1 only: a's rank 0 was reported exited.
  ASSERT_TRUE(j.contains("waits_for_stops")) << j.dump();
  EXPECT_EQ(j["waits_for_stops"][0]["nodes"], json::array({b})) << j.dump();
  // The replacement registers before b's stop is confirmed: a leaves the cluster with its agent live.
  ASSERT_EQ(reg(a + "-r1", a).status, 200);
  beat(b, healthy(1));  // rank 1 has stopped
  j = get("/v1/jobs/pair").json;
  EXPECT_FALSE(j.contains("waits_for_stops")) << "nothing of the old run can still run: " << j.dump();
  for (const auto& n : j["nodes"]) {
    bool listed = false;
    const json answer = beat(n.get<std::string>(), healthy(1));
    for (const auto& entry : answer["run"]) listed |= entry["job"] == "pair";
    EXPECT_TRUE(listed) << n << " should run pair's new attempt at once: " << answer.dump() << " " << j.dump();
  }
}

}  // namespace
}  // namespace allot::server::test::server_lifecycle_test
