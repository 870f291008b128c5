#pragma once
// The network hierarchy as a tree of domains. A domain at level L is the set of nodes sharing the values of
// L and of every coarser level; leaves are single nodes (the hostname level). Rebuilt whenever nodes join,
// leave or are replaced, so domains are always current: from scratch (build_topology_tree), or, when nodes join
// one at a time (agents registering), by placing the new ones into the kept order of nodes (add_to_topology_tree)
// and linking the domains again in one walk, without sorting every node for each that joins.
#include <string>
#include <vector>

#include "core/model/chunk_table.h"
#include "core/model/ids.h"

namespace allot {

struct Node;

struct TopologyTree {
  struct Domain {
    int level = 0;
    std::string name;  // the label value at its level ("nn-3a"); the node name for leaves
    int parent = -1;
    std::vector<int> children;  // sorted by name
    NodeId node;                // leaves only
  };
  std::vector<Domain> domains;
  // domains[d].parent again, as one compact array: placement sums capacity up the whole tree at every call,
  // and reading it out of the Domain records costs a cache miss per domain.
  std::vector<int> parent;
  std::vector<int> inner;  // the domains that are not leaves, in index order (parents before children)
  std::vector<std::vector<int>> by_level;  // domain indices per level, sorted by name path
  std::vector<int> leaf_of_node;           // NodeId index -> leaf domain (-1 for removed nodes)
  int levels = 0;
  // The finest level above the hostname on which some node carries a label; -1 when nodes carry none. Packing
  // without a topology request prefers domains of this level (Slurm's leaf switch).
  int lowest_labelled_level = -1;
  // For each host of by_level[levels - 1], in that order, its ancestor at lowest_labelled_level (-1 when nodes
  // carry no labels): placement without a topology request looks at every host and its leaf domain at each
  // call, and walking up from each host through the Domain records cost a cache miss per host.
  std::vector<int> leaf_domain_of_host;
  // The hosts grouped by leaf domain (each host a group of its own when nodes carry no labels), for the index of
  // hosts placement's capacity cache keeps (room_capacity.h). They follow from the tree alone, so they are worked
  // out with it rather than by every cache at its start: a preemption plan starts one, and grouping 12,500 hosts
  // was an eighth of a plan's time at 100k GPUs.
  struct HostGroups {
    std::vector<int> group_of_host;  // index = domain: the host's group, or -1 for inner domains
    std::vector<size_t> start;       // group g's hosts: hosts[start[g], start[g + 1])
    std::vector<int> hosts;          // each group's hosts in domain index order, group after group
    std::vector<int> leaf;           // per group: its leaf domain, or -1 (a host without labels)
    size_t largest = 0;              // hosts in the largest group
  };
  HostGroups host_groups;
  // The nodes not removed, in the order of their paths of values from the top (natural_less on each level; the
  // hostname is the last level, so no two paths are equal). Domains are made in this order.
  std::vector<NodeId> order;

  // The domain at `level` that contains the node (its ancestor at that level).
  int ancestor(NodeId node, int level) const;
};

TopologyTree build_topology_tree(const ChunkTable<Node>& nodes, int levels);
// The same tree as build_topology_tree(nodes, t.levels) once nodes[first_new..] (appended since `t` was built from
// the nodes before them) have joined: they are placed into t.order by binary search and the domains linked anew.
void add_to_topology_tree(TopologyTree& t, const ChunkTable<Node>& nodes, size_t first_new);

}  // namespace allot
