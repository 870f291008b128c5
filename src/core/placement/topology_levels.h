#pragma once
// Topology levels are node-label keys ordered coarse to fine; the last is always the hostname. Short names
// (zone, network-node-layer-3, ultraserver, hostname) are accepted wherever a level is named.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

namespace allot {

inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
inline constexpr std::string_view kUltraserverLabel = "topology.k8s.aws/ultraserver-id";

std::vector<std::string> default_topology_levels();
// "network-node-layer-3" -> "topology.k8s.aws/network-node-layer-3"; full keys and unknown keys unchanged.
std::string canonical_level(std::string_view name);
// "topology.k8s.aws/network-node-layer-3" -> "network-node-layer-3"; for people and tables.
std::string short_level(std::string_view key);
std::optional<int> find_level(const std::vector<std::string>& levels, std::string_view name);

// EC2 network topology on live nodes (docs/topology.md, "Live nodes"). A node carries its EC2 instance id in
// this label (`allot agent --instance-id`, or the label itself); `allot topology apply` matches by it.
inline constexpr std::string_view kInstanceIdLabel = "allot.dev/instance-id";
inline constexpr int kMaxNetworkLayers = 4;
// The full label key of network layer n (1..4): "topology.k8s.aws/network-node-layer-n".
std::string network_layer_key(int n);

// A node's network-node layers, top (layer 1) to bottom, as `aws ec2 describe-instance-topology` lists them.
struct NodeLayers {
  std::string node;
  std::vector<std::string> layers;
  friend bool operator==(const NodeLayers&, const NodeLayers&) = default;
};
// The one rule for layers that come from EC2, wherever they come from (an EC2 file read by the CLI or the agent,
// a registration, an apply request, a journal record): 3 or 4 of them, each a non-empty string of at most 255
// bytes without control characters. The error says which layer and what is allowed.
Status check_network_layers(const std::vector<std::string>& layers);

}  // namespace allot
