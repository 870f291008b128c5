#include "core/placement/topology_levels.h"

namespace allot {

std::vector<std::string> default_topology_levels() {
  return {"topology.kubernetes.io/zone",
          "topology.k8s.aws/network-node-layer-1",
          "topology.k8s.aws/network-node-layer-2",
          "topology.k8s.aws/network-node-layer-3",
          "topology.k8s.aws/network-node-layer-4",
          std::string(kUltraserverLabel),
          std::string(kHostnameLabel)};
}

std::string canonical_level(std::string_view name) {
  if (name == "zone") return "topology.kubernetes.io/zone";
  if (name == "hostname") return std::string(kHostnameLabel);
  if (name == "ultraserver" || name == "ultraserver-id") return std::string(kUltraserverLabel);
  if (name.starts_with("network-node-layer-")) return "topology.k8s.aws/" + std::string(name);
  return std::string(name);
}

std::string short_level(std::string_view key) {
  if (key == "topology.kubernetes.io/zone") return "zone";
  if (key == kHostnameLabel) return "hostname";
  if (key == kUltraserverLabel) return "ultraserver";
  if (key.starts_with("topology.k8s.aws/network-node-layer-")) return std::string(key.substr(17));
  return std::string(key);
}

std::optional<int> find_level(const std::vector<std::string>& levels, std::string_view name) {
  std::string key = canonical_level(name);
  for (size_t i = 0; i < levels.size(); ++i)
    if (levels[i] == key) return static_cast<int>(i);
  return std::nullopt;
}

std::string network_layer_key(int n) { return "topology.k8s.aws/network-node-layer-" + std::to_string(n); }

Status check_network_layers(const std::vector<std::string>& layers) {
  if (layers.size() != 3 && layers.size() != 4)
    return Error::invalid("network layers: " + std::to_string(layers.size()) +
                          " given; EC2 lists 3 or 4 network layers, top (layer 1) to bottom");
  for (size_t l = 0; l < layers.size(); ++l) {
    const std::string& v = layers[l];
    const std::string which = "network layer " + std::to_string(l + 1);
    if (v.empty()) return Error::invalid(which + " is empty; each layer names a network node such as nn-1a2b3c");
    if (v.size() > 255) return Error::invalid(which + " is " + std::to_string(v.size()) + " bytes long; at most 255 are allowed");
    for (unsigned char c : v)
      if (c < 0x20 || c == 0x7f) return Error::invalid(which + " contains a control character");
  }
  return ok_status();
}

}  // namespace allot
