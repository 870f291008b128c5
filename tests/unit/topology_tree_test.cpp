// Unit tests of the topology tree's derived tables (core/placement/topology_tree.h): placement reads them instead of the
// Domain records, so each must say what walking the records says.
#include <gtest/gtest.h>

#include "core/model/state.h"

namespace allot::topology_tree_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";

// The ancestor of `d` at `level`, found the slow way: up through the Domain records.
int walk_up(const TopologyTree& t, int d, int level) {
  while (t.domains[d].level > level) d = t.domains[d].parent;
  return d;
}

TEST(TopologyTreeTest, LeafDomainOfEveryHostIsItsAncestorAtTheLowestLabelledLevel) {
  ClusterState s;
  // Two layer-3 domains under one layer-2 domain, another layer-2 domain labelled only down to layer 2, and a
  // node with no labels: the lowest labelled level is layer 3, and every host has an ancestor there.
  std::vector<NodeSpec> nodes;
  for (int i = 1; i <= 3; ++i)
    nodes.push_back({"a-" + std::to_string(i), kType, "",
                     {{"network-node-layer-1", "nn1"}, {"network-node-layer-2", "nn2-a"}, {"network-node-layer-3", "nn3-1"}}});
  for (int i = 1; i <= 2; ++i)
    nodes.push_back({"b-" + std::to_string(i), kType, "",
                     {{"network-node-layer-1", "nn1"}, {"network-node-layer-2", "nn2-a"}, {"network-node-layer-3", "nn3-2"}}});
  nodes.push_back({"c-1", kType, "", {{"network-node-layer-1", "nn1"}, {"network-node-layer-2", "nn2-b"}}});
  nodes.push_back({"d-1", kType, "", {}});
  ASSERT_TRUE(add_nodes(s, nodes, 0).ok());

  const TopologyTree& t = s.tree;
  ASSERT_GE(t.lowest_labelled_level, 0);
  EXPECT_TRUE(s.levels[static_cast<size_t>(t.lowest_labelled_level)].ends_with("network-node-layer-3"));
  const std::vector<int>& hosts = t.by_level[t.levels - 1];
  ASSERT_EQ(hosts.size(), nodes.size());
  ASSERT_EQ(t.leaf_domain_of_host.size(), hosts.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    EXPECT_EQ(t.leaf_domain_of_host[i], walk_up(t, hosts[i], t.lowest_labelled_level)) << t.domains[hosts[i]].name;
    EXPECT_EQ(t.domains[t.leaf_domain_of_host[i]].level, t.lowest_labelled_level);
  }
  // The three a-nodes share one leaf domain, which the b-nodes do not.
  auto leaf_of = [&](const std::string& name) {
    for (size_t i = 0; i < hosts.size(); ++i)
      if (t.domains[hosts[i]].name == name) return t.leaf_domain_of_host[i];
    return -2;
  };
  EXPECT_EQ(leaf_of("a-1"), leaf_of("a-3"));
  EXPECT_NE(leaf_of("a-1"), leaf_of("b-1"));
}

TEST(TopologyTreeTest, WithoutLabelsNoHostHasALeafDomain) {
  ClusterState s;
  ASSERT_TRUE(add_nodes(s, {{"x-1", kType, "", {}}, {"x-2", kType, "", {}}}, 0).ok());
  EXPECT_EQ(s.tree.lowest_labelled_level, -1);
  ASSERT_EQ(s.tree.leaf_domain_of_host.size(), 2u);
  for (int d : s.tree.leaf_domain_of_host) EXPECT_EQ(d, -1);
}

}  // namespace
}  // namespace allot::topology_tree_test
