#pragma once
// What one scheduler pass keeps while it works (scheduler.h has the rules; this is the scheduler's own
// header, not an interface for others). The phases (phases.h) read and change it; decisions reach the state
// only through apply_decision(), and waiting jobs' reasons leave the pass in ScheduleResult::waiting.
#include <map>
#include <unordered_map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/admission/admission.h"
#include "core/model/array.h"
#include "core/admission/backfill.h"
#include "core/pass/class_memo.h"
#include "core/model/id_pages.h"
#include "core/placement/locality_wait.h"
#include "core/admission/order.h"
#include "core/placement/room_capacity.h"
#include "core/pass/scheduler.h"
#include "core/preemption/preemption.h"
#include "core/quota/user_limits.h"

namespace allot {

class Pass {
 public:
  Pass(ClusterState& s, Time now, const ScheduleOptions& o);
  Pass(const Pass&) = delete;  // scratch.live points into it
  Pass& operator=(const Pass&) = delete;

  // --- The queue -------------------------------------------------------------------------------------------
  // What the pass keeps of each job, indexed by JobId: one compact record, so that the phases walking the
  // whole queue read it rather than the Job, whose fields lie far apart in memory.
  struct PassJob {
    uint64_t arrival = 0;
    int priority = 0;
    uint32_t team = 0;
    uint32_t admission_class = 0, preemption_class = 0;  // class_memo.h
    bool waiting = false;  // in the queue and not admitted: kept by join() and admit()
    bool blocked = false, borrow_blocked = false, preempt_tried = false, never = false;
    // Its latest attempt found it waiting for locality (locality_wait.h); its wait began at this pass (it is in
    // result.locality_waits).
    bool waits_for_locality = false, locality_wait_began = false;
    // Passed over for its user's limits (user_limits.h): in user_held_, out of the queue.
    bool user_held = false;
    // Pooled in texts: what the latest phase said, and why preemption could not help (kept apart because
    // later phases rewrite `why`; give_reasons joins them).
    const PooledReason* why = nullptr;
    const PooledReason* preempt_why = nullptr;
  };
  PassJob& rec(JobId id) { return pass[id.index()]; }
  // Const access: reading a job must not mark its chunk changed (job_table.h, view_of).
  const Job& job(JobId id) const { return std::as_const(s.jobs)[id.index()]; }

  // The waiting jobs enter the queue, in queue order; those whose dependencies wait get their reason instead, and
  // those whose dependencies can never hold go to result.dependency_ends (dependency.h).
  void collect_waiting();
  // Jobs passed over for their dependencies that this pass's admissions let run (a `started` condition): they
  // enter the queue. Whether any did.
  bool rejoin_dependents();
  // A job enters the pass's queue: its record gets what the phases read of it.
  void join(JobId id);

  // --- Per-user limits (user_limits.h) ---------------------------------------------------------------------
  // Whether any team sets user limits; without, none of the below does anything.
  bool user_limits() const { return user_limits_; }
  // The gate on `id` against what the users' jobs hold as the pass goes.
  UserGate user_gate(JobId id) const { return judge_user_limits(s, tally_, job(id)); }
  // A job that may enter the queue: passed over instead (user_held_) when its user's gate is closed.
  void enter_or_hold(JobId id);
  // May `id` look for a preemption plan: not when its gate is closed or open on some types only (a plan could
  // place it over the limit).
  bool may_preempt_for(JobId id) const {
    if (!user_limits_) return true;
    const UserGate g = user_gate(id);
    return !g.closed && g.only_types.empty();
  }
  // Queue order (order.h), on keys copied out of the jobs.
  void sort_waiting();
  bool queue_before(const Job& a, const Job& b) const;

