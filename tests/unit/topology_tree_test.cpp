// Unit tests of the topology tree's derived tables (core/placement/topology_tree.h): placement reads them instead of the
// Domain records, so each must say what walking the records says.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "core/model/hostlist.h"
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

// The tree the slow way, as it was built before nodes could join one at a time: sort every node, then look each
// prefix of its path up in a map keyed by the whole path.
struct Reference {
  std::vector<TopologyTree::Domain> domains;
  std::vector<std::vector<int>> by_level;
  std::vector<int> leaf_of_node;
};
Reference reference_tree(const ChunkTable<Node>& nodes, int levels) {
  Reference r;
  r.by_level.resize(levels);
  r.leaf_of_node.assign(nodes.size(), -1);
  std::vector<const Node*> live;
  for (const Node& n : nodes)
    if (!n.removed) live.push_back(&n);
  std::sort(live.begin(), live.end(), [](const Node* a, const Node* b) {
    return std::lexicographical_compare(a->topology.begin(), a->topology.end(), b->topology.begin(), b->topology.end(),
                                        [](const std::string& x, const std::string& y) { return natural_less(x, y); });
  });
  std::map<std::vector<std::string>, int> index;
  for (const Node* n : live) {
    std::vector<std::string> path;
    int parent = -1;
    for (int l = 0; l < levels; ++l) {
      path.push_back(n->topology[l]);
      auto it = index.find(path);
      if (it == index.end()) {
        TopologyTree::Domain d;
        d.level = l;
        d.name = n->topology[l];
        d.parent = parent;
        if (l == levels - 1) d.node = n->id;
        r.domains.push_back(d);
        const int id = static_cast<int>(r.domains.size() - 1);
        it = index.emplace(path, id).first;
        r.by_level[l].push_back(id);
        if (parent >= 0) r.domains[parent].children.push_back(id);
      }
      parent = it->second;
    }
    r.leaf_of_node[n->id.index()] = parent;
  }
  return r;
}

void expect_same_tree(const TopologyTree& t, const ChunkTable<Node>& nodes, const std::string& when) {
  const Reference r = reference_tree(nodes, t.levels);
  ASSERT_EQ(t.domains.size(), r.domains.size()) << when;
  for (size_t d = 0; d < r.domains.size(); ++d) {
    EXPECT_EQ(t.domains[d].level, r.domains[d].level) << when << ", domain " << d;
    EXPECT_EQ(t.domains[d].name, r.domains[d].name) << when << ", domain " << d;
    EXPECT_EQ(t.domains[d].parent, r.domains[d].parent) << when << ", domain " << d;
    EXPECT_EQ(t.domains[d].children, r.domains[d].children) << when << ", domain " << d;
    EXPECT_EQ(t.domains[d].node, r.domains[d].node) << when << ", domain " << d;
    EXPECT_EQ(t.parent[d], r.domains[d].parent) << when << ", domain " << d;
  }
  EXPECT_EQ(t.by_level, r.by_level) << when;
  EXPECT_EQ(t.leaf_of_node, r.leaf_of_node) << when;
  // And the whole tree as a fresh build makes it (the derived tables included).
  const TopologyTree fresh = build_topology_tree(nodes, t.levels);
  EXPECT_EQ(t.order, fresh.order) << when;
  EXPECT_EQ(t.inner, fresh.inner) << when;
  EXPECT_EQ(t.lowest_labelled_level, fresh.lowest_labelled_level) << when;
  EXPECT_EQ(t.leaf_domain_of_host, fresh.leaf_domain_of_host) << when;
  EXPECT_EQ(t.host_groups.group_of_host, fresh.host_groups.group_of_host) << when;
  EXPECT_EQ(t.host_groups.start, fresh.host_groups.start) << when;
  EXPECT_EQ(t.host_groups.hosts, fresh.host_groups.hosts) << when;
  EXPECT_EQ(t.host_groups.leaf, fresh.host_groups.leaf) << when;
  EXPECT_EQ(t.host_groups.largest, fresh.host_groups.largest) << when;
  // The groups by their definition: each host in the one group of its leaf domain (a group of its own without
  // one), each group's hosts in domain index order.
  const TopologyTree::HostGroups& g = t.host_groups;
  ASSERT_EQ(g.start.size(), g.leaf.size() + 1) << when;
  const std::vector<int>& hosts = t.by_level[t.levels - 1];
  ASSERT_EQ(g.hosts.size(), hosts.size()) << when;
  size_t largest = 0;
  for (size_t k = 0; k < g.leaf.size(); ++k) {
    largest = std::max(largest, g.start[k + 1] - g.start[k]);
    std::vector<int> want;
    for (size_t i = 0; i < hosts.size(); ++i)
      if (g.leaf[k] >= 0 ? t.leaf_domain_of_host[i] == g.leaf[k] : g.group_of_host[hosts[i]] == static_cast<int>(k))
        want.push_back(hosts[i]);
    std::sort(want.begin(), want.end());
    EXPECT_EQ(std::vector<int>(g.hosts.begin() + static_cast<long>(g.start[k]), g.hosts.begin() + static_cast<long>(g.start[k + 1])), want)
        << when << ", group " << k;
    if (g.leaf[k] < 0) EXPECT_EQ(want.size(), 1u) << when << ", group " << k;
    for (int h : want) EXPECT_EQ(g.group_of_host[h], static_cast<int>(k)) << when << ", host " << h;
  }
  EXPECT_EQ(g.largest, largest) << when;
}

// Nodes joining one at a time (agents registering) are placed into the kept order; the tree must be the one a
// full build makes, whatever the names: numbers that sort naturally (gpu-2 before gpu-10), leading zeros (a1 and
// a01 are different domains), unlabelled levels, nodes leaving and names coming back.
TEST(TopologyTreeTest, NodesJoiningOneAtATimeGiveTheTreeAFullBuildGives) {
  std::mt19937 rng(7);
  const std::vector<std::string> l1 = {"nn1-1", "nn1-01", "nn1-2", "nn1-10", ""};
  const std::vector<std::string> l2 = {"a", "a1", "a01", "b9", "b10", ""};
  const std::vector<std::string> prefix = {"gpu-", "gpu-0", "trn", "x"};
  ClusterState s;
  std::vector<std::string> joined;
  for (int step = 0; step < 400; ++step) {
    if (!joined.empty() && rng() % 6 == 0) {
      const size_t i = rng() % joined.size();
      ASSERT_TRUE(remove_node(s, joined[i], step, "test").ok());
      joined.erase(joined.begin() + static_cast<long>(i));
    } else {
      const std::string name = prefix[rng() % prefix.size()] + std::to_string(rng() % 300);
      if (s.find_node(name)) continue;
      std::map<std::string, std::string> labels;
      if (const std::string& v = l1[rng() % l1.size()]; !v.empty()) labels["network-node-layer-1"] = v;
      if (const std::string& v = l2[rng() % l2.size()]; !v.empty()) labels["network-node-layer-2"] = v;
      if (rng() % 2) labels["network-node-layer-3"] = "r" + std::to_string(rng() % 12);
      ASSERT_TRUE(add_node(s, {name, kType, "", labels}, step).ok());
      joined.push_back(name);
    }
    expect_same_tree(s.tree, s.nodes, "after step " + std::to_string(step));
    if (HasFailure()) return;
  }
  EXPECT_GT(joined.size(), 100u);
}

}  // namespace
}  // namespace allot::topology_tree_test
