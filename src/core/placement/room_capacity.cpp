#include "core/placement/room_capacity.h"

#include <algorithm>
#include <climits>

namespace allot {
namespace {

// Past this many hosts in one leaf domain, re-reading a leaf's hosts at every change there costs more than the
// scan of all hosts it saves: tightest_host() then scans.
constexpr size_t kMaxHostsPerLeaf = 64;
// Past this many replicas on one empty node (small CPU-only replicas), one min-tree per room value costs more
// memory and updates than it saves: tightest_host() then scans.
constexpr int64_t kMaxRoomIndexed = 64;

// A leaf's room fits in the upper 32 bits: the index is kept only for at most kMaxHostsPerLeaf hosts of at most
// kMaxRoomIndexed replicas each.
uint64_t pack(int64_t leaf_room, int host) {
  return static_cast<uint64_t>(leaf_room) << 32 | static_cast<uint32_t>(host);
}

}  // namespace

// The host groups come with the tree (TopologyTree::host_groups): tracking a room, as every preemption plan's
// trial does, only forgets the entries, whose tables it keeps for the next ones.
void RoomCapacity::track(const ClusterState& s, const RoomTable* room) {
  s_ = &s;
  room_ = room;
  log_.clear();
  resets_ = 0;
  live_ = 0;
  last_ = nullptr;
  const TopologyTree::HostGroups& g = s.tree.host_groups;
  host_index_ok_ = g.largest <= kMaxHostsPerLeaf;
  heap_size_ = 1;
  while (heap_size_ < g.leaf.size()) heap_size_ *= 2;
}

void RoomCapacity::changed(const Placement& p) {
  for (const auto& ps : p.pod_sets)
    for (const auto& r : ps.replicas) changed(r.node);
}

void replicas_from_scratch(const TopologyTree& t, const RoomTable& room, TypeId type, const Resources& req, bool whole_node,
                           JobId job, int exclusive_level, const std::vector<char>& closed, std::vector<int64_t>& out) {
  out.assign(t.domains.size(), 0);
  // Each node's replicas go to its host domain and straight into the host's parent; then one reverse pass over
  // the inner domains (parents come before children) sums every subtree. Most nodes of a busy cluster hold none.
  for (size_t n = 0; n < room.size(); ++n) {
    const int host = t.leaf_of_node[n];
    if (host < 0 || room[n].type != type) continue;
    const int64_t fit = node_fit(room[n], req, whole_node, job);
    if (fit == 0 || (exclusive_level >= 0 && closed[t.ancestor(NodeId(static_cast<uint32_t>(n)), exclusive_level)])) continue;
    out[host] = fit;
    if (t.parent[host] >= 0) out[t.parent[host]] += fit;
  }
  for (size_t i = t.inner.size(); i-- > 0;) {
    const int d = t.inner[i];
    if (t.parent[d] >= 0) out[t.parent[d]] += out[d];
  }
}

int scan_tightest_host(const TopologyTree& t, std::span<const int64_t> replicas, int64_t need) {
  // One pass over the hosts, by name, keeping the first with the least (room, room of its leaf domain); the
  // leaf domain's room is read only for a host that can hold the pod set and is no roomier than the best.
  const std::vector<int>& hosts = t.by_level[t.levels - 1];
  const int* leaf_of = t.leaf_domain_of_host.data();
  int best = -1;
  int64_t best_room = INT64_MAX, best_leaf = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const int h = hosts[i];
    const int64_t room = replicas[h];
    if (room < need || room > best_room) continue;
    const int64_t leaf = leaf_of[i] < 0 ? 0 : replicas[leaf_of[i]];
    if (room < best_room || leaf < best_leaf || (leaf == best_leaf && h < best)) {
      best = h;
      best_room = room;
      best_leaf = leaf;
    }
  }
  return best;
}

// From scratch, for a job that holds no node and has no exclusive request.
void RoomCapacity::compute(Entry& e) const {
  replicas_from_scratch(s_->tree, *room_, e.type, e.req, e.whole_node, JobId{}, -1, {}, e.replicas);
  e.synced = log_.size();
  e.resets = resets_;
  e.hosts_built = false;
}

