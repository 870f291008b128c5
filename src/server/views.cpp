#include "server/views.h"

#include <algorithm>
#include <functional>

#include "config/policy_json.h"
#include "core/topology_levels.h"
#include "view/state_json.h"

namespace allot::server {
using nlohmann::json;

json policy_json(const PolicySpec& p) { return config::policy_json(p); }

json node_view(const ServerState& st, const Node& n) {
  json j = view::node_json(st.cluster, n);
  auto it = st.nodes.find(n.name);
  if (it != st.nodes.end()) {
    j["agent"] = it->second.agent;
    j["address"] = it->second.address;
    if (it->second.agent) j["last_heartbeat"] = it->second.last_heartbeat_ms / 1000;
  }
  return j;
}

json topology_json(const ClusterState& s) {
  json levels = json::array();
  for (const auto& l : s.levels) levels.push_back(short_level(l));
  // Levels a node has no label for (an empty name) are left out: their children hang from the level above.
  // Recursion depth is the number of levels.
  std::function<void(int, json&)> add = [&](int d, json& into) {
    const auto& dom = s.tree.domains[d];
    if (dom.node.valid() && dom.children.empty()) {
      into.push_back({{"node", s.nodes[dom.node.index()].name}});
      return;
    }
    json children = json::array();
    for (int c : dom.children) add(c, children);
    if (dom.name.empty()) {
      for (auto& c : children) into.push_back(std::move(c));
      return;
    }
    into.push_back({{"level", short_level(s.levels[dom.level])}, {"name", dom.name}, {"children", children}});
  };
  json roots = json::array();
  for (size_t d = 0; d < s.tree.domains.size(); ++d)
    if (s.tree.domains[d].parent < 0) add(static_cast<int>(d), roots);
  return {{"levels", levels}, {"domains", roots}};
}

json teams_json(const ServerState& st) {
  std::vector<const Team*> teams;
  for (const Team& t : st.cluster.teams)
    if (!st.removed_teams.count(t.spec.name)) teams.push_back(&t);
  std::sort(teams.begin(), teams.end(), [](const Team* a, const Team* b) { return a->spec.name < b->spec.name; });
  json out = json::array();
  for (const Team* t : teams) out.push_back(view::team_json(st.cluster, *t));
  return out;
}

}  // namespace allot::server
