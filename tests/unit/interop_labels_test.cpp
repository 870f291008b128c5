// Topology label keys, host-list compression and the hierarchy the interop tools share.
#include <gtest/gtest.h>

#include "core/model/hostlist.h"
#include "interop/hostlist_compress.h"
#include "interop/topology_hierarchy.h"
#include "interop/topology_labels.h"

namespace allot::interop::interop_labels_test {
namespace {

NodeSpec node(std::string name, std::map<std::string, std::string> labels) {
  NodeSpec n;
  n.name = std::move(name);
  n.instance_type = "ml.p5.48xlarge";
  n.labels = std::move(labels);
  return n;
}

TEST(InteropLabels, ShortNamesBecomeFullKeys) {
  EXPECT_EQ(canonical_label_key("zone"), "topology.kubernetes.io/zone");
  EXPECT_EQ(canonical_label_key("network-node-layer-3"), "topology.k8s.aws/network-node-layer-3");
  EXPECT_EQ(canonical_label_key("ultraserver"), "topology.k8s.aws/ultraserver-id");
  EXPECT_EQ(canonical_label_key("hostname"), "kubernetes.io/hostname");
  EXPECT_EQ(canonical_label_key("topology.k8s.aws/network-node-layer-1"), "topology.k8s.aws/network-node-layer-1");
  EXPECT_EQ(canonical_label_key("team"), "team");
  EXPECT_EQ(network_layer_of("network-node-layer-4"), 4);
  EXPECT_EQ(network_layer_of("topology.k8s.aws/network-node-layer-2"), 2);
  EXPECT_EQ(network_layer_of("zone"), 0);
}

TEST(InteropLabels, TwoSpellingsMustAgree) {
  auto same = canonical_labels(node("a", {{"zone", "z1"}, {"topology.kubernetes.io/zone", "z1"}}));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->size(), 1u);
  auto differ = canonical_labels(node("a", {{"zone", "z1"}, {"topology.kubernetes.io/zone", "z2"}}));
  ASSERT_FALSE(differ.ok());
  EXPECT_NE(differ.error().message.find("node a"), std::string::npos);
}

TEST(InteropLabels, PlacementReadsLayersInOrderAndRejectsGaps) {
  auto p = node_placement(node("a", {{"network-node-layer-2", "b"}, {"network-node-layer-1", "a"},
                                     {"topology.k8s.aws/network-node-layer-3", "c"}, {"ultraserver", "u"}}));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->layers, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p->ultraserver, "u");
  auto gap = node_placement(node("x", {{"network-node-layer-1", "a"}, {"network-node-layer-3", "c"}}));
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.error().message.find("no network-node-layer-2"), std::string::npos) << gap.error().message;
}

TEST(InteropHostlist, CompressesRangesAndKeepsPadding) {
  EXPECT_EQ(compress_hostlist({"gpu-3", "gpu-1", "gpu-2", "gpu-4", "gpu-7"}), "gpu-[1-4,7]");
  EXPECT_EQ(compress_hostlist({"gpu-9", "gpu-10", "gpu-11"}), "gpu-[9-11]");
  EXPECT_EQ(compress_hostlist({"n01", "n02", "n03", "n10"}), "n[01-03,10]");
  EXPECT_EQ(compress_hostlist({"n1", "n01"}), "n[01,1]");
  EXPECT_EQ(compress_hostlist({"solo"}), "solo");
  EXPECT_EQ(compress_hostlist({"gpu-5"}), "gpu-5");
  EXPECT_EQ(compress_hostlist({"b-1", "a-1", "a-2", "a-2"}), "a-[1-2],b-1");
  EXPECT_EQ(compress_hostlist({}), "");
}

TEST(InteropHostlist, CompressionRoundTripsThroughExpand) {
  std::vector<std::vector<std::string>> cases = {
      {"gpu-1", "gpu-2", "gpu-3", "gpu-5", "gpu-10", "gpu-11"},
      {"n008", "n009", "n010", "n011", "n1", "n2"},
      {"i-0a1b2c3d4e5f60001", "i-0a1b2c3d4e5f60002", "ip-10-1-2-3", "login"},
      {"r1-n1", "r1-n2", "r2-n1"},
      // Found by fuzz/hostlist_fuzz.cpp: numbers longer than a range may hold stay literal names.
      {"4", "69", "77777777777", "n1234567890", "n1234567891"},
  };
  for (auto names : cases) {
    auto back = expand_hostlist(compress_hostlist(names));
    ASSERT_TRUE(back.ok()) << compress_hostlist(names);
    std::sort(names.begin(), names.end());
    std::sort(back->begin(), back->end());
    EXPECT_EQ(*back, names) << compress_hostlist(names);
  }
}

TEST(InteropHostlist, NaturalOrder) {
  EXPECT_TRUE(natural_less("gpu-2", "gpu-10"));
  EXPECT_FALSE(natural_less("gpu-10", "gpu-2"));
  EXPECT_TRUE(natural_less("a", "b"));
  EXPECT_TRUE(natural_less("gpu-1", "gpu-1a"));
}

TEST(InteropHierarchy, SameValueUnderTwoParentsIsTwoDomains) {
  auto h = build_hierarchy({node("a", {{"network-node-layer-1", "s1"}, {"network-node-layer-2", "leaf"}}),
                            node("b", {{"network-node-layer-1", "s2"}, {"network-node-layer-2", "leaf"}}),
                            node("c", {})});
  ASSERT_TRUE(h.ok()) << h.error().message;
  // root, s1, s1/leaf, s2, s2/leaf
  EXPECT_EQ(h->domains.size(), 5u);
  EXPECT_EQ(h->domains[0].node_count, 3);
  EXPECT_EQ(h->domains[0].nodes, std::vector<std::string>{"c"});
  EXPECT_EQ(h->domains[0].children.size(), 2u);
}

TEST(InteropHierarchy, DuplicateNodeIsAnError) {
  auto h = build_hierarchy({node("a", {}), node("a", {})});
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("listed twice"), std::string::npos);
}

}  // namespace
}  // namespace allot::interop::interop_labels_test
