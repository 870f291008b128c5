#include "server/lifecycle/network_layers.h"

#include <map>
#include <set>

#include "core/placement/topology_levels.h"
#include "server/api/api.h"

namespace allot::server {

using nlohmann::json;

Result<std::vector<InstanceLayers>> parse_apply_body(const json& body) {
  if (auto st = only_keys(body, {"instances"}, "topology apply"); !st) return st.error();
  if (!body.contains("instances") || !body["instances"].is_array() || body["instances"].empty())
    return Error::invalid("topology apply: instances must be a non-empty array of {\"instance_id\", \"layers\"}");
  std::vector<InstanceLayers> out;
  std::set<std::string> ids;
  const json& list = body["instances"];
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    std::string where = "topology apply: instances[" + std::to_string(i) + "]";
    if (!e.is_object()) return Error::invalid(where + " must be an object {\"instance_id\", \"layers\"}");
    if (auto st = only_keys(e, {"instance_id", "layers"}, where); !st) return st.error();
    if (!e.contains("instance_id") || !e["instance_id"].is_string() || e["instance_id"].get<std::string>().empty())
      return Error::invalid(where + ": instance_id (a non-empty string, such as i-0123456789abcdef0) is required");
    InstanceLayers entry{e["instance_id"].get<std::string>(), {}};
    where += " (" + printable(entry.instance_id) + ")";
    if (!ids.insert(entry.instance_id).second) return Error::invalid(where + ": instance_id appears more than once");
    if (!e.contains("layers") || !e["layers"].is_array())
      return Error::invalid(where + ": layers (an array of 3 or 4 network node ids, top first) is required");
    for (const auto& l : e["layers"]) {
      if (!l.is_string()) return Error::invalid(where + ": layers must be strings");
      entry.layers.push_back(l.get<std::string>());
    }
    if (auto st = check_network_layers(entry.layers); !st) return Error::invalid(where + ": " + st.error().message);
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<std::string> network_layers_of(const Node& n) {
  std::vector<std::string> out;
  for (int l = 1; l <= kMaxNetworkLayers; ++l) {
    auto it = n.labels.find(network_layer_key(l));
    if (it == n.labels.end()) break;
    out.push_back(it->second);
  }
  return out;
}

Result<LayersMatch> match_instances(const ClusterState& s, const std::vector<InstanceLayers>& entries) {
  const std::string key(kInstanceIdLabel);
  std::map<std::string, const Node*> by_id;
  for (const Node& n : s.nodes) {
    if (n.removed) continue;
    auto it = n.labels.find(key);
    if (it == n.labels.end()) continue;
    auto [at, fresh] = by_id.emplace(it->second, &n);
    if (!fresh)
      return Error::precondition("nodes " + at->second->name + " and " + n.name + " both carry instance id " + it->second +
                                 " (label " + key + "); an instance is one node: fix the label of one (it is set when "
                                 "the node joins) before applying topology");
  }
  LayersMatch out;
  for (const InstanceLayers& e : entries) {
    auto it = by_id.find(e.instance_id);
    if (it == by_id.end()) {
      out.unknown.push_back(e.instance_id);
      continue;
    }
    const Node& n = *it->second;
    const bool changed = network_layers_of(n) != e.layers;
    out.matched.push_back({n.name, e.instance_id, e.layers, changed});
    if (changed) out.changes.push_back(NodeLayers{n.name, e.layers});
  }
  if (out.matched.empty()) {
    std::string some;
    for (size_t i = 0; i < out.unknown.size() && i < 5; ++i) some += (i ? ", " : "") + printable(out.unknown[i]);
    if (out.unknown.size() > 5) some += ", ...";
    return Error::not_found("none of the " + std::to_string(entries.size()) + " instance ids (" + some +
                            ") is a node in the cluster; a node carries its instance id in the label " + key +
                            " (allot agent --instance-id ID, or the label in a nodes file), and nothing was changed");
  }
  return out;
}

}  // namespace allot::server
