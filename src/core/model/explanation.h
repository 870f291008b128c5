#pragma once
// Why a job is where it is, as one typed value carried from quota, placement, admission and preemption through
// the scheduler pass to the job and the API (Ray's SchedulingResult keeps "retry later" apart from
// "infeasible" the same way). Control flow reads `code` and `feasible`; `text` is for people only and no code
// compares it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/model/ref_text.h"

namespace allot {

enum class ReasonCode : uint8_t {
  kNone,             // nothing to explain (used only before a reason is known)
  kSubmitted,        // waiting for the first scheduler pass
  // A waiting job: what blocks it now.
  kQuota,            // the team's quota does not allow it
  kBorrowLimit,      // it would need more than the team's borrow limit
  kQuotaLentOut,     // within nominal quota, but the team's quota is lent out
  kNoIdleQuota,      // it must borrow and the lendable quota is in use
  kNeedsBorrow,      // (within-nominal phase only) it fits only by borrowing; never shown to people
  kCapacity,         // quota allows it, the nodes have no room now
  kUnhealthyNodes,   // it would fit on the empty cluster, but not on its schedulable nodes: it waits for nodes
  kTopology,         // no domain of the requested level has room now
  kLocality,         // it could run spread now, but waits a bounded time for one domain of its preferred level
  kNeverFits,        // the cluster as built cannot hold it
  kInstanceType,     // no instance type it may use can serve its replicas
  kReserved,         // a starving job, or the backfill reservation's holder, holds the capacity it would take
  kStrictFifo,       // strict FIFO: behind the head of the line
  kOscillation,      // preempting would borrow what a lending team can reclaim at once
  kNoPreemption,     // (preemption's part of a reason) no set of victims would make room
  // A job that is not waiting: what put it in its state.
  kAdmitted,
  kPreempted,        // by the scheduler (reclaim, priority, fair share)
  kDrained,          // its node is being drained
  kNodeFailed,       // its node failed (auto-resume, or no retries left)
  kNodeRemoved,      // its node left the cluster
  kFinished,
  kFailed,           // its process failed
  kCancelled,
  kHeld,             // a waiting job held by request; the scheduler passes it over until it is released
  // Capacity plans (core/model/plans.h).
  kPlanPending,      // waiting: its plan has not started, or its nodes have not joined yet
  kPlanEnded,        // waiting, never runs: its plan has ended or was deleted
  kPlanEnding,       // suspended: its plan's end is near; checkpointed and requeued
  // Suspended without using a retry: rank 0's node could not give the run its rendezvous port (MASTER_PORT was in
  // use there); the next run gets another port.
  kRendezvousPort,
  // Failed for good, without using a retry: it ran as long as its wall-time limit allows (core/lifecycle/time_limit.h), as
  // Kubernetes ends a Job past its activeDeadlineSeconds with reason DeadlineExceeded.
  kDeadlineExceeded,
  // Suspended without using a retry: not every replica of its run was running within the policy's start_timeout
  // (core/lifecycle/start_timeout.h); the scheduler passes it over until its backoff ends.
  kStartTimeout,
  // A rule on the job's own output fired on the agent (core/lifecycle/log_rules.h, docs/resiliency.md): no progress line for
  // its `every` seconds (hung: stacks dumped, restarted using a retry), a restart_on line (restarted using a retry),
  // a fail_on line (Failed for good, without using a retry).
  kHung,
  kLogRestart,
  kLogFail,
  // Dependencies (core/model/dependency.h): waiting for a job it names in `after` to succeed, end or start; ended
  // (Cancelled, never run) because one of them can never hold.
  kDependency,
  kDependencyNever,
  // Per-user limits (core/quota/user_limits.h): waiting while its user's running jobs or accelerators in the team are at
  // the limit the team sets for that user.
  kUserLimit,
  // Admission checks (the server's, docs/scheduling.md "Admission checks"): a check answered retry (the job was
  // requeued, Suspended without using a retry, and is passed over until its backoff ends) or reject (Failed for
  // good, with the check's message).
  kAdmissionCheckRetry,
  kAdmissionCheckRejected,
  // Suspended without using a retry: a reservation of the node it ran on started for another team (or user)
  // (core/model/reservations.h); checkpointed and requeued, as after a preemption.
  kReservationStart,
  // Job arrays (core/model/array.h): a task waiting while its array has `parallel` tasks admitted.
  kArrayThrottle,
  // A job that names a reservation (JobSpec::reservation, core/model/reservations.h): waiting for it to start; and
  // waiting, never to run, because it is gone (ended or deleted).
  kReservationPending,
  kReservationEnded,
  // Several clusters (docs/multicluster.md): a manager's job of a team it dispatches waits for a worker cluster
  // (none could admit it yet, or its copy waits there, or the worker holding it was lost), or runs in one. The
  // manager's own scheduler passes it over either way.
  kDispatched,
  kRemoteRunning,
};

// The name the API, `-o json` and scenario files use ("quota", "never_fits", ...).
const char* reason_code_name(ReasonCode c);
std::optional<ReasonCode> parse_reason_code(std::string_view name);
// Every name, comma-separated, for error messages.
std::string reason_code_names();

struct Explanation {
  ReasonCode code = ReasonCode::kNone;
  // False when no amount of waiting helps (never fits, a quota larger than the team may ever hold): Ray's
  // "infeasible" as opposed to "retry later".
  bool feasible = true;
  RefText text;  // with the jobs it names (ref_text.h)

  bool empty() const { return code == ReasonCode::kNone; }
};

inline Explanation explain(ReasonCode code, RefText text, bool feasible = true) {
  return Explanation{.code = code, .feasible = feasible, .text = std::move(text)};
}

// How a reason text names a job: "job NAME of team TEAM", carried as a reference (ref_text.h) so that the server
// can hide the names of jobs of teams the reader may not see (view/job_refs.h) without reading the text. Reasons
// that name a job by its team must use it; concatenation keeps the reference (RefText's operator+).
inline RefText job_ref(std::string_view job, std::string_view team) { return RefText::job(job, team); }

}  // namespace allot
