#include "core/admission.h"

#include <algorithm>
#include <bit>

namespace allot {

std::vector<TypeId> candidate_types(const ClusterState& s, const Job& job) {
  bool untyped = false;
  for (const auto& ps : job.pod_sets) untyped |= !ps.type.has_value();
  if (!untyped) return {job.pod_sets.front().type.value()};
  std::vector<TypeId> out;
  auto add = [&](TypeId t) {
    if (s.type_capacity(t).is_zero() && s.teams[job.team.index()].nominal[t.index()].is_zero()) return;
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  };
  for (const auto& a : s.teams[job.team.index()].spec.allocation)
    if (auto t = s.catalog.find(a.instance_type)) add(*t);
  std::vector<TypeId> rest;
  for (size_t i = 0; i < s.catalog.size(); ++i) rest.emplace_back(static_cast<uint32_t>(i));
  std::sort(rest.begin(), rest.end(), [&](TypeId a, TypeId b) { return s.catalog.at(a).name < s.catalog.at(b).name; });
  for (TypeId t : rest) add(t);
  return out;
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

FreeAccelerators free_accelerators(const ClusterState& s, const RoomTable& room) {
  FreeAccelerators free(s.catalog.size(), 0);
  for (const Node& n : s.nodes)
    if (room[n.id.index()].usable) free[n.type.index()] += std::popcount(room[n.id.index()].accelerators_free);
  return free;
}

namespace {

// Whether the job can never be placed on `type`, even on the empty cluster; cached on the job (model.h).
bool never_fits(const ClusterState& s, const Job& job, TypeId type, const RoomTable& pristine, std::string& reason) {
  if (job.fit_shape != s.shape_version || job.fit_type != type) {
    PlacementOutcome p = place_job(s, pristine, job, type, nullptr);
    job.fit_shape = s.shape_version;
    job.fit_type = type;
    job.fit_never = !p.ok;
    job.fit_never_reason = p.ok ? "" : "never fits: " + p.reason + "; the cluster does not have that capacity";
  }
  if (job.fit_never) reason = job.fit_never_reason;
  return job.fit_never;
}

}  // namespace

AdmissionAttempt try_admit(const ClusterState& s, const RoomTable& room, const UsageTable& usage, const Job& job,
                           BorrowMode mode, const RoomTable* pristine, const std::vector<TypeId>* only_types,
                           const FreeAccelerators* free) {
  AdmissionAttempt best;
  best.never = true;
  std::string quota_reason, placement_reason;
  bool any_type = false;
  for (TypeId type : candidate_types(s, job)) {
    if (only_types && std::find(only_types->begin(), only_types->end(), type) == only_types->end()) continue;
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
    if (mode == BorrowMode::kWithinNominalOnly && !within) {
      best.never = false;
      if (quota_reason.empty()) quota_reason = "needs to borrow";
      continue;
    }
    best.quota_ok = true;
    PlacementOutcome p;
    std::string short_of;
    if (free)
      for (const auto& [t, r] : request)
        if (r.accelerators > (*free)[t.index()] && short_of.empty())
          short_of = "capacity: needs " + std::to_string(r.accelerators) + " accelerators of " + s.catalog.at(t).name +
                     ", " + std::to_string((*free)[t.index()]) + " are free now";
    if (short_of.empty()) p = place_job(s, room, job, type, nullptr);
    if (!p.ok) {
      p.reason = short_of.empty() ? p.reason : short_of;
      std::string never_reason;
      if (pristine && never_fits(s, job, type, *pristine, never_reason)) {
        p.never = true;
        p.reason = never_reason;
      }
      if (placement_reason.empty() || (!p.never && placement_reason.starts_with("never"))) placement_reason = p.reason;
      if (!p.never) best.never = false;
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
