#include "core/backfill.h"

#include <algorithm>

#include "core/admission.h"
#include "core/time_limit.h"

namespace allot {

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
  if (!a.ok) return std::nullopt;
  size_t lo = 0, hi = group_end.size() - 1;  // the answer is in [lo, hi]
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (AdmissionAttempt m = try_after(mid); m.ok) {
      hi = mid;
      a = std::move(m);
    } else {
      lo = mid + 1;
    }
  }
  BackfillReservation r{holder.id, ends[group_end[hi] - 1].first, std::vector<char>(s.nodes.size(), 0), a.placement.nodes()};
  for (NodeId n : r.nodes) r.reserved[n.index()] = 1;
  return r;
}

bool clear_of(const BackfillReservation& r, const Job& j, const Placement& p, Time now) {
  if (auto left = time_left(j, now); left && now + *left <= r.at) return true;
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
