#include "core/placement/topology_tree.h"

#include <algorithm>
#include <map>

#include "core/model/hostlist.h"
#include "core/model/model.h"

namespace allot {

int TopologyTree::ancestor(NodeId node, int level) const {
  int d = leaf_of_node[node.index()];
  while (d >= 0 && domains[d].level > level) d = domains[d].parent;
  return d;
}

TopologyTree build_topology_tree(const std::vector<Node>& nodes, int levels) {
  TopologyTree t;
  t.levels = levels;
  t.by_level.resize(levels);
  t.leaf_of_node.assign(nodes.size(), -1);
  // Key each domain by the path of values from the top, so equal values under different parents stay apart.
  std::map<std::vector<std::string>, int> index;
  std::vector<const Node*> live;
  for (const Node& n : nodes)
    if (!n.removed) live.push_back(&n);
  // Domains and nodes in the order people count them (gpu-2 before gpu-10): placement scans them in this
  // order, so "the first 12 nodes of an UltraServer" are gpu-1..gpu-12 as a person would expect.
  std::sort(live.begin(), live.end(), [](const Node* a, const Node* b) {
    return std::lexicographical_compare(a->topology.begin(), a->topology.end(), b->topology.begin(), b->topology.end(),
                                        [](const std::string& x, const std::string& y) { return natural_less(x, y); });
  });
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
        t.domains.push_back(std::move(d));
        int id = static_cast<int>(t.domains.size() - 1);
        it = index.emplace(path, id).first;
        t.by_level[l].push_back(id);
        if (parent >= 0) t.domains[parent].children.push_back(id);
      }
      parent = it->second;
      if (l < levels - 1 && !n->topology[l].empty()) t.lowest_labelled_level = std::max(t.lowest_labelled_level, l);
    }
    t.leaf_of_node[n->id.index()] = parent;
  }
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
  return t;
}

}  // namespace allot
