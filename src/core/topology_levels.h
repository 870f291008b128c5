#pragma once
// Topology levels are node-label keys ordered coarse to fine; the last is always the hostname. Short names
// (zone, network-node-layer-3, ultraserver, hostname) are accepted wherever a level is named.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allot {

inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
inline constexpr std::string_view kUltraserverLabel = "topology.k8s.aws/ultraserver-id";

std::vector<std::string> default_topology_levels();
// "network-node-layer-3" -> "topology.k8s.aws/network-node-layer-3"; full keys and unknown keys unchanged.
std::string canonical_level(std::string_view name);
// "topology.k8s.aws/network-node-layer-3" -> "network-node-layer-3"; for people and tables.
std::string short_level(std::string_view key);
std::optional<int> find_level(const std::vector<std::string>& levels, std::string_view name);

}  // namespace allot
