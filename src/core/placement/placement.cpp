#include "core/placement/placement.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>

#include "core/placement/numa.h"
#include "core/placement/room_capacity.h"
#include "core/model/request.h"
#include "core/placement/topology_levels.h"

namespace allot {
namespace {

using Pick = std::vector<std::pair<int, int64_t>>;  // (domain, amount)

// Capacity of every domain for one pod set: in replicas, and in whole slices at and above the slice level.
// The arrays live in PlacementScratch or in a RoomCapacity entry; a Capacity only looks at them.
struct Capacity {
  std::span<const int64_t> replicas;
  std::span<const int64_t> slices;  // empty without slices
  RoomCapacity* live = nullptr;     // where `replicas` came from, if from the live room's cache
  int slice_level = -1;
  int64_t slice_size = 1;
  int64_t units(const TopologyTree& t, int d) const {
    return slice_level >= 0 && t.domains[d].level <= slice_level ? slices[d] : replicas[d];
  }
};

// Replicas of one pod set per domain from scratch, into `replicas`; `closed` is working memory.
void compute_replicas(const ClusterState& s, const RoomTable& room, const Job& job, const PodSet& ps, TypeId type,
                      const Resources& req, std::vector<int64_t>& replicas, std::vector<char>& closed) {
  const TopologyTree& t = s.tree;
  // Exclusive: a domain of the exclusive level that holds any other job's replica is closed to this job.
  const int excl = ps.topology.exclusive_level;
  if (excl >= 0) {
    closed.assign(t.domains.size(), 0);
    for (size_t n = 0; n < room.size(); ++n) {
      if (t.leaf_of_node[n] < 0) continue;
      bool other = room[n].replicas > 0 || (room[n].exclusive_owner.valid() && room[n].exclusive_owner != job.id);
      if (other) closed[t.ancestor(NodeId(static_cast<uint32_t>(n)), excl)] = 1;
    }
  }
  replicas_from_scratch(t, room, type, req, ps.per_replica.whole_node, job.id, excl, closed, replicas);
}

// Capacity of every domain for one pod set: replicas from the live room's cache when the caller keeps one for
// `room` and the answer cannot depend on the job (no exclusive request, a job that holds no node), else from
// scratch; whole slices at and above the slice level from the replicas.
Capacity compute_capacity(const ClusterState& s, const RoomTable& room, const Job& job, const PodSet& ps, TypeId type,
                          const Resources& req, PlacementScratch& scratch) {
  const TopologyTree& t = s.tree;
  Capacity c;
  if (scratch.live && scratch.live->tracks(&room) && ps.topology.exclusive_level < 0 && job.placement.empty()) {
    c.replicas = scratch.live->replicas(type, req, ps.per_replica.whole_node);
    c.live = scratch.live;
  } else {
    compute_replicas(s, room, job, ps, type, req, scratch.replicas, scratch.closed);
    c.replicas = scratch.replicas;
  }
  if (ps.topology.slice_level >= 0) {
    c.slice_level = ps.topology.slice_level;
    c.slice_size = ps.topology.slice_size;
    scratch.slices.assign(t.domains.size(), 0);
    for (size_t d = t.domains.size(); d-- > 0;) {
      if (t.domains[d].level == c.slice_level) scratch.slices[d] = c.replicas[d] / c.slice_size;
      if (t.domains[d].level <= c.slice_level && t.domains[d].parent >= 0)
        scratch.slices[t.domains[d].parent] += scratch.slices[d];
    }
    c.slices = scratch.slices;
  }
  return c;
}

// Tighter of two domains with the same units: counted in slices, the one with fewer replicas of room is tighter
// (Kueue's BestFit: three free replicas make one slice of 2 as two free replicas do, but leave one to waste);
// then the earlier by name (domain indices follow names).
bool tighter_tie(const Capacity& c, int a, int b) {
  return c.replicas[a] != c.replicas[b] ? c.replicas[a] < c.replicas[b] : a < b;
}

// The tightest single candidate holding `need`, or the fewest candidates: roomiest first, the last by best fit.
// Units are slices at and above the slice level (Capacity::units); equal units are told apart by tighter_tie,
// in both orders: "roomiest first" takes the tighter of equals first, and best fit takes the tightest. Every
// candidate is a different domain, so both orders are total and any way of reaching the choice gives the same.
//
// In the order "roomiest first" (`roomier`), each step takes the tightest candidate left that finishes the
// request, else the roomiest. The first steps scan the candidates instead of sorting them: most requests end
// within a few picks, and sorting every child of a domain for each (hundreds of hosts) was a fifth of a
// preemption plan's time at 100k GPUs. A request that needs more picks than kScanSteps sorts what is left once.
std::optional<Pick> pick_fewest(const TopologyTree& t, const Capacity& c, std::span<const int> cands, int64_t need) {
  constexpr size_t kScanSteps = 8;  // a scan costs about what a sort of ~2^8 candidates costs per comparison
  // Without slices a domain's units are its replicas: no read of its Domain record (a cache miss each).
  auto units = [&](int d) { return c.slice_level < 0 ? c.replicas[d] : c.units(t, d); };
  auto roomier = [&](int a, int b) {
    const int64_t ua = units(a), ub = units(b);
    return ua != ub ? ua > ub : tighter_tie(c, a, b);
  };
  Pick out;
  int64_t left = need;
  auto taken = [&](int d) {
    return std::any_of(out.begin(), out.end(), [d](const std::pair<int, int64_t>& p) { return p.first == d; });
  };
  while (out.size() < kScanSteps) {
    int finish = -1, roomiest = -1;
    int64_t fu = 0, ru = 0;  // their units
    for (int d : cands) {
      const int64_t u = units(d);
      if (u >= left) {
        if (finish < 0 || u < fu || (u == fu && tighter_tie(c, d, finish))) {
          if (!out.empty() && taken(d)) continue;
          finish = d;
          fu = u;
        }
      } else if (finish < 0 && (roomiest < 0 || u > ru || (u == ru && tighter_tie(c, d, roomiest)))) {
        // Only read when nothing finishes; a candidate that finishes would be the roomiest anyway.
        if (!out.empty() && taken(d)) continue;
        roomiest = d;
        ru = u;
      }
    }
    if (finish >= 0) {
      out.emplace_back(finish, left);
      return out;
    }
    if (roomiest < 0 || ru <= 0) {
      if (left > 0) return std::nullopt;
      return out;
    }
    out.emplace_back(roomiest, ru);
    left -= ru;
  }
  // Many picks: what is left, sorted once, walked in the same order.
  std::vector<int> rest;
  rest.reserve(cands.size());
  for (int d : cands)
    if (!taken(d)) rest.push_back(d);
  std::sort(rest.begin(), rest.end(), roomier);
  for (size_t i = 0; i < rest.size() && left > 0; ++i) {
    if (units(rest[i]) <= 0) break;
    // The candidates from i on that could finish the request form a prefix (they are sorted); its last run of
    // equal units holds the tightest, and the first of that run is the tightest among equals.
    size_t last = i;
    while (last + 1 < rest.size() && units(rest[last + 1]) >= left) ++last;
    if (units(rest[last]) >= left) {
      size_t pick = last;
      while (pick > i && units(rest[pick - 1]) == units(rest[last])) --pick;
      out.emplace_back(rest[pick], left);
      left = 0;
      break;
    }
    out.emplace_back(rest[i], units(rest[i]));
    left -= units(rest[i]);
  }
  if (left > 0) return std::nullopt;
  return out;
}

// From chosen domains at one level down to nodes: children of all chosen domains together, fewest first.
// Amounts are in the units of their level: slices at and above the slice level, replicas below it. Reaching
// the slice level (the hostname level included), each slice domain's slices become replicas and the domain is
// descended on its own, so no slice straddles two of them and every replica of every slice is placed.
std::optional<Pick> descend(const TopologyTree& t, const Capacity& c, Pick chosen) {
  int level = t.domains[chosen.front().first].level;
  while (true) {
    if (level == c.slice_level) {
      Pick leaves;
      Capacity rc = c;
      rc.slice_level = -1;  // below the slice level, units are replicas
      for (auto [d, k] : chosen) {
        auto sub = descend(t, rc, Pick{{d, k * c.slice_size}});
        if (!sub) return std::nullopt;
        leaves.insert(leaves.end(), sub->begin(), sub->end());
      }
      return leaves;
    }
    if (level >= t.levels - 1) return chosen;
    std::vector<int> children;
    int64_t need = 0;
    for (auto [d, k] : chosen) {
      children.insert(children.end(), t.domains[d].children.begin(), t.domains[d].children.end());
      need += k;
    }
    auto next = pick_fewest(t, c, children, need);
    if (!next) return std::nullopt;
    chosen = std::move(*next);
    ++level;
  }
}

// Without a topology request, a pod set that one host can hold goes to the tightest such host in the whole
// cluster (least room in replicas), which keeps whole nodes free for jobs that need them. Among equal hosts
// the one under the leaf domain (the lowest labelled level, Slurm's leaf switch) with the least room wins,
// then the first by name. -1 when no host holds `need` replicas now.
int tightest_host(const TopologyTree& t, const Capacity& c, int64_t need) {
  // The live room's cache keeps the hosts ordered by that key (the same choice without a scan).
  if (c.live) return c.live->tightest_host(need);
  return scan_tightest_host(t, c.replicas, need);
}

// Chooses the leaves (nodes) and replica counts for one pod set, or says why not.
std::optional<Pick> choose(const ClusterState& s, const Capacity& c, const PodSet& ps, Explanation& why) {
  const TopologyTree& t = s.tree;
  const int64_t need = c.slice_level >= 0 ? ps.replicas / c.slice_size : ps.replicas;
  const auto& req = ps.topology;
  const char* unit = c.slice_level >= 0 ? " slices of " : " replicas";
  auto roomiest = [&](int level) {
    int64_t m = 0;
    for (int d : t.by_level[level]) m = std::max(m, c.units(t, d));
    return m;
  };
  if (t.domains.empty()) {
    why = explain(ReasonCode::kCapacity, "capacity: the cluster has no nodes");
    return std::nullopt;
  }
  if (req.mode == TopologyRequest::Mode::kRequired) {
    auto one = pick_fewest(t, c, t.by_level[req.level], need);
    if (!one || one->size() != 1) {
      why = explain(ReasonCode::kTopology, "topology: no " + short_level(s.levels[req.level]) + " domain has room for " +
                                               std::to_string(need) + unit +
                                               (c.slice_level >= 0 ? std::to_string(c.slice_size) : "") +
                                               " (the roomiest has " + std::to_string(roomiest(req.level)) + ")");
      return std::nullopt;
    }
    return descend(t, c, *one);
  }
  if (req.mode == TopologyRequest::Mode::kNone && c.slice_level < 0 && req.exclusive_level < 0) {
    if (int host = tightest_host(t, c, need); host >= 0) return Pick{{host, need}};
  }
  int start = req.mode == TopologyRequest::Mode::kPreferred ? req.level
              : t.lowest_labelled_level >= 0                ? t.lowest_labelled_level
                                                            : t.levels - 1;
  if (c.slice_level >= 0) start = std::min(start, c.slice_level);
  for (int level = start; level >= 0; --level) {
    auto one = pick_fewest(t, c, t.by_level[level], need);
    if (one && one->size() == 1) return descend(t, c, *one);
    if (level == 0 && one) return descend(t, c, *one);
  }
  int64_t total = 0;
  for (int d : t.by_level[0]) total += c.units(t, d);
  why = explain(ReasonCode::kCapacity, "capacity: " + std::to_string(need) + unit +
                                          (c.slice_level >= 0 ? std::to_string(c.slice_size) : "") +
                                          " do not fit; room for " + std::to_string(total) + " now");
  return std::nullopt;
}

std::string replica_text(const ClusterState& s, const PodSet& ps, TypeId type, const Resources& req) {
  if (ps.per_replica.whole_node) return "whole " + s.catalog.at(type).name + " nodes";
  return s.catalog.at(type).name + " replicas of " + format_resources(req);
}

std::optional<PodSetPlacement> place_pod_set(const ClusterState& s, const RoomTable& room, const Job& job,
                                             const PodSet& ps, TypeId type, PlacementScratch& scratch, Explanation& why) {
  auto req = replica_resources(s, ps, type);
  if (!req) {
    why = explain(ReasonCode::kInstanceType, req.error().message);
    return std::nullopt;
  }
  const Capacity cap = compute_capacity(s, room, job, ps, type, *req, scratch);
  auto leaves = choose(s, cap, ps, why);
  if (!leaves) {
    why.text += " (" + std::to_string(ps.replicas) + " " + replica_text(s, ps, type, *req) + ")";
    return std::nullopt;
  }
  // Gang admission: every replica or none, and quota is charged for what is placed. A pick that places a
  // different number is a bug in the rules above; refusing it keeps the accounting right.
  int64_t placed = 0;
  for (const auto& leaf : *leaves) placed += leaf.second;
  if (placed != ps.replicas) {
    why = explain(ReasonCode::kCapacity, "internal: placement chose " + std::to_string(placed) + " of " +
                                             std::to_string(ps.replicas) + " replicas; refusing a partial gang");
    return std::nullopt;
  }
  PodSetPlacement out;
  out.type = type;
  out.per_replica = *req;
  const InstanceType& it = s.catalog.at(type);
  for (auto [leaf, count] : *leaves) {
    NodeId node = s.tree.domains[leaf].node;
    uint64_t mask = room[node.index()].accelerators_free;
    for (int64_t i = 0; i < count; ++i) {
      ReplicaBinding b;
      b.node = node;
      bind_replica(it, mask, static_cast<int>(req->accelerators), ps.per_replica.whole_node, b);
      for (int a : b.accelerators) mask &= ~(uint64_t{1} << a);
      out.replicas.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace

Result<Resources> replica_resources(const ClusterState& s, const PodSet& ps, TypeId type) {
  auto r = resolve_replica(s.catalog.at(type), ps.per_replica);
  if (!r) return Error::invalid(s.catalog.at(type).name + ": " + r.error().message);
  return r;
}

RoomTable pristine_room(const ClusterState& s) {
  RoomTable room(s.nodes.size());
  for (const Node& n : s.nodes) {
    NodeRoom& r = room[n.id.index()];
    const InstanceType& it = s.catalog.at(n.type);
    r.type = n.type;
    r.free = it.capacity();
    r.accelerators_free = it.accelerators >= 64 ? ~uint64_t{0} : ((uint64_t{1} << it.accelerators) - 1);
    r.usable = !n.removed;
  }
  return room;
}

static PlacementOutcome place_pod_sets(const ClusterState& s, const RoomTable& room, const Job& job, TypeId type,
                                       PlacementScratch* work) {
  PlacementScratch own;
  if (!work) work = &own;
  PlacementOutcome out;
  RoomTable scratch;
  const RoomTable* current = &room;
  for (size_t i = 0; i < job.pod_sets.size(); ++i) {
    const PodSet& ps = job.pod_sets[i];
    TypeId t = ps.type.value_or(type);
    auto p = place_pod_set(s, *current, job, ps, t, *work, out.why);
    if (!p) {
      return out;
    }
    if (i + 1 < job.pod_sets.size()) {
      // Later pod sets see the room the earlier ones took (a scratch copy, never the state).
      if (current == &room) {
        scratch = room;
        current = &scratch;
      }
      for (const auto& r : p->replicas) {
        scratch[r.node.index()].free -= p->per_replica;
        for (int a : r.accelerators) scratch[r.node.index()].accelerators_free &= ~(uint64_t{1} << a);
        ++scratch[r.node.index()].replicas;
      }
    }
    out.placement.pod_sets.push_back(std::move(*p));
  }
  out.ok = true;
  return out;
}

PlacementOutcome place_job(const ClusterState& s, const RoomTable& room, const Job& job, TypeId type,
                           PlacementScratch* work) {
  if (!job.plan.valid()) return place_pod_sets(s, room, job, type, work);
  // A job on a capacity plan sees the plan's nodes only: a copy of the room with every other node closed.
  RoomTable only = room;
  for (const Node& n : s.nodes)
    if (n.plan != job.plan && n.id.index() < only.size()) only[n.id.index()].usable = false;
  return place_pod_sets(s, only, job, type, work);
}

}  // namespace allot
