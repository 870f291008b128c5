#include "core/admission/admission.h"

#include <algorithm>
#include <optional>

#include "core/model/overloaded.h"
#include "core/model/plans.h"
#include "core/model/reservations.h"

namespace allot {

static_assert(static_cast<int>(Refusal::kUser) + 1 == kRefusalCount, "kRefusalCount counts every Refusal");

const char* refusal_name(Refusal r) {
  switch (r) {
    case Refusal::kQuota: return "quota";
    case Refusal::kPlacement: return "placement";
    case Refusal::kPlan: return "plan";
    case Refusal::kReservation: return "reservation";
    case Refusal::kLocality: return "locality";
    case Refusal::kUser: return "user";
  }
  return "?";  // not reached: every refusal is named above
}

bool AdmissionAttempt::never() const {
  return std::visit(Overloaded{[&](const Admitted&) { return !why.feasible; },
                               [&](Refusal r) {
                                 switch (r) {
                                   case Refusal::kPlan:
                                   case Refusal::kReservation: return true;
                                   case Refusal::kQuota:
                                   case Refusal::kPlacement:
                                   case Refusal::kLocality:
                                   case Refusal::kUser: return !why.feasible;
                                 }
                                 return true;  // not reached
                               }},
                    outcome);
}

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
  const Team& team = s.teams[job.team.index()];
  const auto& nominal = team.nominal;
  for (TypeId type : candidate_types(s, job)) {
    auto request = job_request(s, job, type, nullptr);
    bool all = !request.empty();
    for (const auto& [t, r] : request) all &= team.counted(t, used[t.index()] + r).fits_in(nominal[t.index()]);
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

// Why the job cannot be placed on `type` with what is free, or empty when the bounds allow it (placement
// decides).
Explanation short_of(const ClusterState& s, const Job& job, TypeId type, const FreeAccelerators& free,
                     const std::vector<std::pair<TypeId, Resources>>& request) {
  for (const auto& [t, r] : request)
    if (r.accelerators > free[t.index()].accelerators)
      return explain(ReasonCode::kCapacity, "capacity: needs " + std::to_string(r.accelerators) + " accelerators of " +
                                                s.catalog.at(t).name + ", " +
                                                std::to_string(free[t.index()].accelerators) + " are free now");
  for (const PodSet& ps : job.pod_sets) {
    TypeId t = ps.type.value_or(type);
    const FreeOfType& f = free[t.index()];
    if (ps.per_replica.whole_node && ps.replicas > f.whole_nodes)
      return explain(ReasonCode::kCapacity, "capacity: needs " + std::to_string(ps.replicas) + " whole " +
                                                s.catalog.at(t).name + " nodes, " + std::to_string(f.whole_nodes) +
                                                " are free now");
    if (!ps.per_replica.whole_node && ps.per_replica.accelerators && *ps.per_replica.accelerators > f.largest)
      return explain(ReasonCode::kCapacity, "capacity: no " + s.catalog.at(t).name + " node has " +
                                                std::to_string(*ps.per_replica.accelerators) +
                                                " free accelerators now (at most " + std::to_string(f.largest) + ")");
  }
  return {};
}

AdmissionAttempt try_admit_fixed(const ClusterState& s, const RoomTable& room, const UsageTable& usage, const Job& job,
                                 const AdmitOptions& o) {
  const RoomTable* pristine = o.pristine;
  // "Never fits" is asked only on the empty cluster; without the caller's cache, answers are kept for this call
  // (made only then: a pass always hands its own).
  std::optional<FitCache> own_fits;
  FitCache* shapes = !pristine ? nullptr : o.fit_cache ? o.fit_cache : &own_fits.emplace();
  const FreeAccelerators* free = o.free;
  AdmissionAttempt best;
  // A job on a plan that is not Active waits for the plan (or for good), whatever quota and room say.
  if (auto gate = plan_gate(s, job)) {
    best.why = std::move(*gate);
    best.outcome = Refusal::kPlan;
    return best;
  }
  // So does a job that names a reservation that is not Active.
  if (auto gate = named_reservation_gate(s, job)) {
    best.why = std::move(*gate);
    best.outcome = Refusal::kReservation;
    return best;
  }
  bool hopeless_everywhere = true;  // no type can ever hold it
  Explanation quota_why, placement_why;
  bool any_type = false;
  bool quota_ok = false;  // quota allowed it on some type: what failed then was placement
  for (TypeId type : candidate_types(s, job)) {
    if (o.only_types && std::find(o.only_types->begin(), o.only_types->end(), type) == o.only_types->end()) continue;
    std::string why;
    auto request = job_request(s, job, type, &why);
    if (request.empty()) {
      if (quota_why.empty() && !why.empty()) quota_why = explain(ReasonCode::kInstanceType, why);
      continue;
    }
    any_type = true;
    bool fits = true, within = true, never = false;
    Explanation qwhy;
    for (const auto& [t, r] : request) {
      QuotaVerdict v = check_quota(s, usage, job.team, t, r, o.pool);
      within &= v.within_nominal;
      never |= !v.why.feasible;
      if (!v.fits && fits) {
        fits = false;
        qwhy = std::move(v.why);
      }
    }
    if (!fits) {
      if (quota_why.empty()) quota_why = std::move(qwhy);
      // A job the cluster as built can never hold says so, rather than naming the quota it also lacks: no
      // amount of waiting for quota would run it.
      Explanation never_why;
      if (shapes && !never && shapes->never_fits(s, job, type, *pristine, never_why)) {
        never = true;
        if (placement_why.empty()) placement_why = std::move(never_why);
      }
      // A type is hopeless only if quota or capacity can never hold the job there; one hopeful type is enough.
      if (!never) hopeless_everywhere = false;
      continue;
    }
    if (o.mode == BorrowMode::kWithinNominalOnly && !within) {
      hopeless_everywhere = false;
      if (quota_why.empty()) quota_why = explain(ReasonCode::kNeedsBorrow, "needs to borrow");
      continue;
    }
    quota_ok = true;
    PlacementOutcome p;
    Explanation lacking = free ? short_of(s, job, type, *free, request) : Explanation{};
    if (lacking.empty()) {
      if (reserved_against(s, job)) {
        // Nodes held by Active reservations the job is not admitted to are closed to it (core/model/reservations.h);
        // only here, in the room it would run in, never in the pristine room that says what never fits.
        RoomTable open = room;
        close_reserved_nodes(s, job, open);
        p = place_job(s, open, job, type, o.scratch);
      } else {
        p = place_job(s, room, job, type, o.scratch);
      }
    }
    if (!p.ok) {
      if (!lacking.empty()) p.why = std::move(lacking);
      Explanation never_why;
      const bool hopeless = shapes && shapes->never_fits(s, job, type, *pristine, never_why);
      if (hopeless) p.why = std::move(never_why);
      else if (shapes && shapes->waits_for_nodes(s, job, type)) p.why.code = ReasonCode::kUnhealthyNodes;
      if (placement_why.empty() || (!hopeless && placement_why.code == ReasonCode::kNeverFits))
        placement_why = std::move(p.why);
      if (!hopeless) hopeless_everywhere = false;
      continue;
    }
    best.outcome = Admitted{.borrowing = !within};
    best.type = type;
    best.placement = std::move(p.placement);
    best.why = {};
    return best;
  }
  if (!any_type) hopeless_everywhere = true;
  // A hopeful type's reason beats a hopeless type's "never fits".
  const bool prefer_quota = !hopeless_everywhere && placement_why.code == ReasonCode::kNeverFits && !quota_why.empty();
  best.why = !placement_why.empty() && !prefer_quota ? std::move(placement_why) : std::move(quota_why);
  if (best.why.empty()) best.why = explain(ReasonCode::kInstanceType, "no instance type in the cluster can serve its replicas");
  best.why.feasible = !hopeless_everywhere;
  best.outcome = quota_ok ? Refusal::kPlacement : Refusal::kQuota;
  // A plan whose nodes have not all joined: the job waits for them, whatever the nodes there are say now.
  if (auto gate = plan_gate(s, job, /*joined_short=*/true)) {
    best.why = std::move(*gate);
    best.outcome = Refusal::kPlan;
  }
  return best;
}

}  // namespace

Job job_at_size(const Job& job, int size) {
  Job out;
  out.id = job.id;
  out.team = job.team;
  out.priority = job.priority;
  out.pod_sets = job.pod_sets;
  out.shape = job.shape;
  out.elastic_pod_set = job.elastic_pod_set;
  out.plan = job.plan;  // at any size it runs on its plan's nodes only, and waits for its plan
  out.spec.user = job.spec.user;  // reservations for one user admit it at any size (core/model/reservations.h)
  out.spec.reservation = job.spec.reservation;  // and the reservation it names holds it at any size
  if (job.elastic()) out.pod_sets[static_cast<size_t>(job.elastic_pod_set)].replicas = size;
  return out;
}

// An elastic job is tried at every size from its largest down to its smallest (sizes that do not divide into
// its slices are skipped), and admitted at the first that fits. Only the smallest size asks whether the job
// can ever fit: the "never fits" and "waits for nodes" caches are keyed by the job's shape, and always answer
// for its smallest size.
AdmissionAttempt try_admit(const ClusterState& s, const RoomTable& room, const UsageTable& usage, const Job& job,
                           const AdmitOptions& o) {
  if (!job.elastic()) return try_admit_fixed(s, room, usage, job, o);
  const PodSet& e = job.pod_sets[static_cast<size_t>(job.elastic_pod_set)];
  const int slice = std::max(1, e.topology.slice_size);
  const int lo = std::max(e.min_replicas, o.min_size);
  for (int size = o.max_size > 0 ? std::min(o.max_size, e.replicas) : e.replicas; size > lo; --size) {
    if (size % slice != 0) continue;
    AdmitOptions larger = o;
    larger.pristine = nullptr;
    AdmissionAttempt a = try_admit_fixed(s, room, usage, job_at_size(job, size), larger);
    if (a.ok()) return a;
  }
  if (lo != e.min_replicas) {
    AdmitOptions larger = o;
    larger.pristine = nullptr;
    return try_admit_fixed(s, room, usage, job_at_size(job, lo), larger);
  }
  return try_admit_fixed(s, room, usage, job_at_size(job, lo), o);
}

}  // namespace allot
