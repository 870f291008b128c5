#pragma once
// Node labels that carry topology, as the interop tools read and write them. Users may write the short names
// (zone, network-node-layer-3, ultraserver, hostname) or the full label keys; everything in interop/ works on
// the full keys, so it canonicalizes first and then compares strings.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "core/model/spec.h"
#include "core/placement/topology_levels.h"  // kMaxNetworkLayers, network_layer_key

namespace allot::interop {

inline constexpr std::string_view kZoneLabel = "topology.kubernetes.io/zone";
inline constexpr std::string_view kUltraserverIdLabel = "topology.k8s.aws/ultraserver-id";
inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";

// "zone" -> "topology.kubernetes.io/zone", "network-node-layer-2" -> "topology.k8s.aws/network-node-layer-2";
// full keys and keys that are not topology levels come back unchanged.
std::string canonical_label_key(std::string_view key);
// The full key of network layer n (1..4).
std::string network_layer_label(int n);
// 1..4 for a network-node-layer key (short or full), 0 for any other key.
int network_layer_of(std::string_view key);

// The node's labels with every key canonical. Two spellings of one key (zone and topology.kubernetes.io/zone)
// are allowed only when they agree; otherwise the error names the node and both values.
Result<std::map<std::string, std::string>> canonical_labels(const NodeSpec& node);

// What one node says about where it sits. Layers are listed from layer 1 down, without gaps.
struct NodePlacement {
  std::string zone;                 // empty: no zone label
  std::vector<std::string> layers;  // values of network-node-layer-1..N
  std::string ultraserver;          // empty: not in an UltraServer
};

// Reads the topology labels of a node. A layer without the layers above it (layer 3 but no layer 2) is an
// error, since the domain it names would be ambiguous.
Result<NodePlacement> node_placement(const NodeSpec& node);

}  // namespace allot::interop
