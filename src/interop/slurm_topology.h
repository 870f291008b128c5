#pragma once
// Slurm topology.conf from nodes with topology labels.
//
// tree  (TopologyPlugin=topology/tree): one SwitchName line per domain of the hierarchy (zone, network-node
//       layers, UltraServers); leaf switches list their nodes, upper switches their child switches. Node and
//       switch lists are compressed into Slurm host lists.
// block (TopologyPlugin=topology/block, Slurm 23.11+/24.05): one BlockName line per UltraServer (NVLink
//       domain) plus BlockSizes. Slurm pairs consecutive blocks into larger ones, so blocks are listed in
//       network order (zone, then layers) to make neighbours pair up.
// auto: block when every node is in an UltraServer and all nodes share one instance type that has
//       UltraServers; tree otherwise, with a comment in the file that says why.
#include <string>
#include <string_view>
#include <vector>

#include "core/model/catalog.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::interop {

enum class SlurmPlugin { kTree, kBlock, kAuto };
Result<SlurmPlugin> parse_slurm_plugin(std::string_view name);  // "tree" | "block" | "auto"
const char* slurm_plugin_name(SlurmPlugin p);

struct SlurmTopologyConf {
  SlurmPlugin plugin = SlurmPlugin::kTree;  // what the text is for: kTree or kBlock, never kAuto
  std::string reason;                       // why auto chose it; empty when the plugin was asked for
  std::string text;                         // the topology.conf file
};

Result<SlurmTopologyConf> slurm_topology_conf(const std::vector<NodeSpec>& nodes, const Catalog& catalog,
                                              SlurmPlugin plugin);

// The pieces, for callers that know what they want.
// Nodes without network labels: when no node has any, one flat switch holds them all; when only some lack
// them, they share a leaf switch "unlabeled" under the root. Topology/tree needs every node on a switch,
// and a root above disjoint top-level switches lets a job span them (EC2 layer-1 nodes are connected).
Result<std::string> slurm_tree_conf(const std::vector<NodeSpec>& nodes);
// Every node must carry an ultraserver-id label: a node outside every block cannot run block-aware jobs,
// so the error names those nodes and points at the tree plugin.
Result<std::string> slurm_block_conf(const std::vector<NodeSpec>& nodes, const Catalog& catalog);

// A switch or block name Slurm accepts: letters, digits, '-' and '_' only ('.' separates components in
// SLURM_TOPOLOGY_ADDR, brackets and commas are host-list syntax), at most 48 characters, never empty.
std::string slurm_safe_name(std::string_view raw);

}  // namespace allot::interop
