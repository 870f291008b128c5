// EC2 topology on live nodes through the server (docs/topology.md, "Live nodes"; POST /v1/topology/apply and the
// registration's network_layers): only an admin applies; the change is one journal record that a restart replays,
// from the journal and from a snapshot; bad input changes nothing; a node that is down takes its layers too; an
// agent's own layers are checked by the same rule.
#include "server_test_fixture.h"

namespace allot::server::test::server_topology_apply_test {
namespace {

using nlohmann::json;

const std::string kL3 = "topology.k8s.aws/network-node-layer-3";
const std::string kL4 = "topology.k8s.aws/network-node-layer-4";

class ServerTopologyApply : public ServerTest {
 protected:
  // small_cluster's n1, n2 and two nodes that carry their instance ids: s1 (static) and g1 (an agent's).
  void cluster() {
    small_cluster();
    ASSERT_EQ(post("/v1/nodes", R"([{"name": "s1", "instance_type": "ml.g5.8xlarge",
                                     "labels": {"allot.dev/instance-id": "i-0s1", "network-node-layer-3": "old"}}])").status,
              201);
    auto r = post("/v1/agents/register", json{{"name", "g1"}, {"instance_type", "ml.g5.8xlarge"}, {"address", "127.0.0.1"},
                                               {"labels", {{"allot.dev/instance-id", "i-0g1"}}}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  static json entry(const std::string& id, std::vector<std::string> layers) {
    return {{"instance_id", id}, {"layers", layers}};
  }
  static json body(std::vector<json> entries) { return {{"instances", entries}}; }
  json labels(const std::string& node) { return get("/v1/nodes/" + node).json["labels"]; }
  size_t layer_records() {
    size_t n = 0;
    for (const auto& r : journal_->records()) n += std::holds_alternative<store::SetNetworkLayers>(r.op);
    return n;
  }
};

TEST_F(ServerTopologyApply, AnAdminAppliesByInstanceIdAsOneRecordThatARestartReplays) {
  cluster();
  // A job running on g1 before the change stays where it is.
  ASSERT_EQ(post("/v1/jobs", job("steady")).status, 201);
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/steady").json["state"] == "Running"; }));
  const json placement = get("/v1/jobs/steady").json["placement"];

  auto r = post("/v1/topology/apply", body({entry("i-0s1", {"nn-1", "nn-2", "nn-3a"}), entry("i-0g1", {"nn-1", "nn-2", "nn-3a", "nn-4a"}),
                                            entry("i-0elsewhere", {"nn-1", "nn-2", "nn-3b"})}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["changed"], 2);
  EXPECT_EQ(r.json["unknown"], json({"i-0elsewhere"}));
  ASSERT_EQ(r.json["nodes"].size(), 2u);
  EXPECT_EQ(r.json["nodes"][0]["node"], "s1");
  EXPECT_EQ(r.json["nodes"][1]["node"], "g1");
  EXPECT_EQ(labels("s1")[kL3], "nn-3a");
  EXPECT_EQ(labels("g1")[kL4], "nn-4a");
  EXPECT_EQ(layer_records(), 1u) << "one record for the whole apply";
  auto ev = get("/v1/events?since=0&limit=1000").json["events"];
  bool seen = false;
  for (const auto& e : ev) seen |= e["message"].get<std::string>().find("network layers set on 2 nodes: s1 (nn-1/nn-2/nn-3a)") == 0;
  EXPECT_TRUE(seen) << ev.dump();
  EXPECT_EQ(get("/v1/jobs/steady").json["placement"], placement);
  EXPECT_EQ(get("/v1/jobs/steady").json["state"], "Running");
  // The topology tree shows the new domains.
  EXPECT_NE(get("/v1/topology").body.find("nn-4a"), std::string::npos);

  // The same file again changes nothing and writes no record.
  r = post("/v1/topology/apply", body({entry("i-0s1", {"nn-1", "nn-2", "nn-3a"})}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["changed"], 0);
  EXPECT_EQ(r.json["nodes"][0]["changed"], false);
  EXPECT_EQ(layer_records(), 1u);

  // Killed after the answer: the journal has it.
  restart();
  EXPECT_EQ(labels("s1")[kL3], "nn-3a");
  EXPECT_EQ(labels("g1")[kL4], "nn-4a");
  EXPECT_EQ(get("/v1/jobs/steady").json["placement"], placement);
}

TEST_F(ServerTopologyApply, OnlyAnAdminMayApply) {
  cluster();
  for (const char* role : {"member", "viewer"}) {
    SCOPED_TRACE(role);
    auto r = post_as(bearer({{"role", role}, {"teams", {"a"}}}), "/v1/topology/apply", body({entry("i-0s1", {"p", "q", "r"})}));
    EXPECT_EQ(r.status, 403) << r.body;
  }
  // An agent's own credential neither.
  EXPECT_EQ(post_as(credentials_.at("g1"), "/v1/topology/apply", body({entry("i-0g1", {"p", "q", "r"})})).status, 403);
  EXPECT_EQ(labels("s1")[kL3], "old");
  EXPECT_EQ(layer_records(), 0u);
}

TEST_F(ServerTopologyApply, BadInputIsRefusedWithWhatIsWrongAndChangesNothing) {
  cluster();
  struct Case {
    std::string body;
    int status;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"{not json", 400, "not valid JSON"},
           {R"({"instances": []})", 400, "non-empty array"},
           {body({entry("i-0s1", {"nn-1", "nn-2", "nn-3a"}), entry("i-0g1", {"nn-1", ""})}).dump(), 400,
            "instances[1] (i-0g1): network layers: 2 given"},
           {body({entry("i-0s1", {"nn-1", "nn-2", "nn-3a"}), entry("i-0s1", {"nn-1", "nn-2", "nn-3b"})}).dump(), 400,
            "appears more than once"},
           {body({entry("i-0nobody", {"nn-1", "nn-2", "nn-3a"})}).dump(), 404, "none of the 1 instance ids (i-0nobody)"},
       }) {
    SCOPED_TRACE(c.body);
    auto r = post("/v1/topology/apply", c.body);
    EXPECT_EQ(r.status, c.status) << r.body;
    EXPECT_NE(r.body.find(c.says), std::string::npos) << r.body;
  }
  EXPECT_EQ(labels("s1")[kL3], "old");
  EXPECT_EQ(layer_records(), 0u);
}

// A node that is down (its agent stopped heartbeating) is still a node of the cluster: it takes its layers, and
// has them when its agent comes back.
TEST_F(ServerTopologyApply, ANodeThatIsDownTakesItsLayersAndKeepsThemWhenItComesBack) {
  cluster();
  advance(options_.heartbeat_timeout + std::chrono::seconds(1));
  ASSERT_TRUE(eventually([&] { return get("/v1/nodes/g1").json["health"] != "Schedulable"; })) << get("/v1/nodes/g1").body;
  auto r = post("/v1/topology/apply", body({entry("i-0g1", {"nn-1", "nn-2", "nn-3d"})}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(labels("g1")[kL3], "nn-3d");
  ASSERT_EQ(post("/v1/agents/g1/heartbeat", json{{"replicas", json::array()}}).status, 200);
  ASSERT_TRUE(eventually([&] { return get("/v1/nodes/g1").json["health"] == "Schedulable"; }));
  EXPECT_EQ(labels("g1")[kL3], "nn-3d");
}

// `allot agent --ec2-topology`: the registration's network_layers, checked by the apply path's rule; a node that
// registers again with other layers gets them as the same record an apply writes.
TEST_F(ServerTopologyApply, AnAgentsOwnLayersAreCheckedAndJournaledLikeAnApply) {
  small_cluster();
  json reg = {{"name", "g2"}, {"instance_type", "ml.g5.8xlarge"}, {"address", "127.0.0.1"},
              {"labels", {{"allot.dev/instance-id", "i-0g2"}, {"network-node-layer-3", "given"}}},
              {"network_layers", {"nn-1", "nn-2"}}};
  auto bad = post("/v1/agents/register", reg);
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("register: network layers: 2 given"), std::string::npos) << bad.body;
  EXPECT_EQ(get("/v1/nodes/g2").status, 404) << "a refused registration adds no node";

  reg["network_layers"] = {"nn-1", "nn-2", "nn-3e"};
  auto ok = post("/v1/agents/register", reg);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(labels("g2")[kL3], "nn-3e") << "the layers replace the layer labels given";
  EXPECT_EQ(layer_records(), 0u) << "a new node's layers are in its own record";
  // Again with the same layers: nothing to write. With others: one record.
  ASSERT_EQ(post("/v1/agents/register", reg).status, 200);
  EXPECT_EQ(layer_records(), 0u);
  reg["network_layers"] = {"nn-1", "nn-2", "nn-3f", "nn-4f"};
  ASSERT_EQ(post("/v1/agents/register", reg).status, 200);
  EXPECT_EQ(labels("g2")[kL4], "nn-4f");
  EXPECT_EQ(layer_records(), 1u);
  restart();
  EXPECT_EQ(labels("g2")[kL4], "nn-4f");
}

class ServerTopologySnapshot : public ServerTopologyApply {
 protected:
  void SetUp() override {
    options_.snapshot_every_records = 2;
    options_.snapshot_min_records = 0;
    ServerTest::SetUp();
  }
};

TEST_F(ServerTopologySnapshot, TheLayersComeBackFromASnapshotTaken) {
  cluster();
  ASSERT_EQ(post("/v1/topology/apply", body({entry("i-0s1", {"nn-1", "nn-2", "nn-3s", "nn-4s"})})).status, 200);
  ASSERT_EQ(post("/v1/jobs", job("after")).status, 201);  // a record or two beyond it
  uint64_t applied = 0;
  for (const auto& r : journal_->records())
    if (std::holds_alternative<store::SetNetworkLayers>(r.op)) applied = r.seq;
  ASSERT_GT(applied, 0u);
  ASSERT_TRUE(eventually([&] {
    auto s = journal_->latest_snapshot();
    return !server_->stats().snapshot_writing && s.ok() && s->has_value() && (*s)->seq >= applied;
  })) << "no snapshot after the apply was written";
  json before = get("/v1/nodes").json;
  restart();
  json after = get("/v1/nodes").json;
  for (json* l : {&after, &before})
    for (auto& n : *l) n.erase("last_heartbeat");
  EXPECT_EQ(after, before);
  EXPECT_EQ(labels("s1")[kL4], "nn-4s");
}

}  // namespace
}  // namespace allot::server::test::server_topology_apply_test
