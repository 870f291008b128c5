#pragma once
// The scheduling loop: from the current state to a fixed point of admissions and preemptions.
//
// Each step takes the first applicable phase, then starts over:
//   1. jobs that fit within their team's nominal quota, without preemption, in queue order;
//   2. jobs within nominal quota that fit by preemption (reclaim first, then the team's lower priorities);
//   3. jobs that must borrow and fit without preemption, teams in fair-share (or arrival) order;
//   4. jobs that must borrow and fit by preempting their own team's lower-priority jobs, unless that would
//      borrow capacity a pending job of a lending team could reclaim at once (that would oscillate).
// Queue order is task-ranking (priority weight, then arrival) or fcfs (arrival). A job that cannot be admitted
// does not block those behind it, unless it has waited past the starvation threshold: then jobs after it may
// not take capacity of its instance types. Every admission and preemption is applied to `state` through the
// operations of state.h and returned, with its reason, for the driver to journal; every job still waiting
// gets the reason that blocks it. Jobs of one team with the same shape get one answer per change the pass makes
// (class_memo.h), which is what keeps a pass over tens of thousands of queued jobs fast.
#include <optional>
#include <string>
#include <vector>

#include "core/admission/backfill.h"
#include "core/placement/fit_cache.h"
#include "core/preemption/preemption_record.h"
#include "core/model/state.h"

namespace allot {

// A pass that stopped at its step bound rather than at a fixed point. Every step admits a job or ends the
// pass, and a job is preempted only by one that outranks it or reclaims quota, so reaching the bound means the
// decisions cycle: a bug. The state stays consistent (every decision was applied through state.h); the core
// does no I/O, so the drivers log `message` and record it as an error event.
struct StepBoundHit {
  int steps = 0;
  std::vector<JobId> jobs;  // the jobs of the decisions of the last steps: the ones taking part in the cycle
  std::string message;      // names the bound and the jobs, for a log line
};

// A waiting job's locality wait began counting at this pass (locality_wait.h): applied to the state through
// start_locality_wait() before schedule() returns, and journaled by the server, so a restart keeps it.
struct LocalityWaitStart {
  JobId job;
  Time from = 0;
};

// A waiting job that never ran, one of whose dependencies can never hold (dependency.h): schedule() ends it
// (end_for_dependency) before it returns, after the pass's decisions; the server journals it.
struct DependencyEnd {
  JobId job;
  size_t which = 0;  // the entry of spec.after
};

struct ScheduleResult {
  std::vector<Decision> decisions;  // in the order they were applied
  // One record per preemption group (one preemptor, all its victims), in the order the groups were applied;
  // the same records the group's PreemptDecisions point at.
  std::vector<std::shared_ptr<const PreemptionRecord>> preemptions;
  // What blocks each job the pass left waiting (only jobs with something to say), applied to the state
  // through explain_waiting() before schedule() returns.
  std::vector<WaitingReason> waiting;
  // Jobs whose locality wait began at this pass (only with a locality wait set), still waiting at its end.
  std::vector<LocalityWaitStart> locality_waits;
  // With policy.backfill: the reservation the pass ended with, when its holder is still waiting (backfill.h).
  // Not part of the state: every pass plans it afresh, so drivers show it (the holder's `reservation`) and do not
  // journal it.
  std::optional<BackfillReservation> reservation;
  // Jobs ended because a dependency can never hold, in ID order.
  std::vector<DependencyEnd> dependency_ends;
  // The earliest future time at which time alone could change a decision (a minimum runtime ending, a job
  // reaching the starvation threshold); drivers run the scheduler again then.
  std::optional<Time> next_wakeup;
  int steps = 0;
  std::optional<StepBoundHit> bound_hit;  // set when the pass stopped at its step bound
};

struct ScheduleOptions {
  // The most steps a pass may take; 0: 8 per job in the state plus 64, more than any pass that ends needs.
  // Tests set it low to force the bound.
  int max_steps = 0;
  // What the caller remembers of job shapes between passes on this state (fit_cache.h); null: the pass keeps its
  // own, for itself only (the same decisions, each shape placed once more per pass).
  FitCache* fit_cache = nullptr;
};

ScheduleResult schedule(ClusterState& state, Time now, const ScheduleOptions& options = {});

}  // namespace allot
