// Phases 2 and 4 of a step (phases.h): admissions that need preemption, in queue order, at most one per call.
#include <algorithm>

#include "core/admission/backfill.h"
#include "core/placement/locality_wait.h"
#include "core/model/overloaded.h"
#include "core/pass/phases.h"
#include "core/preemption/preemption.h"
#include "core/preemption/preemption_record.h"
#include "core/quota/quota.h"
#include "core/preemption/shrink.h"

namespace allot {
namespace {

// Would the capacity this job borrows be reclaimed at once by a pending job of another lending team? Such a
// job fits within its own nominal quota and could be placed once the victims are gone.
const PooledReason* would_oscillate(Pass& p, const Job& j, const PreemptionPlan& plan) {
  RoomTable room = p.s.room;
  UsageTable usage = p.s.usage;
  release_victims(p.s, plan.victims, room, usage);
  for (JobId id : p.waiting) {
    if (!p.rec(id).waiting) continue;
    const Job& other = p.job(id);
    if (other.team == j.team || !p.s.teams[other.team.index()].lends()) continue;
    AdmissionAttempt a =
        try_admit(p.s, room, usage, other, AdmitOptions{.mode = BorrowMode::kWithinNominalOnly, .scratch = &p.scratch});
    if (!a.ok()) continue;
    return p.texts.add(explain(ReasonCode::kOscillation, "waiting: it would borrow capacity that " +
                                                             job_ref(other.spec.name, p.s.teams[other.team.index()].spec.name) +
                                                             " can reclaim at once within its nominal quota"));
  }
  return nullptr;
}

// Why the victim stops (or, shrunk, why it runs smaller): the rule, the preemptor, and for a shrink the sizes.
RefText victim_reason(const ClusterState& s, const Job& j, const Job& victim, const Victim& v) {
  const Team& team = s.teams[j.team.index()];
  const Team& vt = s.teams[victim.team.index()];
  const std::string what =
      v.shrunk() ? "shrank from " + std::to_string(victim.size()) + " to " + std::to_string(v.keep) + " of " +
                       std::to_string(victim.max_size()) + " replicas instead of being preempted"
                 : "preempted";
  const std::string restart = v.shrunk() ? "; restarted from its last checkpoint" : "";
  switch (v.rule) {
    case PreemptionRule::kReclaim:
      return what + " (reclaim): team " + team.spec.name + " takes back its lent quota for " + job_ref(j.spec.name, team.spec.name) +
             "; team " + vt.spec.name + " was above its nominal quota" + restart;
    case PreemptionRule::kPriority:
      return what + " by job " + j.spec.name + " of the same team (priority " +
             (j.spec.priority.empty() ? "none" : j.spec.priority) + ", weight " + std::to_string(j.priority) + " over " +
             (victim.spec.priority.empty() ? "none" : victim.spec.priority) + ", weight " +
             std::to_string(victim.priority) + ")" + restart;
    case PreemptionRule::kFairShare:
      return what + " (fair share): " + v.why + restart;
  }
  return "";
}

// Whether `job`'s team is above its nominal quota, with `usage`, on a type `p` uses.
bool borrows_in(const ClusterState& s, const UsageTable& usage, const Job& job, const Placement& p) {
  for (const auto& ps : p.pod_sets)
    if (above_nominal(s, usage, job.team, ps.type)) return true;
  return false;
}

// Applies a plan: every victim, then the job.
// The group's record (preemption_record.h) is built from the usage before the first victim and the state after
// the admission, and handed to the group's decisions and the pass result.
void execute(Pass& p, const Job& j, const PreemptionPlan& plan) {
  const UsageTable usage_before = p.s.usage;
  const size_t first = p.result.decisions.size();
  std::vector<PreemptedJob> victims;
  std::vector<TypeId> types;
  RefText names;
  RefText shrunk;
  for (const auto& v : plan.victims) {
    const Job& victim = p.job(v.job);
    add_types(victim.placement, types);
    if (v.shrunk()) {
      // A shrink is a resize of the victim, on the replicas it keeps (ranks 0..keep-1 where they were).
      const int from = victim.size();
      victims.push_back({v.job, victim.team, v.rule, from, v.keep});
      Placement kept = kept_placement(victim, v.keep);
      UsageTable after = p.s.usage;
      for (const auto& ps : elastic_ranks(victim, v.keep, from).pod_sets)
        after[victim.team.index()][ps.type.index()] -= ps.per_replica * static_cast<int64_t>(ps.replicas.size());
      const bool borrowing = borrows_in(p.s, after, victim, kept);
      shrunk += (shrunk.empty() ? "" : ", ") +
                (victim.team == j.team ? victim.spec.name : job_ref(victim.spec.name, p.s.teams[victim.team.index()].spec.name)) +
                " from " + std::to_string(from) + " to " + std::to_string(v.keep);
      RefText reason = victim_reason(p.s, j, victim, v);
      p.resize(ResizeDecision{.job = v.job, .placement = std::move(kept), .borrowing = borrowing, .from = from,
                              .to = v.keep, .cause = ResizeCause::kShrink, .for_job = j.id, .rule = v.rule,
                              .reason = std::move(reason), .record = nullptr});
      continue;
    }
    victims.push_back({v.job, victim.team, v.rule});
    p.preempt(PreemptDecision{
        .job = v.job, .preemptor = j.id, .rule = v.rule, .reason = victim_reason(p.s, j, victim, v), .record = nullptr});
    // Another team's victim is named as a job reference, which the server hides from that team's outsiders.
    names += (names.empty() ? "" : ", ") +
             (victim.team == j.team ? victim.spec.name : job_ref(victim.spec.name, p.s.teams[victim.team.index()].spec.name));
  }
  p.free.reset(p.s, p.s.room);  // the victims' accelerators are free again
  RefText after = shrunk.empty() ? RefText() : "shrinking " + shrunk;
  if (!names.empty()) after += (after.empty() ? "" : " and ") + std::string("preempting ") + names;
  p.admit(j, plan.admission, "; after " + after);
  add_types(plan.admission.placement, types);
  auto record = std::make_shared<const PreemptionRecord>(preemption_record(p.s, usage_before, j.id, std::move(victims), types));
  for (size_t i = first; i < p.result.decisions.size(); ++i)
    std::visit(Overloaded{[&](PreemptDecision& d) { d.record = record; },
                          [&](ResizeDecision& d) { d.record = record; },
                          [](AdmitDecision&) {}},
               p.result.decisions[i]);
  p.result.preemptions.push_back(std::move(record));
  // Room was released: every earlier "does not fit" may have changed.
  p.pass.for_each_allocated([](Pass::PassJob& r) { r.blocked = r.borrow_blocked = r.preempt_tried = false; });
}

// Whether `plan` for `j` may be carried out: a job behind the backfill reservation's holder preempts only as far
// as it keeps clear of the reservation: off the reserved nodes (or ending before the reserved time), and leaving
// the holder its quota then. One that takes back its team's lent quota (within its nominal quota) may still do so
// against a holder that would borrow: reclaim outranks borrowing, whoever holds the reservation (docs/scheduling.md,
// "Backfill"). When not, the job's reason says why.
bool keeps_clear_of_backfill(Pass& p, const Job& j, const PreemptionPlan& plan, bool want_within_nominal) {
  if (!p.behind_holder(j) || !(p.backfill->within_nominal || !want_within_nominal)) return true;
  std::vector<JobId> stopped;  // shrunk victims keep running, so they give no quota back here
  for (const Victim& v : plan.victims)
    if (!v.shrunk()) stopped.push_back(v.job);
  const bool nodes = clear_of(*p.backfill, j, plan.admission.placement, p.now);
  if (nodes && quota_clear_of(p.s, *p.backfill, j, plan.admission.placement, p.now, stopped)) return true;
  p.rec(j.id).preempt_why = p.reserved_for_holder(j, nodes);  // joined to what a later phase says of it
  return false;
}

// A job waiting for locality (docs/scheduling.md, "Waiting for locality") may preempt to run in one domain of its
// preferred level, by the rules of any preemption (reclaim, priority, fair share): the plan is made for the job
// with its `preferred` requests made `required`, so it never spreads the job. Null when no such plan exists.
std::optional<PreemptionPlan> one_domain_plan(Pass& p, const Job& j, const PreemptionHints& hints) {
  Explanation why_not;
  return plan_preemption(p.s, in_one_domain(j), PreemptionQuery{.allow_reclaim = true, .now = p.now, .hints = &hints, .tables = &p.trial_tables},
                         why_not);
}

}  // namespace

bool preempt_in_order(Pass& p, bool want_within_nominal) {
  for (JobId id : p.waiting) {
    Pass::PassJob& r = p.rec(id);
    if (!r.waiting || r.preempt_tried || r.never) continue;
    // Preemption never makes room for a job over its user's limit (user_limits.h), nor for one its limit keeps
    // to some types: a plan could place it on another.
    if (!p.may_preempt_for(id)) continue;
    const Job& j = p.job(id);
    if (r.waits_for_locality) {
      // It could run spread without preemption and waits for one domain instead: it preempts only to run in one.
      // Its plan is its own (it depends on its wait), never its class's.
      if (within_nominal_quota(p.s, p.s.usage, j) != want_within_nominal) continue;
      r.preempt_tried = true;
      std::optional<PreemptionPlan> plan = one_domain_plan(p, j, p.hints());
      if (!plan || !keeps_clear_of_backfill(p, j, *plan, want_within_nominal)) continue;
      if (plan->admission.borrowing() && would_oscillate(p, j, *plan)) continue;  // it keeps its locality reason
      execute(p, j, *plan);
      return true;
    }
    ClassMemo::Preemption& m = p.memo.preemption(r.preemption_class);
    if (m.epoch != p.epoch) {
      ClassMemo::WithinNominal& w = p.memo.within_nominal(r.admission_class);
      const uint64_t changes = p.usage_changes(TeamId(r.team));  // the record's: no read of the Job
      if (w.changes != changes) w = {.changes = changes, .within = within_nominal_quota(p.s, p.s.usage, j)};
      m = ClassMemo::Preemption{.epoch = p.epoch, .within_nominal = w.within};
    }
    if (m.within_nominal != want_within_nominal) continue;
    r.preempt_tried = true;
    if (m.tried) {
      // A job of the same class found no plan at this epoch: this one would not either. Oscillation is
      // told apart from "no plan" because a later phase rewrites why and preempt_why is joined at the end.
      (m.oscillates ? r.why : r.preempt_why) = m.why_not;
      continue;
    }
    m.tried = true;
    Explanation why_not;
    // The hints are made only once some class gets this far at this epoch.
    auto plan = plan_preemption(
        p.s, j, PreemptionQuery{.allow_reclaim = true, .now = p.now, .hints = &p.hints(), .within_nominal = m.within_nominal,
                                    .tables = &p.trial_tables},
        why_not);
    if (!plan) {
      r.preempt_why = m.why_not = p.texts.add(std::move(why_not));
      continue;
    }
    if (!keeps_clear_of_backfill(p, j, *plan, want_within_nominal)) {
      m.tried = false;  // the plan was this job's answer, not its class's: another job may end in time
      continue;
    }
    // A plan that would spread a job still within its locality wait is not carried out: it waits for one domain,
    // as it would if it could run spread without preemption, unless a plan places it in one.
    if (std::optional<Explanation> why = p.held_for_locality(j, plan->admission)) {
      m.tried = false;  // the wait is this job's (it depends on when it began waiting), not its class's
      plan = one_domain_plan(p, j, p.hints());
      if (!plan || !keeps_clear_of_backfill(p, j, *plan, want_within_nominal) ||
          (plan->admission.borrowing() && would_oscillate(p, j, *plan))) {
        r.why = p.texts.add(std::move(*why));
        continue;
      }
      execute(p, j, *plan);
      return true;
    }
    if (plan->admission.borrowing()) {
      if (const PooledReason* osc = would_oscillate(p, j, *plan)) {
        m.oscillates = true;
        r.why = m.why_not = osc;
        continue;
      }
    }
    execute(p, j, *plan);
    return true;
  }
  return false;
}

}  // namespace allot
