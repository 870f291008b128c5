#include "core/locality_wait.h"

#include <algorithm>

#include "core/placement.h"
#include "core/topology_levels.h"

namespace allot {

int64_t locality_wait_of(const ClusterState& s, const Job& job) {
  if (!job.spec.priority.empty())
    for (const PriorityClassSpec& c : s.policy.priority_classes)
      if (c.name == job.spec.priority && c.locality_wait_s) return *c.locality_wait_s;
  return s.policy.locality_wait_s;
}

bool OneDomainFits::ask(const ClusterState& s, const RoomTable& pristine, const Job& job, TypeId type, int size) {
  const auto key = std::make_tuple(job.shape, type.value, size);
  auto it = known_.find(key);
  if (it != known_.end()) return it->second;
  Job tight = job_at_size(job, size);
  for (PodSet& ps : tight.pod_sets)
    if (ps.topology.mode == TopologyRequest::Mode::kPreferred) ps.topology.mode = TopologyRequest::Mode::kRequired;
  const bool fits = place_job(s, pristine, tight, type).ok;
  known_.emplace(key, fits);
  return fits;
}

std::optional<LocalityHold> locality_hold(const ClusterState& s, const RoomTable& pristine, const Job& job,
                                          const AdmissionAttempt& a, Time now, Time from, OneDomainFits& fits) {
  const int64_t wait = locality_wait_of(s, job);
  if (wait <= 0 || !a.ok || now >= from + wait) return std::nullopt;
  // The spread pod set with a preferred request, and over how many domains of its level.
  int level = -1;
  size_t spread = 0, spread_set = 0;
  for (size_t i = 0; i < job.pod_sets.size() && i < a.placement.pod_sets.size(); ++i) {
    const TopologyRequest& req = job.pod_sets[i].topology;
    if (req.mode != TopologyRequest::Mode::kPreferred || req.level < 0) continue;
    std::vector<int> domains;
    for (const ReplicaBinding& r : a.placement.pod_sets[i].replicas) domains.push_back(s.tree.ancestor(r.node, req.level));
    std::sort(domains.begin(), domains.end());
    const size_t n = static_cast<size_t>(std::unique(domains.begin(), domains.end()) - domains.begin());
    if (n > spread) {
      spread = n;
      level = req.level;
      spread_set = i;
    }
  }
  if (spread <= 1) return std::nullopt;
  const int size = job.elastic() ? static_cast<int>(a.placement.pod_sets[static_cast<size_t>(job.elastic_pod_set)].replicas.size())
                                 : job.size();
  if (!fits.ask(s, pristine, job, a.type, size)) return std::nullopt;
  const Time until = from + wait;
  return LocalityHold{
      until, level, spread_set, explain(ReasonCode::kLocality, "waiting for locality: it would run now spread over " + std::to_string(spread) +
                                                " " + short_level(s.levels[static_cast<size_t>(level)]) +
                                                " domains; it waits for one to have room until t=" + std::to_string(until) +
                                                " (locality_wait " + std::to_string(wait) + " s), then runs spread")};
}

namespace {

// Replicas of `per_replica` that fit in `free` (at most `cap`: counting past what the job needs tells nothing).
int64_t replicas_in(const Resources& free, const Resources& per_replica, int64_t cap) {
  int64_t n = cap;
  for (Resource r : kAllResources)
    if (per_replica.get(r) > 0) n = std::min(n, std::max<int64_t>(0, free.get(r)) / per_replica.get(r));
  return n;
}

}  // namespace

LocalityNeed locality_need(const AdmissionAttempt& a, const LocalityHold& hold) {
  const PodSetPlacement& ps = a.placement.pod_sets[hold.pod_set];
  return LocalityNeed{hold.level, ps.type, ps.per_replica, static_cast<int64_t>(ps.replicas.size()), hold.until};
}

std::optional<LocalityNeed> locality_need_while_waiting(const ClusterState& s, const Job& job, Time now) {
  const int64_t wait = locality_wait_of(s, job);
  if (wait <= 0 || !job.locality_wait_from || now >= *job.locality_wait_from + wait) return std::nullopt;
  for (const PodSet& ps : job.pod_sets) {
    if (ps.topology.mode != TopologyRequest::Mode::kPreferred || ps.topology.level < 0 || !ps.type) continue;
    auto per_replica = replica_resources(s, ps, *ps.type);
    if (!per_replica) continue;
    return LocalityNeed{ps.topology.level, *ps.type, *per_replica, ps.replicas, *job.locality_wait_from + wait};
  }
  return std::nullopt;
}

std::optional<LocalityReservation> choose_locality_domain(const ClusterState& s, const RoomTable& pristine,
                                                          const Job& holder, const LocalityNeed& need,
                                                          const std::vector<LocalityReservation>& taken) {
  if (need.level < 0 || need.replicas <= 0) return std::nullopt;
  // Per domain of the level: replicas the empty cluster holds there, replicas that fit now, and free accelerators
  // now, summed node by node.
  struct Room {
    int64_t empty = 0, now = 0, accelerators = 0;
  };
  std::map<int, Room> rooms;
  for (size_t n = 0; n < s.room.size() && n < pristine.size(); ++n) {
    if (!pristine[n].usable || pristine[n].type != need.type) continue;
    const int d = s.tree.ancestor(NodeId(static_cast<uint32_t>(n)), need.level);
    if (d < 0) continue;
    Room& r = rooms[d];
    r.empty += replicas_in(pristine[n].free, need.per_replica, need.replicas);
    if (s.room[n].usable && !s.room[n].exclusive_owner.valid()) {
      r.now += replicas_in(s.room[n].free, need.per_replica, need.replicas);
      r.accelerators += s.room[n].free.accelerators;
    }
  }
  std::optional<LocalityReservation> best;
  Room best_room;
  for (const auto& [d, r] : rooms) {
    if (r.empty < need.replicas) continue;
    bool reserved = false;
    for (const LocalityReservation& t : taken) reserved |= t.level == need.level && t.domain == d;
    if (reserved) continue;
    const int64_t fit = std::min(r.now, need.replicas), best_fit = std::min(best_room.now, need.replicas);
    if (best && (fit < best_fit || (fit == best_fit && r.accelerators <= best_room.accelerators))) continue;
    best = LocalityReservation{holder.id, need.level, d, need.until};
    best_room = r;
  }
  return best;
}

bool touches(const ClusterState& s, const Placement& p, const LocalityReservation& r) {
  for (const PodSetPlacement& ps : p.pod_sets)
    for (const ReplicaBinding& b : ps.replicas)
      if (s.tree.ancestor(b.node, r.level) == r.domain) return true;
  return false;
}

}  // namespace allot