// One group's hosts read again: per room value, the lowest host with exactly that room (with the group's leaf
// room, the same for all of them), each into its min-tree and up to the root where it changed.
void RoomCapacity::refresh_group(Entry& e, int group) const {
  const int64_t most = e.most_on_a_node;
  uint64_t best[kMaxRoomIndexed];
  std::fill(best, best + most, kNone);
  const TopologyTree::HostGroups& g = s_->tree.host_groups;
  const int leaf = g.leaf[group];
  const int64_t leaf_room = leaf < 0 ? 0 : e.replicas[leaf];
  for (size_t i = g.start[group]; i < g.start[group + 1]; ++i) {
    const int h = g.hosts[i];
    const int64_t r = e.replicas[h];
    if (r > 0 && best[r - 1] == kNone) best[r - 1] = pack(leaf_room, h);  // hosts are in index order
  }
  for (int64_t r = 0; r < most; ++r) {
    uint64_t* tree = e.trees.data() + r * 2 * heap_size_;
    size_t i = heap_size_ + static_cast<size_t>(group);
    if (tree[i] == best[r]) continue;
    tree[i] = best[r];
    for (i /= 2; i >= 1; i /= 2) {
      const uint64_t m = std::min(tree[2 * i], tree[2 * i + 1]);
      if (tree[i] == m) break;
      tree[i] = m;
    }
  }
}

void RoomCapacity::build_hosts(Entry& e) const {
  e.trees.assign(static_cast<size_t>(e.most_on_a_node) * 2 * heap_size_, kNone);
  for (size_t g = 0; g < s_->tree.host_groups.leaf.size(); ++g) refresh_group(e, static_cast<int>(g));
  e.hosts_built = true;
}

// One node's fit again; the difference goes up its ancestors, and with the host index kept, its group is read
// again (the change moves the host between room values and changes its leaf's room, which all its hosts carry).
void RoomCapacity::update(Entry& e, int node) {
  const TopologyTree& t = s_->tree;
  const int host = t.leaf_of_node[node];
  if (host < 0) return;
  const NodeRoom& r = (*room_)[node];
  const int64_t fit = r.type == e.type ? node_fit(r, e.req, e.whole_node, JobId{}) : 0;
  const int64_t delta = fit - e.replicas[host];
  if (delta == 0) return;
  for (int d = host; d >= 0; d = t.parent[d]) e.replicas[d] += delta;
  if (e.hosts_built) refresh_group(e, t.host_groups.group_of_host[host]);
}

std::span<const int64_t> RoomCapacity::replicas(TypeId type, const Resources& req, bool whole_node) {
  Entry* e = nullptr;
  for (size_t i = 0; i < live_ && !e; ++i) {
    Entry& x = *entries_[i];
    if (x.type == type && x.whole_node == whole_node && x.req == req) e = &x;
  }
  if (!e) {
    if (live_ == entries_.size()) entries_.push_back(std::make_unique<Entry>());
    e = entries_[live_++].get();
    e->type = type;
    e->req = req;
    e->whole_node = whole_node;
    NodeRoom empty;
    empty.type = type;
    empty.free = s_->catalog.at(type).capacity();
    empty.usable = true;
    e->most_on_a_node = node_fit(empty, req, whole_node, JobId{});
    compute(*e);
  } else if (e->resets != resets_ || log_.size() - e->synced > room_->size() / 8) {
    // Replaying more than an eighth of the nodes (each a walk up the tree) costs more than starting afresh.
    compute(*e);
  } else {
    for (size_t i = e->synced; i < log_.size(); ++i) update(*e, static_cast<int>(log_[i]));
    e->synced = log_.size();
  }
  last_ = e;
  return e->replicas;
}

int RoomCapacity::tightest_host(int64_t need) {
  Entry& e = *last_;
  if (s_->tree.levels == 0) return -1;
  // Hosts without room are not in the index, so it answers only for a need of at least one replica.
  if (need <= 0) return scan_tightest_host(s_->tree, e.replicas, need);  // the index holds hosts with room only
  // A pod set no node could hold even empty (whole nodes, two or more of them) needs no index to say so.
  if (need > e.most_on_a_node) return -1;
  if (!host_index_ok_ || e.most_on_a_node > kMaxRoomIndexed) return scan_tightest_host(s_->tree, e.replicas, need);
  if (!e.hosts_built) build_hosts(e);
  // The least room first, then the least leaf room, then the lowest host: the first non-empty tree's root.
  for (int64_t r = need; r <= e.most_on_a_node; ++r) {
    const uint64_t root = e.trees[static_cast<size_t>(r - 1) * 2 * heap_size_ + 1];
    if (root != kNone) return static_cast<int>(root & 0xffffffffu);
  }
  return -1;
}

}  // namespace allot
