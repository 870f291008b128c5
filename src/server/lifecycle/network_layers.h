#pragma once
// EC2 topology on live nodes (docs/topology.md, "Live nodes"): which registered node an instance id names, and
// which layer changes an apply makes. Pure functions of the cluster, so the apply endpoint, the registration and
// the tests share them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/result.h"
#include "core/model/state.h"

namespace allot::server {

// One entry of an apply: an instance id and its layers, top to bottom.
struct InstanceLayers {
  std::string instance_id;
  std::vector<std::string> layers;
};

// The body of POST /v1/topology/apply, `{"instances": [{"instance_id", "layers": [...]}]}`: at least one entry,
// each instance id once, each entry's layers by the one rule (core check_network_layers). Errors name the entry.
Result<std::vector<InstanceLayers>> parse_apply_body(const nlohmann::json& body);

// What an apply does to the cluster as it is.
struct LayersMatch {
  struct Matched {
    std::string node, instance_id;
    std::vector<std::string> layers;
    bool changed = false;  // its layers were other than these
  };
  std::vector<Matched> matched;        // in the order of the entries
  std::vector<std::string> unknown;    // instance ids no node in the cluster carries
  std::vector<NodeLayers> changes;     // the matched nodes whose layers change (the journal record's)
};

// Matches entries to the nodes in the cluster (any health; removed ones have left) by their kInstanceIdLabel.
// An error when no entry matches (nothing to do is then most likely a wrong file or nodes without the label), or
// when two nodes carry one instance id.
Result<LayersMatch> match_instances(const ClusterState& s, const std::vector<InstanceLayers>& entries);

// The node's network layers as its labels have them, layer 1 down to the first missing one.
std::vector<std::string> network_layers_of(const Node& n);

}  // namespace allot::server
