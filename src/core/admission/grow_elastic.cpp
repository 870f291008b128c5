// After a pass reaches its fixed point: elastic jobs below their largest size grow (phases.h).
#include <algorithm>

#include "core/pass/phases.h"
#include "core/quota/user_limits.h"

namespace allot {

namespace {

// The instance types some job still waiting in this pass could run on. Capacity of these types is never idle
// to an elastic job, however long it has been free: growing into it would take what the queue waits for and
// shrink again as soon as that job could run (flapping). Jobs that can never run want nothing.
std::vector<char> types_wanted(Pass& p) {
  std::vector<char> wanted(p.s.catalog.size(), 0);
  for (JobId id : p.waiting) {
    const Pass::PassJob& r = p.rec(id);
    if (!r.waiting || r.never) continue;
    const Job& j = p.job(id);
    for (TypeId t : candidate_types(p.s, j)) wanted[t.index()] = 1;
    for (const PodSet& ps : j.pod_sets)
      if (ps.type) wanted[ps.type->index()] = 1;
  }
  return wanted;
}

std::string grow_reason(const ClusterState& s, const Job& j, const AdmissionAttempt& a, int to, int64_t delay) {
  const std::string nodes = placed_nodes_text(s, a.placement);
  return "grew from " + std::to_string(j.size()) + " to " + std::to_string(to) + " of " + std::to_string(j.max_size()) +
         " replicas on " + nodes + ": capacity of " + s.catalog.at(a.type).name + " idle for at least " +
         std::to_string(delay) + " s that no waiting job can use" + (a.borrowing() ? " (borrowed idle quota)" : "") +
         "; restarted from its last checkpoint";
}

}  // namespace

bool grow_elastic(Pass& p) {
  const int64_t delay = p.s.policy.elastic_grow_delay_s;
  std::vector<char> wanted;
  bool any = false;
  for (JobId id : p.s.running_jobs.sorted()) {
    const Job& j = p.job(id);
    if (!j.elastic() || j.size() >= j.max_size()) continue;
    // Its user's accelerator limit (user_limits.h) was judged at admission; growing could take the user over it.
    if (const UserLimits* l = limits_of(p.s.teams[j.team.index()], j.spec.user); l && !l->accelerators.empty()) continue;
    // A resize restarts the run, so this also keeps a job to one resize per delay.
    if (p.now - j.started_at < delay) continue;
    if (wanted.empty()) wanted = types_wanted(p);
    const PodSetPlacement& held = j.placement.pod_sets[static_cast<size_t>(j.elastic_pod_set)];
    bool queue_wants = false;
    for (const auto& ps : j.placement.pod_sets) queue_wants |= wanted[ps.type.index()] != 0;
    if (queue_wants) continue;
    // Placed as if the job had stopped: a resize restarts every replica, so the new placement need not keep
    // the old one. Other nodes count only once nothing has started or stopped there for the delay.
    RoomTable room = p.s.room;
    UsageTable usage = p.s.usage;
    release(room, usage, p.s, j, j.placement);
    const std::vector<NodeId> own = j.placement.nodes();
    for (size_t n = 0; n < room.size(); ++n)
      if (p.now - p.s.room_changed_at[n] < delay && !std::binary_search(own.begin(), own.end(), NodeId(static_cast<uint32_t>(n))))
        room[n].usable = false;
    const std::vector<TypeId> type = {held.type};
    AdmissionAttempt a = try_admit(p.s, room, usage, j,
                                   AdmitOptions{.mode = BorrowMode::kAllowBorrowing, .only_types = &type,
                                                .scratch = &p.scratch, .min_size = j.size() + 1});
    if (!a.ok()) continue;
    const int to = static_cast<int>(a.placement.pod_sets[static_cast<size_t>(j.elastic_pod_set)].replicas.size());
    std::string reason = grow_reason(p.s, j, a, to, delay);
    p.resize(ResizeDecision{.job = id, .placement = std::move(a.placement), .borrowing = a.borrowing(), .from = j.size(),
                            .to = to, .cause = ResizeCause::kGrow, .for_job = {}, .reason = std::move(reason), .record = nullptr});
    any = true;
  }
  return any;
}

}  // namespace allot
