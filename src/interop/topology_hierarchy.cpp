#include "interop/topology_hierarchy.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "interop/hostlist_compress.h"
#include "interop/topology_labels.h"

namespace allot::interop {

int TopologyHierarchy::depth_of(int domain) const {
  int d = 0;
  for (int i = domain; domains[i].parent >= 0; i = domains[i].parent) ++d;
  return d;
}

Result<TopologyHierarchy> build_hierarchy(const std::vector<NodeSpec>& nodes) {
  TopologyHierarchy h;
  h.domains.push_back({});
  // (parent, level, value) -> child index; finds an existing domain in O(log n) while building.
  std::map<std::tuple<int, std::string, std::string>, int> index;
  std::set<std::string> seen;
  for (const NodeSpec& node : nodes) {
    if (!seen.insert(node.name).second) return Error::invalid("node " + node.name + " is listed twice");
    auto p = node_placement(node);
    if (!p) return p.error();
    std::vector<std::pair<std::string, std::string>> path;
    if (!p->zone.empty()) path.emplace_back(std::string(kZoneLabel), p->zone);
    for (size_t i = 0; i < p->layers.size(); ++i) path.emplace_back(network_layer_label(int(i) + 1), p->layers[i]);
    if (!p->ultraserver.empty()) path.emplace_back(std::string(kUltraserverIdLabel), p->ultraserver);
    int at = 0;
    for (auto& [level, value] : path) {
      auto key = std::make_tuple(at, level, value);
      auto it = index.find(key);
      if (it == index.end()) {
        int child = int(h.domains.size());
        TopologyDomain dom;
        dom.level = level;
        dom.value = value;
        dom.parent = at;
        h.domains.push_back(std::move(dom));
        h.domains[at].children.push_back(child);
        it = index.emplace(std::move(key), child).first;
      }
      at = it->second;
    }
    h.domains[at].nodes.push_back(node.name);
    for (int d = at; d >= 0; d = h.domains[d].parent) ++h.domains[d].node_count;
  }
  // Deterministic output whatever the input order: children by level then value, nodes naturally.
  for (auto& d : h.domains) {
    std::sort(d.nodes.begin(), d.nodes.end(), natural_less);
    std::sort(d.children.begin(), d.children.end(), [&](int a, int b) {
      const auto &x = h.domains[a], &y = h.domains[b];
      if (x.level != y.level) return x.level < y.level;
      return natural_less(x.value, y.value);
    });
  }
  return h;
}

}  // namespace allot::interop
