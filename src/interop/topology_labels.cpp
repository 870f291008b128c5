#include "interop/topology_labels.h"

#include "core/placement/topology_levels.h"

namespace allot::interop {

std::string canonical_label_key(std::string_view key) {
  // One spelling table for the whole project: the core's level names.
  return canonical_level(key);
}

std::string network_layer_label(int n) { return network_layer_key(n); }

int network_layer_of(std::string_view key) {
  std::string full = canonical_label_key(key);
  for (int n = 1; n <= kMaxNetworkLayers; ++n)
    if (full == network_layer_label(n)) return n;
  return 0;
}

Result<std::map<std::string, std::string>> canonical_labels(const NodeSpec& node) {
  std::map<std::string, std::string> out;
  std::map<std::string, std::string> spelled;  // canonical key -> the key as the user wrote it
  for (const auto& [key, value] : node.labels) {
    std::string full = canonical_label_key(key);
    auto [it, inserted] = out.emplace(full, value);
    if (inserted) {
      spelled[full] = key;
    } else if (it->second != value) {
      return Error::invalid("node " + node.name + ": labels '" + spelled[full] + "' (" + it->second + ") and '" +
                            key + "' (" + value + ") name the same level with different values");
    }
  }
  return out;
}

Result<NodePlacement> node_placement(const NodeSpec& node) {
  auto labels = canonical_labels(node);
  if (!labels) return labels.error();
  NodePlacement p;
  if (auto it = labels->find(std::string(kZoneLabel)); it != labels->end()) p.zone = it->second;
  if (auto it = labels->find(std::string(kUltraserverIdLabel)); it != labels->end()) p.ultraserver = it->second;
  int deepest = 0;
  for (int n = 1; n <= kMaxNetworkLayers; ++n)
    if (labels->count(network_layer_label(n))) deepest = n;
  for (int n = 1; n <= deepest; ++n) {
    auto it = labels->find(network_layer_label(n));
    if (it == labels->end())
      return Error::invalid("node " + node.name + " has network-node-layer-" + std::to_string(deepest) +
                            " but no network-node-layer-" + std::to_string(n) +
                            "; every layer above the deepest one must be labelled");
    if (it->second.empty())
      return Error::invalid("node " + node.name + ": label network-node-layer-" + std::to_string(n) + " is empty");
    p.layers.push_back(it->second);
  }
  return p;
}

}  // namespace allot::interop
