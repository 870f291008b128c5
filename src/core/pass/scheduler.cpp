#include "core/pass/scheduler.h"

#include "core/model/dependency.h"
#include "core/pass/phases.h"

namespace allot {

ScheduleResult schedule(ClusterState& state, Time now, const ScheduleOptions& options) {
  Pass p(state, now, options);
  p.pass.resize(state.jobs.size());
  p.collect_waiting();
  p.free.reset(state, state.room);
  // Each step admits one job or ends the loop, and a job is preempted only by one that outranks it or
  // reclaims quota, so the loop ends; the bound only guards against a bug.
  const int64_t bound = options.max_steps > 0 ? options.max_steps : 8 * static_cast<int64_t>(state.jobs.size()) + 64;
  bool fixed_point = false;
  // Jobs waiting for another to start may rejoin once this pass admitted it (rejoin_dependents): the loop runs
  // again with them, so a chain `after: started` needs no second pass.
  do {
    fixed_point = false;
    if (state.policy.strict_fifo) {
      ++p.result.steps;
      admit_strict_fifo(p);
      fixed_point = true;
    }
    while (!fixed_point && p.result.steps < bound) {
      p.step_begins();
      ++p.result.steps;
      if (admit_in_order(p, BorrowMode::kWithinNominalOnly)) continue;
      if (state.policy.preemption && preempt_in_order(p, true)) continue;
      if (admit_borrowers(p)) continue;
      if (state.policy.preemption && preempt_in_order(p, false)) continue;
      // Only with fair sharing: without it, a reclaim made possible by a borrower admitted in this pass waits for
      // the next pass, as it always has (the switch off must keep every earlier result).
      if (state.policy.preemption && state.policy.fair_share_preemption && p.plan_again()) continue;
      fixed_point = true;
    }
  } while (fixed_point && p.result.steps < bound && p.rejoin_dependents());
  if (fixed_point) grow_elastic(p);
  else p.note_bound_hit();
  p.give_reasons();
  p.keep_locality_waits();
  if (p.backfill && p.pass[p.backfill->holder.index()].waiting) p.result.reservation = std::move(p.backfill);
  p.result.next_wakeup = p.wakeup();
  ScheduleResult r = std::move(p.result);
  // Waiting jobs' explanations leave the pass as values, like its decisions, and the state applies them.
  explain_waiting(state, r.waiting);
  for (const LocalityWaitStart& w : r.locality_waits) {
    auto st = start_locality_wait(state, w.job, w.from);
    (void)st;  // keep_locality_waits() left only jobs still waiting, each once, none with a start already
  }
  for (const DependencyEnd& e : r.dependency_ends) {
    const Job& j = state.jobs[e.job.index()];
    auto st = end_for_dependency(state, j.spec.name, j.spec.after[e.which].job, now);
    (void)st;  // collect_waiting() found it waiting, never run, and its dependency failed for good
  }
  return r;
}

}  // namespace allot
