#include "core/admission/backfill.h"

#include <algorithm>

#include "core/admission/admission.h"
#include "core/quota/quota.h"
#include "core/lifecycle/time_limit.h"

namespace allot {

namespace {

// Adds (sign 1) or takes away (-1) what `j` holds on `p` in `usage`.
void count_in(UsageTable& usage, const Job& j, const Placement& p, int64_t sign) {
  for (const auto& ps : p.pod_sets)
    usage[j.team.index()][ps.type.index()] += ps.per_replica * (sign * static_cast<int64_t>(ps.replicas.size()));
}

}  // namespace

std::optional<BackfillReservation> plan_reservation(const ClusterState& s, const Job& holder, Time now) {
  std::vector<std::pair<Time, JobId>> ends;
  for (JobId id : s.running_jobs)
    if (auto at = time_limit_at(s.jobs[id.index()])) ends.emplace_back(std::max(*at, now), id);
  std::sort(ends.begin(), ends.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.value < b.second.value;
  });
  // The distinct end times: every job ending at the same second ends before the holder is tried.
  std::vector<size_t> group_end;  // one past the last job of each distinct time
  for (size_t i = 0; i < ends.size(); ++i)
    if (i + 1 == ends.size() || ends[i + 1].first != ends[i].first) group_end.push_back(i + 1);
  // The holder placed once the jobs ending by group g's time have ended.
  auto try_after = [&](size_t g) {
    RoomTable room = s.room;
    UsageTable usage = s.usage;
    for (size_t i = 0; i < group_end[g]; ++i) {
      const Job& j = s.jobs[ends[i].second.index()];
      release(room, usage, s, j, j.placement);
    }
    return try_admit(s, room, usage, holder, AdmitOptions{.mode = BorrowMode::kAllowBorrowing});
  };
  // Ending more jobs only frees room and quota, so whether the holder fits grows with time: the earliest time is
  // found by bisection, a few placements however many jobs run (a placement at every end cost one per running job).
  if (group_end.empty()) return std::nullopt;
  AdmissionAttempt a = try_after(group_end.size() - 1);  // the placement at hi, the earliest time known to fit
  if (!a.ok()) return std::nullopt;
  size_t lo = 0, hi = group_end.size() - 1;  // the answer is in [lo, hi]
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (AdmissionAttempt m = try_after(mid); m.ok()) {
      hi = mid;
      a = std::move(m);
    } else {
      lo = mid + 1;
    }
  }
  // Quota at that time, for the jobs admitted after the reservation (quota_clear_of): the usage without the jobs
  // that have ended by then.
  BackfillReservation r{.holder = holder.id, .at = ends[group_end[hi] - 1].first,
                        .reserved = std::vector<char>(s.nodes.size(), 0), .nodes = a.placement.nodes(), .usage_at = s.usage,
                        .need = job_request(s, holder, a.type, nullptr), .within_nominal = !a.borrowing()};
  for (NodeId n : r.nodes) r.reserved[n.index()] = 1;
  for (size_t i = 0; i < group_end[hi]; ++i) {
    const Job& j = s.jobs[ends[i].second.index()];
    count_in(r.usage_at, j, j.placement, -1);
  }
  return r;
}

bool ends_by(const BackfillReservation& r, const Job& j, Time now) {
  const std::optional<int64_t> left = time_left(j, now);
  return left && now + *left <= r.at;
}

bool quota_clear_of(const ClusterState& s, BackfillReservation& r, const Job& j, const Placement& p, Time now,
                    std::span<const JobId> released) {
  if (ends_by(r, j, now)) return true;
  // Counted in place and taken out again: a pass checks many jobs against one reservation, and a copy of the
  // usage table per check cost an allocation per team.
  auto counted_at = [&](const Job& v) { return !ends_by(r, v, now); };  // would still run at r.at
  count_in(r.usage_at, j, p, 1);
  for (JobId id : released)
    if (const Job& v = s.jobs[id.index()]; counted_at(v)) count_in(r.usage_at, v, v.placement, -1);
  const Job& holder = s.jobs[r.holder.index()];
  bool fits = true;
  for (const auto& [type, request] : r.need) fits = fits && check_quota(s, r.usage_at, holder.team, type, request).fits;
  for (JobId id : released)
    if (const Job& v = s.jobs[id.index()]; counted_at(v)) count_in(r.usage_at, v, v.placement, 1);
  count_in(r.usage_at, j, p, -1);
  return fits;
}

void count_at(BackfillReservation& r, const Job& j, const Placement& p, Time now, int sign) {
  if (!ends_by(r, j, now)) count_in(r.usage_at, j, p, sign);
}

bool clear_of(const BackfillReservation& r, const Job& j, const Placement& p, Time now) {
  if (ends_by(r, j, now)) return true;
  for (const auto& ps : p.pod_sets)
    for (const auto& rep : ps.replicas)
      if (rep.node.index() < r.reserved.size() && r.reserved[rep.node.index()]) return false;
  return true;
}

RoomTable without_reserved(const RoomTable& room, const BackfillReservation& r) {
  RoomTable out = room;
  for (NodeId n : r.nodes)
    if (n.index() < out.size()) out[n.index()].usable = false;
  return out;
}

std::string reserved_nodes_text(const ClusterState& s, const BackfillReservation& r) {
  constexpr size_t kNamed = 4;
  std::string out = r.nodes.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < r.nodes.size() && i < kNamed; ++i) {
    if (i) out += i + 1 == r.nodes.size() ? " and " : ", ";
    out += s.nodes[r.nodes[i].index()].name;
  }
  if (r.nodes.size() > kNamed) out += " and " + std::to_string(r.nodes.size() - kNamed) + " more";
  return out;
}

}  // namespace allot
