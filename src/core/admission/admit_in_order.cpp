// Phase 1 of a step (phases.h): admissions without preemption, in queue order.
#include <optional>

#include "core/pass/phases.h"

namespace allot {

namespace {

int elastic_size(const Job& j, const AdmissionAttempt& a) {
  return static_cast<int>(a.placement.pod_sets[static_cast<size_t>(j.elastic_pod_set)].replicas.size());
}

// An elastic job that fits within its team's nominal quota at some size is admitted at the largest size that
// fits with the borrowing rules, like any admission (docs/scheduling.md, "Elastic jobs"): the replicas above
// the nominal quota are borrowed, and reclaim shrinks them first. `within` is the admission found within the
// nominal quota; a larger size replaces it only on the same instance type, so the job keeps the type that
// admission order chose. Null when no larger size fits (or the job is not elastic): admit `within`.
std::optional<AdmissionAttempt> larger_with_borrowing(Pass& p, const Job& j, const AdmissionAttempt& within) {
  if (!j.elastic() || elastic_size(j, within) >= j.max_size()) return std::nullopt;
  const std::vector<TypeId> type = {within.type};
  AdmissionAttempt a = try_admit(p.s, p.s.room, p.s.usage, j,
                                 AdmitOptions{.mode = BorrowMode::kAllowBorrowing, .only_types = &type,
                                              .scratch = &p.scratch, .min_size = elastic_size(j, within) + 1});
  if (!a.ok() || elastic_size(j, a) <= elastic_size(j, within)) return std::nullopt;
  return a;
}

}  // namespace

bool admit_in_order(Pass& p, BorrowMode mode) {
  bool any = false;
  for (JobId id : p.waiting) {
    Pass::PassJob& r = p.rec(id);
    if (!r.waiting || r.blocked) continue;
    const auto [a, reason] = p.attempt(id, mode);
    if (a->never()) r.never = true;
    const Job& j = p.job(id);
    if (a->ok()) {
      std::optional<AdmissionAttempt> larger;
      if (mode == BorrowMode::kWithinNominalOnly) larger = larger_with_borrowing(p, j, *a);
      // Larger, it may be spread where the size found first was not: it runs at that size instead, in one domain.
      if (larger && p.would_hold_for_locality(j, *larger)) larger.reset();
      const AdmissionAttempt& fits = larger ? *larger : *a;
      if (auto holder = p.reserved_by(fits, j)) {
        r.why = p.reserved_reason(fits, *holder);
        continue;
      }
      const AdmissionAttempt* chosen = p.keep_clear(j, fits, mode);
      if (!chosen) continue;  // it would take the backfill reservation's nodes past its time; the reason is set
      p.admit(j, *chosen, "");
      any = true;
      continue;
    }
    // Admissions only take room, so a job that does not fit now will not fit later in this step.
    r.blocked = true;
    // The backfill reservation is made here for a job that needs to borrow too: where one team owns the cluster,
    // quota and capacity run out together, and the jobs after it in this phase must already keep clear of it.
    p.maybe_reserve_backfill(j, *a);
    // A job that only needs to borrow waits for phase 3, which gives the reason that matters to it.
    if (mode == BorrowMode::kWithinNominalOnly && a->refusal() == Refusal::kQuota && a->why.code == ReasonCode::kNeedsBorrow)
      continue;
    r.why = reason;
    p.maybe_reserve(j, *a);
  }
  return any;
}

}  // namespace allot