  // --- Attempts and admissions ---------------------------------------------------------------------------
  // try_admit on the live state, answered from the class memo (class_memo.h) when a job of the same class was
  // tried since the last change. `attempt` points at the memo's entry or at success_, valid until the next call.
  struct Tried {
    const AdmissionAttempt* attempt;
    const PooledReason* reason;  // pooled; null on success
  };
  Tried attempt(JobId id, BorrowMode mode);
  // Admits through apply_decision(); `extra` is appended to the reason.
  void admit(const Job& j, const AdmissionAttempt& a, const RefText& extra);
  // Preempts through apply_decision(); the victim waits again and rejoins the queue.
  void preempt(PreemptDecision d);
  // Resizes an elastic job through apply_decision().
  void resize(ResizeDecision d);
  // A borrowing admission since the waiting jobs last looked for a preemption plan gives its team jobs that
  // reclaim (and, with fair sharing, a fair-share preemption) may take, which it had not when they looked: they
  // look again (true), or the next pass would find what this one missed.
  bool plan_again();

  // preemption_hints(s) (preemption.h) at this epoch: they read only the state, so the phases that look for plans
  // between two changes share one.
  const PreemptionHints& hints();
  // The tables every preemption plan of this pass works in, one plan at a time (preemption.h, TrialTables).
  TrialTables trial_tables;

  // --- Starvation reservations ---------------------------------------------------------------------------
  bool starving(const Job& j) const;
  // A job that waits past the threshold reserves the instance types it could use: jobs after it in this step
  // may not take capacity there.
  void maybe_reserve(const Job& j, const AdmissionAttempt& a);
  // The starving job, still waiting and ahead of `j` in the queue, that reserved a type this admission uses.
  std::optional<JobId> reserved_by(const AdmissionAttempt& a, const Job& j) const;
  const PooledReason* reserved_reason(const AdmissionAttempt& a, JobId holder);

  // --- Backfill (backfill.h, policy.backfill) --------------------------------------------------------------
  // A job that cannot be admitted now but could ever run: the first such job in queue order gets the pass's
  // reservation (a later one found first, in the borrowing step's team order, gives way to it).
  void maybe_reserve_backfill(const Job& j, const AdmissionAttempt& a);
  // For a job whose attempt `a` fits: `a` when the job is the holder, comes before it, or keeps clear of the
  // reservation; else the same admission placed off the reserved nodes (unless that spreads it within its
  // locality wait: then it waits for locality); else null, the job's reason set.
  const AdmissionAttempt* keep_clear(const Job& j, const AdmissionAttempt& a, BorrowMode mode);
  // Whether `j` comes after a reservation's holder that still waits: it must then keep clear of the reservation.
  bool behind_holder(const Job& j) const;
  // Why `j` waits for the reservation: its nodes, or (quota) the quota the holder needs at its time.
  const PooledReason* reserved_for_holder(const Job& j, bool quota);
  std::optional<BackfillReservation> backfill;
  int backfill_version = 0;  // changes with the reservation: admissions found before it are checked again

  // --- Waiting for locality (locality_wait.h) -------------------------------------------------------------
  // When admission `a` (found now, or by a preemption plan) would spread `j` while its locality wait lasts: why it
  // waits instead; its record says it waits for locality, and the wait's start is noted when this is the first.
  std::optional<Explanation> held_for_locality(const Job& j, const AdmissionAttempt& a);
  // Whether admission `a` would spread `j` while its locality wait lasts, without noting anything: for a second
  // admission of a job whose first passed (an elastic job at a larger size).
  bool would_hold_for_locality(const Job& j, const AdmissionAttempt& a);
  // Keeps in result.locality_waits only the jobs still waiting at the end of the pass.
  void keep_locality_waits();

  // --- The end of the pass -------------------------------------------------------------------------------
  // Every job still waiting says what blocks it, into result.waiting (those passed over for their dependencies too).
  void give_reasons();
  std::optional<Time> wakeup() const;
  // The pass stopped at its bound: name the jobs of the decisions of its last steps, where a cycle shows.
  void note_bound_hit();
  void step_begins() { step_starts_[result.steps % kStepsNamed] = result.decisions.size(); }

