#pragma once
// The network hierarchy of a set of nodes, coarse to fine: zone -> network-node-layer-1..4 -> UltraServer ->
// nodes. Slurm's topology.conf (tree) and the Mermaid diagram are two renderings of this one structure.
#include <string>
#include <vector>

#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::interop {

struct TopologyDomain {
  std::string level;  // canonical label key of the level; empty for the root
  std::string value;  // the label value that names this domain; empty for the root
  int parent = -1;    // index into TopologyHierarchy::domains; -1 for the root
  std::vector<int> children;       // finer domains, in natural order of their values
  std::vector<std::string> nodes;  // nodes attached directly here, in natural order
  int node_count = 0;              // nodes here and below
};

// domains[0] is the root: the whole cluster. A domain is identified by its value *and* the values of every
// coarser level (DESIGN.md, "Topology"), so "nn-3a" under two different layer-2 nodes gives two domains.
// A node sits in the finest domain its labels name; a node without any topology label sits at the root.
struct TopologyHierarchy {
  std::vector<TopologyDomain> domains;
  int depth_of(int domain) const;  // 0 for the root
};

// Fails on duplicate node names and on inconsistent labels (see node_placement).
Result<TopologyHierarchy> build_hierarchy(const std::vector<NodeSpec>& nodes);

}  // namespace allot::interop
