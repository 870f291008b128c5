#pragma once
// Placement's capacity per topology domain for one room table that its owner keeps changing (the live room of a
// scheduler pass), kept up to date node by node instead of worked out from every node at every attempt.
//
// Why: a pass over a big queue places thousands of jobs against the same table, and between two attempts only
// the nodes of the last admission or preemption changed. Working out every node's fit and summing the whole
// tree per attempt was most of the pass (3,125 nodes per attempt on the scale model); replaying the nodes that
// changed since an entry was last used costs a few tree walks instead.
//
// The owner must tell the cache of every change to the table it tracks (changed(), changed_all()); the unit
// test RoomCapacityTest checks every answer against the from-scratch computation after random changes.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/model/state.h"

namespace allot {

// How many replicas of `req` fit on one node's room. A node held exclusively by a job other than `job` holds
// none (with an invalid `job`: a node held by any job).
// Inline: placement from scratch (preemption trials, other rooms) calls it for every node of the cluster.
inline int64_t node_fit(const NodeRoom& r, const Resources& req, bool whole_node, JobId job) {
  if (!r.usable) return 0;
  if (r.exclusive_owner.valid() && r.exclusive_owner != job) return 0;
  if (whole_node) return r.replicas == 0 ? 1 : 0;
  // This runs for every node a placement looks at, so the common answers avoid divisions: a node short of one
  // replica's worth holds none, and one whose accelerators bind holds free accelerators / request.
  if (!req.fits_in(r.free)) return 0;
  if (req.accelerators > 0) {
    const int64_t k = r.free.accelerators / req.accelerators;
    if ((req * k).fits_in(r.free)) return k;
  }
  int64_t k = INT_MAX;
  if (req.accelerators > 0) k = std::min(k, r.free.accelerators / req.accelerators);
  if (req.vcpu_milli > 0) k = std::min(k, r.free.vcpu_milli / req.vcpu_milli);
  if (req.memory_mib > 0) k = std::min(k, r.free.memory_mib / req.memory_mib);
  return std::max<int64_t>(0, k);
}

// Replicas of `req` per domain on nodes of `type`, from every node: a host domain has its node's fit, an inner
// domain the sum over its subtree. With `exclusive_level` >= 0, nodes under a domain of that level marked in
// `closed` count for nothing (placement's exclusive requests). Used by placement from scratch and by
// RoomCapacity, so that the cache and the computation it stands in for are one piece of code.
void replicas_from_scratch(const TopologyTree& t, const RoomTable& room, TypeId type, const Resources& req, bool whole_node,
                           JobId job, int exclusive_level, const std::vector<char>& closed, std::vector<int64_t>& out);

// The host domain with the least room that still holds `need` replicas, then the least room in its leaf
// domain (TopologyTree::leaf_domain_of_host; 0 without labels), then the lowest domain index; -1 when none.
// One pass over the hosts; RoomCapacity::tightest_host gives the same answer from its index.
int scan_tightest_host(const TopologyTree& t, std::span<const int64_t> replicas, int64_t need);

class RoomCapacity {
 public:
  // Tracks `room` on the tree of `s` from now on; forgets every entry. `s` and `room` must outlive the cache
  // and the tree must not change while it tracks them.
  void track(const ClusterState& s, const RoomTable* room);
  bool tracks(const RoomTable* room) const { return room_ != nullptr && room_ == room; }

  // The room of these nodes changed: an admission or a preemption without exclusive domains.
  void changed(NodeId node) { log_.push_back(node.index()); }
  void changed(const Placement& p);
  // Any node may have changed (exclusive domains taken or given back, a resize): every entry starts afresh.
  void changed_all() { ++resets_; }

  // Capacity of every domain (index = domain) in replicas of `req` on nodes of `type`, for a job that holds no
  // node: a host domain has its node's fit, an inner domain the sum over its subtree. Valid until the next call.
  // The same as summing node_fit(room[n], req, whole_node, JobId{}) over every node of each subtree.
  std::span<const int64_t> replicas(TypeId type, const Resources& req, bool whole_node);

  // Of the entry of the last replicas() call: the host domain with the least room that still holds `need`
  // replicas, then the least room in its leaf domain (TopologyTree::leaf_domain_of_host; 0 without labels),
  // then the lowest domain index; -1 when no host holds `need`. The same as scanning every host in that order.
  int tightest_host(int64_t need);

 private:
  // The host index of an entry: hosts grouped by leaf domain (each host its own group without labels), and per
  // room value r (1..most_on_a_node) a min-tree over the groups of each group's (leaf room, lowest host index)
  // among its hosts with room exactly r. The tightest host is the root of the first non-empty tree from `need`
  // on. A change on one host re-reads its group's hosts and fixes each tree along one path: no allocation, and
  // none of the whole-table re-keying a host's leaf-room tie-break would otherwise cost.
  struct Entry {
    TypeId type;
    Resources req;
    bool whole_node = false;
    std::vector<int64_t> replicas;  // index = domain
    int64_t most_on_a_node = 0;     // the fit on an empty node of `type`: no host ever holds more
    size_t synced = 0;              // log_ position it reflects
    uint64_t resets = 0;            // resets_ when it was worked out from scratch
    bool hosts_built = false;       // `trees` is kept only once tightest_host() was asked of this entry
    std::vector<uint64_t> trees;    // [room - 1][heap position]: packed (leaf room << 32 | host), kNone if none
  };
  static constexpr uint64_t kNone = ~uint64_t{0};
  void compute(Entry& e) const;
  void update(Entry& e, int node);
  void build_hosts(Entry& e) const;
  void refresh_group(Entry& e, int group) const;

  const ClusterState* s_ = nullptr;
  const RoomTable* room_ = nullptr;
  std::vector<uint32_t> log_;  // nodes changed, in order; duplicates are harmless (an update is idempotent)
  uint64_t resets_ = 0;        // changed_all() calls: an entry from before the last one starts afresh
  // The first live_ are this track()'s entries; the rest are an earlier track()'s, kept for their tables: a cache
  // tracked anew for each preemption plan (a trial's room, preemption.h) would otherwise allocate and fault in a
  // table of every domain per entry each time.
  std::vector<std::unique_ptr<Entry>> entries_;
  size_t live_ = 0;
  Entry* last_ = nullptr;
  // The hosts' groups are the tree's (TopologyTree::host_groups).
  size_t heap_size_ = 1;                          // leaves of each min-tree: groups rounded up to a power of 2
  bool host_index_ok_ = false;                    // groups small enough that re-reading one beats a scan
};

}  // namespace allot