  ClusterState& s;
  const Time now;
  const ScheduleOptions options;
  QueueOrder order;
  RoomTable pristine;
  FitCache own_fits_;  // when the caller keeps none (ScheduleOptions::fit_cache)
  FitCache& fits;
  FreeIndex free;  // of s.room, kept by admit() and preempt()
  std::vector<JobId> waiting;
  IdPages<PassJob> pass;  // by JobId; pages of the waiting jobs only (id_pages.h), not of every job ever
  TextPool texts;
  std::map<TypeId, JobId> reserved;
  uint64_t epoch = 0;  // changes (admissions, preemptions) this pass has made to the state
  ClassMemo memo;
  // The flat cohort's pool and what lending teams use of it (quota.h), for s.usage: kept by admit(), preempt() and
  // resize() as they change a team's usage, and handed to every attempt's quota checks.
  PoolTotals pool;
  // Per team: how many times this pass changed its usage. What depends on a team's usage alone (whether a job
  // fits within its nominal quota) holds while this number stays.
  uint64_t usage_changes(TeamId team) const { return usage_changes_[team.index()]; }
  // Capacity of s.room per replica shape, told of every change admit(), preempt() and resize() make, so an
  // attempt reads what changed rather than every node (room_capacity.h). `scratch` points at it.
  RoomCapacity live;
  PlacementScratch scratch;
  ScheduleResult result;

 private:
  RefText admit_reason(const Job& j, const AdmissionAttempt& a, const RefText& extra) const;
  // Before `j` takes or gives back `p` on s.room: tells `live` which nodes change.
  void room_changes(const Job& j, const Placement& p);
  // Around a change of `team`'s usage on `types`: its part of `pool` out before, back in after.
  void usage_leaves(TeamId team, const std::vector<TypeId>& types);
  void usage_returns(TeamId team, const std::vector<TypeId>& types);
  std::vector<uint64_t> usage_changes_;
  PreemptionHints hints_;
  uint64_t hints_epoch_ = ClassMemo::kNoEpoch;

  // A job of user U started (admit: counted, and U's queued jobs whose gate closed leave the queue) or stopped
  // (preempt, after the tally let it go: U's passed-over jobs whose gate opened join the queue).
  void user_started(const Job& j);
  void user_stopped(const Job& j);
  bool user_limits_ = false;
  UserTally tally_;
  std::vector<JobId> user_held_;  // passed over: their user is at a limit (user_limits.h)
  // The jobs of limited users that entered the queue, by UserTally::key (some may have left it since): what
  // user_started looks at instead of the whole queue.
  std::unordered_map<std::string, std::vector<JobId>> queued_by_user_;
  void note_queued(JobId id);
  void hold_for_user(JobId id);  // into user_held_, once
  AdmissionAttempt user_closed_;  // attempt()'s answer for a job whose user's gate closed during this pass
  AdmissionAttempt restricted_;   // attempt()'s answer for a job tried on the types its user's limit leaves only

  AdmissionAttempt success_;  // attempt()'s answer when the job fits
  AdmissionAttempt held_;     // attempt()'s answer when the job fits but waits for locality
  AdmissionAttempt backfilled_;  // keep_clear()'s answer when the job goes off the reserved nodes
  JobId backfill_considered_;    // the job the reservation was planned for, whether or not it got one
  std::string backfill_text() const;
  OneDomainFits one_domain_;  // locality_wait.h, for this pass's cluster shape
  bool locality_waits_ = false;  // the policy or a priority class sets a locality wait
  std::vector<JobId> dependents_;  // passed over: their dependencies wait (collect_waiting)
  ArrayThrottle arrays_;           // array.h: the running tasks of each array
  std::vector<JobId> throttled_;   // passed over: their array's throttle (collect_waiting)
  std::optional<Time> backoff_ends_;  // the earliest end of a start-timeout backoff among passed-over jobs
  bool borrowed_since_plans_ = false;  // plan_again()
  // Where each of the last kStepsNamed steps began in result.decisions (a ring indexed by step number), so a
  // pass that hits its bound can name the jobs of its last steps.
  static constexpr int kStepsNamed = 8;
  static constexpr size_t kJobsNamed = 20;
  size_t step_starts_[kStepsNamed] = {};
};

// The nodes an admission or a growth places a job on, as its reason names them: the first 8 by name, then how
// many there are in all ("n1, n2, ... (12 nodes)").
std::string placed_nodes_text(const ClusterState& s, const Placement& p);

}  // namespace allot
