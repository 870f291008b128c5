// The strict-FIFO baseline (policy.strict_fifo): one line in arrival order, borrowing allowed, no preemption;
// the first job that cannot run now blocks the rest (a job that can never run is skipped, or the queue would
// stop for good). It replaces the phases of a step; replays compare against it.
#include <algorithm>

#include "core/pass/phases.h"

namespace allot {

void admit_strict_fifo(Pass& p) {
  std::vector<JobId> line = p.waiting;
  std::stable_sort(line.begin(), line.end(), [&](JobId a, JobId b) { return p.job(a).arrival < p.job(b).arrival; });
  const PooledReason* behind = nullptr;  // the reason of every job after the head
  for (JobId id : line) {
    Pass::PassJob& r = p.rec(id);
    if (!r.waiting) continue;
    if (behind) {
      r.why = behind;
      continue;
    }
    const auto [a, reason] = p.attempt(id, BorrowMode::kAllowBorrowing);
    const Job& j = p.job(id);
    if (a->ok()) {
      p.admit(j, *a, "");
      continue;
    }
    r.why = reason;
    if (!a->never())
      behind = p.texts.add(explain(ReasonCode::kStrictFifo, "waiting: strict FIFO, behind job " + j.spec.name));
  }
}

}  // namespace allot
