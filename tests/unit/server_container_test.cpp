// Jobs in containers on the server's side (docs/jobs.md, "Images"): the container in a replica's assignment with
// its team's settings, the host-path allow-list at submission, replicas that pull their image (neither running nor
// exited, an event, `describe`), and a pull that fails: the attempt fails with "image pull", charged to the job's
// retries, never to the node.
#include "server_test_fixture.h"

namespace allot::server::test::server_container_test {
namespace {

using nlohmann::json;

class ServerContainer : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    auto r = post("/v1/apply", R"({"teams": [
        {"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 2}],
         "containers": {"host_paths": ["/datasets", "/scratch/a/"], "capabilities": ["NET_RAW", "CAP_IPC_LOCK"],
                        "registry_auth_file": "/etc/allot/auth/a.json"}},
        {"name": "b", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 1}]}]})");
    ASSERT_EQ(r.status, 200) << r.body;
    for (const char* n : {"g1", "g2"}) {
      auto reg = post("/v1/agents/register", json{{"name", n}, {"instance_type", "g5.12xlarge"}, {"labels", {{"network-node-layer-3", "x"}}}});
      ASSERT_EQ(reg.status, 200) << reg.body;
    }
  }
  json heartbeat(const std::string& node, json replicas = json::array()) {
    auto r = post("/v1/agents/" + node + "/heartbeat", json{{"replicas", replicas}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json;
  }
  static json image_job(const std::string& name, const std::string& team = "a", int replicas = 1) {
    return {{"name", name}, {"team", team}, {"replicas", replicas}, {"max_retries", 1},
            {"per_replica", {{"accelerators", 4}, {"memory_gib", 64}}}, {"image", "registry.example.com/ml/train:1.4"}};
  }
  json assignment_of(const json& answer, const std::string& job) {
    for (const auto& a : answer["run"])
      if (a["job"] == job) return a;
    return nullptr;
  }
  std::string node_of(const std::string& job) { return get("/v1/jobs/" + job).json["nodes"][0].get<std::string>(); }
  json events_of(const std::string& job) {
    json out = json::array();
    const json all = get("/v1/events?since=0").json["events"];
    for (const auto& e : all)
      if (e.value("job", "") == job) out.push_back(e);
    return out;
  }
};

TEST_F(ServerContainer, TheAssignmentCarriesTheImageAndTheTeamsSettings) {
  json spec = image_job("train");
  spec["volumes"] = {{{"host_path", "/datasets/imagenet"}, {"path", "/data"}, {"read_only", true}}};
  auto r = post("/v1/jobs", spec);
  ASSERT_EQ(r.status, 201) << r.body;
  const json a = assignment_of(heartbeat(node_of("train")), "train");
  ASSERT_TRUE(a.is_object()) << "no assignment";
  EXPECT_EQ(a["command"], json::array()) << "no command: the image's entrypoint runs";
  EXPECT_EQ(a["container"], (json{{"image", "registry.example.com/ml/train:1.4"},
                                  {"pull_policy", "IfNotPresent"},
                                  {"shm_mib", 16384},  // a quarter of 64 GiB
                                  {"volumes", {{{"host_path", "/datasets/imagenet"}, {"path", "/data"}, {"read_only", true}}}},
                                  {"cap_add", {"NET_RAW", "IPC_LOCK"}},
                                  {"auth_file", "/etc/allot/auth/a.json"}}))
      << a.dump();
  // The job's description shows the container as the spec resolved it.
  auto j = get("/v1/jobs/train").json;
  EXPECT_EQ(j["container"]["image"], "registry.example.com/ml/train:1.4");
  EXPECT_EQ(j["container"]["pull_policy"], "IfNotPresent");
  EXPECT_FALSE(j["container"].contains("shm_mib"));
}

TEST_F(ServerContainer, ATeamWithoutSettingsGetsNoCapabilitiesAndNoAuthFileAndTheSpecsShmSize) {
  json spec = image_job("plain", "b");
  spec["image"] = "busybox";  // no tag: Always, as Kubernetes defaults it
  spec["shm_size_gib"] = 0.5;
  spec["command"] = {"sh", "-c", "true"};
  ASSERT_EQ(post("/v1/jobs", spec).status, 201);
  const json a = assignment_of(heartbeat(node_of("plain")), "plain");
  ASSERT_TRUE(a.is_object());
  EXPECT_EQ(a["command"], json({"sh", "-c", "true"}));
  EXPECT_EQ(a["container"]["pull_policy"], "Always");
  EXPECT_EQ(a["container"]["shm_mib"], 512);
  EXPECT_EQ(a["container"]["cap_add"], json::array());
  EXPECT_FALSE(a["container"].contains("auth_file")) << a.dump();
  // A bare process has no container at all.
  ASSERT_EQ(post("/v1/jobs", json{{"name", "bare"}, {"team", "b"}, {"per_replica", {{"accelerators", 1}}}, {"command", "true"}}).status, 201);
  for (const std::string n : {"g1", "g2"})
    if (auto b = assignment_of(heartbeat(n), "bare"); b.is_object()) EXPECT_FALSE(b.contains("container")) << b.dump();
}

TEST_F(ServerContainer, AVolumeOutsideTheTeamsHostPathsIsRefusedNamingTheVolumeAndTheAllowedList) {
  json spec = image_job("out");
  spec["volumes"] = {{{"host_path", "/datasets/x"}, {"path", "/x"}}, {{"host_path", "/scratch/ab"}, {"path", "/s"}}};
  auto r = post("/v1/jobs", spec);
  ASSERT_EQ(r.status, 400) << r.body;
  const std::string msg = r.json["error"]["message"].get<std::string>();
  for (const char* part : {"volume 1", "/scratch/ab", "/datasets, /scratch/a", "team a"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
  EXPECT_EQ(get("/v1/jobs/out").status, 404) << "a refused job changes nothing";
  // Component-wise and after normalisation: /scratch/a/./b/ is inside /scratch/a.
  spec["volumes"] = {{{"host_path", "/scratch/a/./b/"}, {"path", "/s"}}};
  r = post("/v1/jobs", spec);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(get("/v1/jobs/out").json["container"]["volumes"][0]["host_path"], "/scratch/a/b");
  // Team b has no host paths: no host volumes at all.
  json other = image_job("other", "b");
  other["volumes"] = {{{"host_path", "/datasets"}, {"path", "/d"}}};
  r = post("/v1/jobs", other);
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("may mount no host paths"), std::string::npos) << r.body;
  // '..' is refused when read, before any allow-list.
  spec["name"] = "dots";
  spec["volumes"] = {{{"host_path", "/datasets/../etc"}, {"path", "/e"}}};
  r = post("/v1/jobs", spec);
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("'..'"), std::string::npos) << r.body;
}

TEST_F(ServerContainer, APullingReplicaIsNeitherRunningNorExitedAndShowsInEventsAndDescribe) {
  ASSERT_EQ(post("/v1/jobs", image_job("pull")).status, 201);
  const std::string node = node_of("pull");
  const json pulling = {{"job", "pull"}, {"rank", 0}, {"state", "pulling"}, {"attempt", 0}};
  auto hb = heartbeat(node, json::array({pulling}));
  EXPECT_TRUE(hb["stop"].empty()) << "a pulling replica of the current run is not stopped: " << hb.dump();
  auto j = get("/v1/jobs/pull").json;
  EXPECT_EQ(j["state"], "Running");
  EXPECT_EQ(j["pulling_image_on"], json::array({node})) << j.dump();
  // Reported pulling for a long time: nothing times it out, and the event is written once per attempt.
  for (int i = 0; i < 5; ++i) {
    advance(std::chrono::milliseconds(1000));
    heartbeat(node, json::array({pulling}));
  }
  j = get("/v1/jobs/pull").json;
  EXPECT_EQ(j["state"], "Running");
  EXPECT_EQ(j["restarts"], 0);
  const json events = events_of("pull");
  int pulls = 0;
  for (const auto& e : events)
    if (e["kind"] == "pulling") {
      ++pulls;
      EXPECT_EQ(e["message"], "pulling image registry.example.com/ml/train:1.4 on node " + node + " (attempt 0)");
      EXPECT_EQ(e["node"], node);
    }
  EXPECT_EQ(pulls, 1) << events.dump();
  // Started: no longer pulling.
  heartbeat(node, json::array({{{"job", "pull"}, {"rank", 0}, {"state", "running"}, {"attempt", 0}}}));
  EXPECT_FALSE(get("/v1/jobs/pull").json.contains("pulling_image_on"));
  // A pulling replica of a job no longer placed there is told to stop, like a running one.
  ASSERT_EQ(post("/v1/jobs/pull/cancel").status, 200);
  hb = heartbeat(node, json::array({pulling}));
  ASSERT_EQ(hb["stop"].size(), 1u) << hb.dump();
}

TEST_F(ServerContainer, AnImagePullFailureFailsTheAttemptChargedToTheJobNeverToTheNode) {
  ASSERT_EQ(post("/v1/jobs", image_job("nopull", "a", 2)).status, 201);  // two ranks of 4 GPUs: both nodes
  auto j = get("/v1/jobs/nopull").json;
  ASSERT_EQ(j["nodes"].size(), 2u) << j.dump();
  const std::string node = j["placement"][0]["replicas"][0]["node"];
  std::map<std::string, size_t> history_before;
  for (const std::string n : {"g1", "g2"}) history_before[n] = get("/v1/nodes/" + n).json["health_history"].size();
  const json failed = {{"job", "nopull"}, {"rank", 0}, {"state", "exited"}, {"attempt", 0},
                       {"failure", {{"reason", "image_pull"},
                                    {"message", "registry.example.com/ml/train:1.4: manifest unknown\n\x1b[31mforged"}}}};
  heartbeat(node, json::array({failed}));
  // Not held for the peer node (a multi-node exit otherwise is): the run failed at once, and was restarted.
  j = get("/v1/jobs/nopull").json;
  EXPECT_EQ(j["restarts"], 1) << j.dump();
  const std::string history = j["history"].dump();
  EXPECT_NE(history.find("image pull: registry.example.com/ml/train:1.4: manifest unknown\\\\x0a\\\\x1b[31mforged"), std::string::npos)
      << "the registry's answer is kept, its control characters escaped: " << history;
  const json restart = j["restart_history"][0];
  EXPECT_EQ(restart["cause"].get<std::string>().rfind("image pull: ", 0), 0u) << restart.dump();
  EXPECT_EQ(restart["node"], "") << "no node is blamed";
  // The node stays Schedulable, with no suspicion and nothing in its health.
  for (const std::string n : {"g1", "g2"}) {
    auto v = get("/v1/nodes/" + n).json;
    EXPECT_EQ(v["health"], "Schedulable") << v.dump();
    EXPECT_FALSE(v.contains("suspect")) << v.dump();
    EXPECT_EQ(v["health_history"].size(), history_before[n]) << v.dump();
  }
  // The retry fails the same way: max_retries 1 is used up, the job fails with the reason.
  for (const std::string n : {"g1", "g2"}) heartbeat(n);  // attempt 0 confirmed stopped everywhere
  j = get("/v1/jobs/nopull").json;
  const std::string again = j["placement"][0]["replicas"][0]["node"];
  json retry = failed;
  retry["attempt"] = 1;
  heartbeat(again, json::array({retry}));
  j = get("/v1/jobs/nopull").json;
  EXPECT_EQ(j["state"], "Failed") << j.dump();
  EXPECT_EQ(j["reason"].get<std::string>().find("image pull: registry.example.com/ml/train:1.4: manifest unknown"), 0u)
      << j["reason"].dump();
  for (const std::string n : {"g1", "g2"}) EXPECT_EQ(get("/v1/nodes/" + n).json["health"], "Schedulable");
}

TEST_F(ServerContainer, AnOutOfMemoryEndFailsTheRunAsTheJobsFaultNamingTheLimit) {
  // The same rule as an image pull (server/lifecycle/agents.cpp, apply_exits): a failure the agent names is the job's. Two
  // ranks on two nodes, so an unnamed exit would be held for the peer; this one is not.
  ASSERT_EQ(post("/v1/jobs", image_job("hog", "a", 2)).status, 201);
  auto j = get("/v1/jobs/hog").json;
  ASSERT_EQ(j["nodes"].size(), 2u) << j.dump();
  const std::string node = j["placement"][0]["replicas"][1]["node"];
  // The node says it enforces memory limits; its view shows it.
  auto hb = post("/v1/agents/" + node + "/heartbeat",
                 json{{"replicas", json::array()}, {"health", {{"limits_enforced", {{"memory", true}, {"cpu", false}}}}}});
  ASSERT_EQ(hb.status, 200) << hb.body;
  EXPECT_EQ(get("/v1/nodes/" + node).json["limits_enforced"], (json{{"memory", true}, {"cpu", false}}));
  const json oom = {{"job", "hog"}, {"rank", 1}, {"state", "exited"}, {"attempt", 0}, {"exit_code", 137},
                    {"failure", {{"reason", "oom_killed"}, {"memory_limit_mib", 65536}}}};
  heartbeat(node, json::array({oom}));
  j = get("/v1/jobs/hog").json;
  EXPECT_EQ(j["restarts"], 1) << "failed at once, not held for the peer: " << j.dump();
  EXPECT_EQ(j["retries_used"], 1) << j.dump();
  const std::string why = "OOMKilled: replica 1 used more than its memory limit of 65536 MiB";
  EXPECT_EQ(j["restart_history"][0]["cause"].get<std::string>().rfind(why, 0), 0u) << j["restart_history"].dump();
  EXPECT_EQ(j["restart_history"][0]["node"], "") << "no node is blamed";
  bool event = false;
  for (const auto& e : events_of("hog")) event |= e["message"].get<std::string>().find(why) != std::string::npos;
  EXPECT_TRUE(event) << events_of("hog").dump();
  for (const std::string n : {"g1", "g2"}) {
    auto v = get("/v1/nodes/" + n).json;
    EXPECT_EQ(v["health"], "Schedulable") << v.dump();
    EXPECT_FALSE(v.contains("suspect")) << v.dump();
  }
  // The retry ends the same way: max_retries 1 is used up, the job fails with the reason.
  for (const std::string n : {"g1", "g2"}) heartbeat(n);
  j = get("/v1/jobs/hog").json;
  json again = oom;
  again["attempt"] = 1;
  heartbeat(j["placement"][0]["replicas"][1]["node"], json::array({again}));
  j = get("/v1/jobs/hog").json;
  EXPECT_EQ(j["state"], "Failed") << j.dump();
  EXPECT_EQ(j["reason"].get<std::string>().rfind(why, 0), 0u) << j["reason"].dump();
}

TEST_F(ServerContainer, AFailureOfAnUnknownReasonOrOnAReplicaNotExitedIsRefused) {
  ASSERT_EQ(post("/v1/jobs", image_job("bad")).status, 201);
  const std::string node = node_of("bad");
  auto r = post("/v1/agents/" + node + "/heartbeat",
                json{{"replicas", {{{"job", "bad"}, {"rank", 0}, {"state", "exited"}, {"failure", {{"reason", "disk_full"}}}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("image_pull"), std::string::npos) << "the allowed reasons are named: " << r.body;
  r = post("/v1/agents/" + node + "/heartbeat",
           json{{"replicas", {{{"job", "bad"}, {"rank", 0}, {"state", "running"}, {"failure", {{"reason", "image_pull"}}}}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(get("/v1/jobs/bad").json["state"], "Running");
}

}  // namespace
}  // namespace allot::server::test::server_container_test
