#include "core/admission.h"

#include <algorithm>

namespace allot {

std::span<const TypeId> candidate_types(const ClusterState& s, const Job& job) {
  for (const auto& ps : job.pod_sets)
    if (!ps.type) return s.teams[job.team.index()].candidate_types;
  // Every pod set names its type; the first one's is the type the job is tried on.
  return {&*job.pod_sets.front().type, 1};
}

std::vector<std::pair<TypeId, Resources>> job_request(const ClusterState& s, const Job& job, TypeId type, std::string* why) {
  std::vector<std::pair<TypeId, Resources>> out;
  for (const auto& ps : job.pod_sets) {
    TypeId t = ps.type.value_or(type);
    auto r = replica_resources(s, ps, t);
    if (!r) {
      if (why) *why = r.error().message;
      return {};
    }
    Resources total = *r * ps.replicas;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == t; });
    if (it == out.end()) out.emplace_back(t, total);
    else it->second += total;
  }
  return out;
}

bool within_nominal_quota(const ClusterState& s, const UsageTable& usage, const Job& job) {
  const auto& used = usage[job.team.index()];
  const auto& nominal = s.teams[job.team.index()].nominal;
  for (TypeId type : candidate_types(s, job)) {
    auto request = job_request(s, job, type, nullptr);
    bool all = !request.empty();
    for (const auto& [t, r] : request) all &= (used[t.index()] + r).fits_in(nominal[t.index()]);
    if (all) return true;
  }
  return false;
}

FreeAccelerators free_accelerators(const ClusterState& s, const RoomTable& room) {
  FreeAccelerators free(s.catalog.size());
  for (const NodeRoom& r : room) {
    if (!r.usable) continue;
    FreeOfType& f = free[r.type.index()];
    const int64_t a = r.free.accelerators;
    f.accelerators += a;
    f.largest = std::max(f.largest, a);
    if (r.replicas == 0 && !r.exclusive_owner.valid()) ++f.whole_nodes;
  }
  return free;
}

void FreeIndex::reset(const ClusterState& s, const RoomTable& room) {
  free_ = free_accelerators(s, room);
  nodes_with_.assign(s.catalog.size(), {});
  for (size_t t = 0; t < s.catalog.size(); ++t)
    nodes_with_[t].assign(static_cast<size_t>(s.catalog.at(TypeId(static_cast<uint32_t>(t))).accelerators) + 1, 0);
  for (const NodeRoom& r : room)
    if (r.usable) ++nodes_with_[r.type.index()][static_cast<size_t>(r.free.accelerators)];
}

void FreeIndex::took(const ClusterState& s, const RoomTable& room, const Job& job, const Placement& p) {
  for (const PodSet& ps : job.pod_sets)
    if (ps.topology.exclusive_level >= 0) return reset(s, room);
  for (NodeId n : p.nodes()) {
    int64_t replicas = 0, accelerators = 0;
    for (const auto& pp : p.pod_sets)
      for (const auto& r : pp.replicas)
        if (r.node == n) {
          ++replicas;
          accelerators += static_cast<int64_t>(r.accelerators.size());
        }
    const NodeRoom& r = room[n.index()];
    FreeOfType& f = free_[r.type.index()];
    auto& with = nodes_with_[r.type.index()];
    const int64_t now = r.free.accelerators, before = now + accelerators;
    --with[static_cast<size_t>(before)];
    ++with[static_cast<size_t>(now)];
    f.accelerators -= accelerators;
    if (r.replicas == replicas && !r.exclusive_owner.valid()) --f.whole_nodes;  // it held no replica before
    while (f.largest > 0 && with[static_cast<size_t>(f.largest)] == 0) --f.largest;
  }
}

