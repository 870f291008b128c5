#include "core/topology_levels.h"

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

}  // namespace allot
