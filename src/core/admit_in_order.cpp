// Phase 1 of a step (phases.h): admissions without preemption, in queue order.
#include "core/phases.h"

namespace allot {

bool admit_in_order(Pass& p, BorrowMode mode) {
  bool any = false;
  for (JobId id : p.waiting) {
    Pass::PassJob& r = p.rec(id);
    if (!r.waiting || r.blocked) continue;
    const auto [a, reason] = p.attempt(id, mode);
    if (a->never()) r.never = true;
    const Job& j = p.job(id);
    if (a->ok) {
      if (auto holder = p.reserved_by(*a, j)) {
        r.why = p.reserved_reason(*a, *holder);
        continue;
      }
      p.admit(j, *a, "");
      any = true;
      continue;
    }
    // Admissions only take room, so a job that does not fit now will not fit later in this step.
    r.blocked = true;
    // A job that only needs to borrow waits for phase 3, which gives the reason that matters to it.
    if (mode == BorrowMode::kWithinNominalOnly && !a->quota_ok && a->why.code == ReasonCode::kNeedsBorrow) continue;
    r.why = reason;
    p.maybe_reserve(j, *a);
  }
  return any;
}

}  // namespace allot