namespace {

// Why the job cannot be placed on `type` with what is free, or "" when the bounds allow it (placement decides).
std::string short_of(const ClusterState& s, const Job& job, TypeId type, const FreeAccelerators& free,
                     const std::vector<std::pair<TypeId, Resources>>& request) {
  for (const auto& [t, r] : request)
    if (r.accelerators > free[t.index()].accelerators)
      return "capacity: needs " + std::to_string(r.accelerators) + " accelerators of " + s.catalog.at(t).name + ", " +
             std::to_string(free[t.index()].accelerators) + " are free now";
  for (const PodSet& ps : job.pod_sets) {
    TypeId t = ps.type.value_or(type);
    const FreeOfType& f = free[t.index()];
    if (ps.per_replica.whole_node && ps.replicas > f.whole_nodes)
      return "capacity: needs " + std::to_string(ps.replicas) + " whole " + s.catalog.at(t).name + " nodes, " +
             std::to_string(f.whole_nodes) + " are free now";
    if (!ps.per_replica.whole_node && ps.per_replica.accelerators && *ps.per_replica.accelerators > f.largest)
      return "capacity: no " + s.catalog.at(t).name + " node has " + std::to_string(*ps.per_replica.accelerators) +
             " free accelerators now (at most " + std::to_string(f.largest) + ")";
  }
  return "";
}

// Whether the job can never be placed on `type`, even on the empty cluster; cached by shape (state.h).
bool never_fits(const ClusterState& s, const Job& job, TypeId type, const RoomTable& pristine, std::string& reason) {
  if (s.never_fits_version != s.shape_version) {
    s.never_fits_by_shape.clear();
    s.never_fits_version = s.shape_version;
  }
  const uint64_t key = uint64_t{job.shape} << 32 | type.index();
  auto it = s.never_fits_by_shape.find(key);
  if (it == s.never_fits_by_shape.end()) {
    PlacementOutcome p = place_job(s, pristine, job, type);  // once per shape: no scratch needed
    it = s.never_fits_by_shape
             .emplace(key, p.ok ? "" : "never fits: " + p.reason + "; the cluster does not have that capacity")
             .first;
  }
  if (it->second.empty()) return false;
  reason = it->second;
  return true;
}

}  // namespace

AdmissionAttempt try_admit(const ClusterState& s, const RoomTable& room, const UsageTable& usage, const Job& job,
                           const AdmitOptions& o) {
  const RoomTable* pristine = o.pristine;
  const FreeAccelerators* free = o.free;
  AdmissionAttempt best;
  best.never = true;
  std::string quota_reason, placement_reason;
  bool any_type = false;
  for (TypeId type : candidate_types(s, job)) {
    if (o.only_types && std::find(o.only_types->begin(), o.only_types->end(), type) == o.only_types->end()) continue;
    std::string why;
    auto request = job_request(s, job, type, &why);
    if (request.empty()) {
      if (quota_reason.empty()) quota_reason = why;
      continue;
    }
    any_type = true;
    bool fits = true, within = true, never = false;
    std::string qreason;
    for (const auto& [t, r] : request) {
      QuotaVerdict v = check_quota(s, usage, job.team, t, r);
      within &= v.within_nominal;
      never |= v.never;
      if (!v.fits && fits) {
        fits = false;
        qreason = v.reason;
      }
    }
    best.within_nominal = within;
    if (!fits) {
      if (quota_reason.empty()) quota_reason = qreason;
      // A job the cluster as built can never hold says so, rather than naming the quota it also lacks: no
      // amount of waiting for quota would run it.
      std::string never_reason;
      if (pristine && !never && never_fits(s, job, type, *pristine, never_reason)) {
        never = true;
        if (placement_reason.empty()) placement_reason = never_reason;
      }
      // A type is hopeless only if quota or capacity can never hold the job there; one hopeful type is enough.
      if (!never) best.never = false;
      continue;
    }
    if (o.mode == BorrowMode::kWithinNominalOnly && !within) {
      best.never = false;
      if (quota_reason.empty()) quota_reason = "needs to borrow";
      continue;
    }
    best.quota_ok = true;
    PlacementOutcome p;
    const std::string lacking = free ? short_of(s, job, type, *free, request) : "";
    if (lacking.empty()) p = place_job(s, room, job, type, o.scratch);
    if (!p.ok) {
      p.reason = lacking.empty() ? p.reason : lacking;
      std::string never_reason;
      const bool hopeless = pristine && never_fits(s, job, type, *pristine, never_reason);
      if (hopeless) p.reason = never_reason;
      if (placement_reason.empty() || (!hopeless && placement_reason.starts_with("never"))) placement_reason = p.reason;
      if (!hopeless) best.never = false;
      continue;
    }
    best.ok = true;
    best.never = false;
    best.type = type;
    best.placement = std::move(p.placement);
    best.borrowing = !within;
    best.reason.clear();
    return best;
  }
  if (!any_type) best.never = true;
  // A hopeful type's reason beats a hopeless type's "never fits".
  bool prefer_quota = !best.never && placement_reason.starts_with("never") && !quota_reason.empty();
  best.reason = !placement_reason.empty() && !prefer_quota ? placement_reason : quota_reason;
  if (best.reason.empty()) best.reason = "no instance type in the cluster can serve its replicas";
  return best;
}

}  // namespace allot
