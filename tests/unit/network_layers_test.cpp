// EC2 topology on live nodes (docs/topology.md, "Live nodes"): set_network_layers changes the domains new
// placements see and moves no running replica; the match of apply entries to nodes by instance id; the record's
// replay gives the same state as the live change.
#include <gtest/gtest.h>

#include <set>

#include "core/pass/scheduler.h"
#include "core/model/state.h"
#include "server/lifecycle/network_layers.h"
#include "store/replay.h"

#include "spec_builders.h"

namespace allot::network_layers_test {
namespace {

using allot::test::job_spec;

const std::string kL3 = "topology.k8s.aws/network-node-layer-3";

class NetworkLayers : public ::testing::Test {
 protected:
  // Four p5 nodes, two per layer-3 network node, each with its instance id; team ml may use all four.
  void SetUp() override {
    for (const char* n : {"a-1", "a-2", "b-1", "b-2"}) {
      NodeSpec spec{n, "ml.p5.48xlarge", "", {}};
      spec.labels = {{std::string(kInstanceIdLabel), std::string("i-") + n},
                     {"network-node-layer-1", "nn-1"},
                     {"network-node-layer-2", "nn-2"},
                     {"network-node-layer-3", n[0] == 'a' ? "nn-3a" : "nn-3b"}};
      ASSERT_TRUE(add_node(s, spec, 0).ok());
    }
    TeamSpec t;
    t.name = "ml";
    AmountSpec a;
    a.instances = 4;
    t.allocation = {{"ml.p5.48xlarge", a}};
    ASSERT_TRUE(upsert_team(s, t).ok());
  }
  JobSpec gang(const std::string& name, int replicas) {
    JobSpec j = job_spec(name, "ml").replicas(replicas).whole_nodes();
    j.pod_sets[0].topology.required = "network-node-layer-3";
    return j;
  }
  std::set<std::string> nodes_of(const std::string& job) {
    std::set<std::string> out;
    for (NodeId n : s.find_job(job)->placement.nodes()) out.insert(s.nodes[n.index()].name);
    return out;
  }
  const std::string& l3(const std::string& node) { return s.find_node(node)->labels.at(kL3); }
  ClusterState s;
};

// The brief's rule: a node whose layers change keeps its running jobs where they are; only new placements use
// the new layers.
TEST_F(NetworkLayers, RunningJobsStayAndNewPlacementsUseTheNewLayers) {
  ASSERT_TRUE(submit_job(s, gang("pair", 2), 0).ok());
  schedule(s, 0);
  ASSERT_EQ(s.find_job("pair")->state, JobState::kRunning);
  const auto placed = nodes_of("pair");
  const auto replicas = s.find_job("pair")->placement.pod_sets[0].replicas;
  // A three-node gang fits no layer-3 domain now (two nodes each).
  ASSERT_TRUE(submit_job(s, gang("three", 3), 0).ok());
  schedule(s, 0);
  ASSERT_NE(s.find_job("three")->state, JobState::kRunning);

  // Every node moves under one layer-3 network node, nn-3z; the running pair is not moved.
  std::vector<NodeLayers> all;
  for (const char* n : {"a-1", "a-2", "b-1", "b-2"}) all.push_back({n, {"nn-1", "nn-2", "nn-3z"}});
  const uint64_t shape = s.shape_version;
  ASSERT_TRUE(set_network_layers(s, all).ok());
  EXPECT_GT(s.shape_version, shape) << "answers cached by shape (never fits) are asked again";
  EXPECT_EQ(l3("b-2"), "nn-3z");
  EXPECT_EQ(s.find_node("b-2")->topology[3], "nn-3z") << "the node's level values follow its labels";
  const Job& pair = *s.find_job("pair");
  EXPECT_EQ(pair.state, JobState::kRunning);
  EXPECT_EQ(pair.restarts + pair.preemptions, 0);
  ASSERT_EQ(pair.placement.pod_sets[0].replicas.size(), replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    EXPECT_EQ(pair.placement.pod_sets[0].replicas[i].node, replicas[i].node);
    EXPECT_EQ(pair.placement.pod_sets[0].replicas[i].accelerators, replicas[i].accelerators);
  }

  // The new domain holds four nodes, two of them taken by the pair: still no room for three...
  schedule(s, 10);
  EXPECT_NE(s.find_job("three")->state, JobState::kRunning);
  EXPECT_EQ(nodes_of("pair"), placed);
  // ... until the pair ends: then the gang of three runs inside the new domain, across a and b.
  ASSERT_TRUE(finish_job(s, "pair", 20, true).ok());
  schedule(s, 20);
  ASSERT_EQ(s.find_job("three")->state, JobState::kRunning);
  std::set<std::string> prefixes;
  for (const auto& n : nodes_of("three")) prefixes.insert(n.substr(0, 1));
  EXPECT_EQ(prefixes.size(), 2u) << "the three nodes span the old nn-3a and nn-3b, one domain now";
}

TEST_F(NetworkLayers, FewerLayersDropTheDeeperLabelsAndBadChangesChangeNothing) {
  ASSERT_TRUE(set_network_layers(s, {{"a-1", {"x1", "x2", "x3", "x4"}}}).ok());
  EXPECT_EQ(s.find_node("a-1")->labels.at("topology.k8s.aws/network-node-layer-4"), "x4");
  ASSERT_TRUE(set_network_layers(s, {{"a-1", {"y1", "y2", "y3"}}}).ok());
  EXPECT_EQ(s.find_node("a-1")->labels.count("topology.k8s.aws/network-node-layer-4"), 0u);
  EXPECT_EQ(l3("a-1"), "y3");

  const auto labels = s.find_node("a-2")->labels;
  const uint64_t shape = s.shape_version;
  for (const auto& bad : std::vector<std::vector<NodeLayers>>{
           {{"a-2", {"p", "q", "r"}}, {"zz-9", {"p", "q", "r"}}},  // an unknown node after a good one
           {{"a-2", {"p", "q", "r"}}, {"a-2", {"p", "q", "s"}}},   // a node twice
           {{"a-2", {"p", "q", "r"}}, {"b-1", {"p", ""}}},         // layers that break the rule
       }) {
    EXPECT_FALSE(set_network_layers(s, bad).ok());
    EXPECT_EQ(s.find_node("a-2")->labels, labels) << "all or nothing";
    EXPECT_EQ(s.shape_version, shape);
  }
  auto st = set_network_layers(s, {{"b-1", {"p", "q"}}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("node b-1: network layers: 2 given"), std::string::npos) << st.error().message;
}

// A topology-exclusive job holds its domain; after the layers change it holds the domain its nodes are in now,
// and its end frees exactly those nodes (the marks and their release walk the same tree).
TEST_F(NetworkLayers, AnExclusiveJobsMarksFollowTheNewDomainsAndItsEndFreesThem) {
  JobSpec ex = job_spec("ex", "ml").replicas(1).whole_nodes();
  ex.pod_sets[0].topology.exclusive = "network-node-layer-3";
  ASSERT_TRUE(submit_job(s, ex, 0).ok());
  schedule(s, 0);
  ASSERT_EQ(s.find_job("ex")->state, JobState::kRunning);
  const std::string home = *nodes_of("ex").begin();
  const JobId id = s.find_job("ex")->id;
  // Its node moves to a domain of its own with b-2 (the rest to another).
  std::vector<NodeLayers> change;
  for (const char* n : {"a-1", "a-2", "b-1", "b-2"}) {
    const bool with = std::string(n) == home || std::string(n) == "b-2";
    change.push_back({n, {"nn-1", "nn-2", with ? "nn-3x" : "nn-3y"}});
  }
  ASSERT_TRUE(set_network_layers(s, change).ok());
  for (const char* n : {"a-1", "a-2", "b-1", "b-2"}) {
    const bool with = std::string(n) == home || std::string(n) == "b-2";
    EXPECT_EQ(s.room[s.find_node(n)->id.index()].exclusive_owner == id, with) << n;
  }
  ASSERT_TRUE(finish_job(s, "ex", 10, true).ok());
  for (const NodeRoom& r : s.room) EXPECT_FALSE(r.exclusive_owner.valid());
}

TEST_F(NetworkLayers, ReplayOfTheRecordGivesTheLiveState) {
  const store::Op op = store::SetNetworkLayers{{{"a-1", {"r1", "r2", "r3", "r4"}}, {"b-2", {"r1", "r2", "r5"}}}};
  ClusterState replayed = s;
  ASSERT_TRUE(set_network_layers(s, std::get<store::SetNetworkLayers>(op).nodes).ok());
  ASSERT_TRUE(store::apply_record(replayed, store::Record{1, 0, op, {}}).ok());
  for (const char* n : {"a-1", "a-2", "b-1", "b-2"}) EXPECT_EQ(replayed.find_node(n)->labels, s.find_node(n)->labels) << n;
}

// --- matching apply entries to nodes (server/lifecycle/network_layers.h) ---------------------------------------------------

TEST_F(NetworkLayers, EntriesMatchNodesByInstanceIdAndUnknownIdsAreReported) {
  auto m = server::match_instances(s, {{"i-a-1", {"nn-1", "nn-2", "nn-3a"}},  // as it is: matched, unchanged
                                       {"i-b-2", {"nn-1", "nn-2", "nn-3q", "nn-4q"}},
                                       {"i-0gone", {"p", "q", "r"}}});
  ASSERT_TRUE(m.ok()) << m.error().message;
  ASSERT_EQ(m->matched.size(), 2u);
  EXPECT_EQ(m->matched[0].node, "a-1");
  EXPECT_FALSE(m->matched[0].changed);
  EXPECT_EQ(m->matched[1].node, "b-2");
  EXPECT_TRUE(m->matched[1].changed);
  EXPECT_EQ(m->unknown, std::vector<std::string>{"i-0gone"});
  ASSERT_EQ(m->changes.size(), 1u) << "only what changes goes into the record";
  EXPECT_EQ(m->changes[0], (NodeLayers{"b-2", {"nn-1", "nn-2", "nn-3q", "nn-4q"}}));
  EXPECT_EQ(server::network_layers_of(*s.find_node("a-1")), (std::vector<std::string>{"nn-1", "nn-2", "nn-3a"}));

  auto none = server::match_instances(s, {{"i-0gone", {"p", "q", "r"}}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  EXPECT_NE(none.error().message.find("none of the 1 instance ids (i-0gone)"), std::string::npos) << none.error().message;
  EXPECT_NE(none.error().message.find("allot.dev/instance-id"), std::string::npos);

  // Two nodes claiming one instance: refused, naming both.
  NodeSpec twin{"c-1", "ml.p5.48xlarge", "", {{std::string(kInstanceIdLabel), "i-a-1"}}};
  ASSERT_TRUE(add_node(s, twin, 0).ok());
  auto both = server::match_instances(s, {{"i-a-1", {"p", "q", "r"}}});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("a-1 and c-1 both carry instance id i-a-1"), std::string::npos) << both.error().message;
}

TEST(NetworkLayersBody, TheApplyBodyIsCheckedEntryByEntry) {
  using nlohmann::json;
  auto ok = server::parse_apply_body(json::parse(R"({"instances": [{"instance_id": "i-1", "layers": ["a","b","c"]}]})"));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ((*ok)[0].layers.size(), 3u);
  auto msg = [](const char* text) {
    auto r = server::parse_apply_body(json::parse(text));
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_NE(msg(R"({"instances": []})").find("non-empty array"), std::string::npos);
  EXPECT_NE(msg(R"({"nodes": []})").find("nodes"), std::string::npos);
  EXPECT_NE(msg(R"({"instances": [{"layers": ["a","b","c"]}]})").find("instances[0]: instance_id"), std::string::npos);
  EXPECT_NE(msg(R"({"instances": [{"instance_id": "i-1", "layers": ["a","b"]}]})").find("instances[0] (i-1): network layers: 2 given"),
            std::string::npos);
  EXPECT_NE(msg(R"({"instances": [{"instance_id": "i-1", "layers": ["a","b",3]}]})").find("layers must be strings"), std::string::npos);
  EXPECT_NE(msg(R"({"instances": [{"instance_id": "i-1", "layers": ["a","b","c"]}, {"instance_id": "i-1", "layers": ["a","b","c"]}]})")
                .find("instances[1] (i-1): instance_id appears more than once"),
            std::string::npos);
  EXPECT_NE(msg(R"({"instances": [{"instance_id": "i-1", "layers": ["a","b","c"], "zone": "z"}]})").find("zone"), std::string::npos);
}

}  // namespace
}  // namespace allot::network_layers_test
