#include "core/placement/topology_tree.h"

#include <algorithm>

#include "core/model/hostlist.h"
#include "core/model/model.h"

namespace allot {

int TopologyTree::ancestor(NodeId node, int level) const {
  int d = leaf_of_node[node.index()];
  while (d >= 0 && domains[d].level > level) d = domains[d].parent;
  return d;
}

namespace {

// The order of nodes in the tree: by their paths of values from the top, as people count (gpu-2 before gpu-10).
bool path_less(const Node& a, const Node& b) {
  return std::lexicographical_compare(a.topology.begin(), a.topology.end(), b.topology.begin(), b.topology.end(),
                                      [](const std::string& x, const std::string& y) { return natural_less(x, y); });
}

// Groups numbered in order of their first host; then each group's hosts in host order (domain index order).
void group_hosts(TopologyTree& t) {
  TopologyTree::HostGroups& g = t.host_groups;
  g = {};
  g.group_of_host.assign(t.domains.size(), -1);
  g.start.assign(1, 0);
  if (t.levels == 0) return;
  std::vector<int> group_of_leaf(t.domains.size(), -1);
  const std::vector<int>& hosts = t.by_level[t.levels - 1];
  std::vector<size_t> size_of_group;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const int leaf = t.leaf_domain_of_host[i];
    int k = leaf >= 0 ? group_of_leaf[leaf] : -1;
    if (k < 0) {
      k = static_cast<int>(g.leaf.size());
      g.leaf.push_back(leaf);
      size_of_group.push_back(0);
      if (leaf >= 0) group_of_leaf[leaf] = k;
    }
    g.group_of_host[hosts[i]] = k;
    g.largest = std::max(g.largest, ++size_of_group[static_cast<size_t>(k)]);
  }
  g.start.resize(g.leaf.size() + 1);
  for (size_t k = 0; k < size_of_group.size(); ++k) g.start[k + 1] = g.start[k] + size_of_group[k];
  g.hosts.resize(hosts.size());
  std::vector<size_t> next(g.start.begin(), g.start.end() - 1);
  for (int h : hosts) g.hosts[next[static_cast<size_t>(g.group_of_host[h])]++] = h;
}

// Makes the domains of t.order's nodes, in that order. A domain is the run of nodes sharing a path prefix, and the
// order keeps such runs together (natural_less is a total order: it tells apart any two strings), so each node
// shares with the node before it exactly the domains of the levels where their values agree from the top: no
// look-up by path is needed. Domains come out in order of first appearance, as by_level and children list them.
void link_domains(TopologyTree& t, const ChunkTable<Node>& nodes) {
  const int levels = t.levels;
  t.domains.clear();
  t.parent.clear();
  t.inner.clear();
  t.leaf_domain_of_host.clear();
  t.by_level.assign(levels, {});
  t.leaf_of_node.assign(nodes.size(), -1);
  t.lowest_labelled_level = -1;
  t.domains.reserve(t.order.size() + t.order.size() / 4 + 8);
  std::vector<int> open(levels, -1);  // the domain of each level the previous node is in
  const Node* prev = nullptr;
  for (NodeId id : t.order) {
    const Node& n = nodes[id.index()];
    int shared = 0;
    if (prev)
      while (shared < levels && n.topology[shared] == prev->topology[shared]) ++shared;
    int parent = shared > 0 ? open[shared - 1] : -1;
    for (int l = shared; l < levels; ++l) {
      TopologyTree::Domain d;
      d.level = l;
      d.name = n.topology[l];
      d.parent = parent;
      if (l == levels - 1) d.node = n.id;
      t.domains.push_back(std::move(d));
      const int made = static_cast<int>(t.domains.size() - 1);
      t.by_level[l].push_back(made);
      if (parent >= 0) t.domains[parent].children.push_back(made);
      open[l] = parent = made;
    }
    for (int l = 0; l < levels - 1; ++l)
      if (!n.topology[l].empty()) t.lowest_labelled_level = std::max(t.lowest_labelled_level, l);
    if (levels > 0) t.leaf_of_node[n.id.index()] = open[levels - 1];
    prev = &n;
  }
  t.parent.reserve(t.domains.size());
  for (size_t d = 0; d < t.domains.size(); ++d) {
    t.parent.push_back(t.domains[d].parent);
    if (!t.domains[d].children.empty()) t.inner.push_back(static_cast<int>(d));
  }
  if (levels > 0) {
    t.leaf_domain_of_host.reserve(t.by_level[levels - 1].size());
    for (int h : t.by_level[levels - 1]) {
      int d = h;
      if (t.lowest_labelled_level < 0) d = -1;
      else
        while (t.domains[d].level > t.lowest_labelled_level) d = t.parent[d];
      t.leaf_domain_of_host.push_back(d);
    }
  }
  group_hosts(t);
}

}  // namespace

TopologyTree build_topology_tree(const ChunkTable<Node>& nodes, int levels) {
  TopologyTree t;
  t.levels = levels;
  for (const Node& n : nodes)
    if (!n.removed) t.order.push_back(n.id);
  // Domains and nodes in the order people count them: placement scans them in this order, so "the first 12 nodes
  // of an UltraServer" are gpu-1..gpu-12 as a person would expect.
  std::sort(t.order.begin(), t.order.end(),
            [&](NodeId a, NodeId b) { return path_less(nodes[a.index()], nodes[b.index()]); });
  link_domains(t, nodes);
  return t;
}

void add_to_topology_tree(TopologyTree& t, const ChunkTable<Node>& nodes, size_t first_new) {
  for (size_t i = first_new; i < nodes.size(); ++i) {
    if (nodes[i].removed) continue;
    auto at = std::upper_bound(t.order.begin(), t.order.end(), nodes[i].id,
                               [&](NodeId a, NodeId b) { return path_less(nodes[a.index()], nodes[b.index()]); });
    t.order.insert(at, nodes[i].id);
  }
  link_domains(t, nodes);
}

}  // namespace allot
