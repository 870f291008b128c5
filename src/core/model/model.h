#pragma once
// The core's interned model: nodes, teams and jobs with IDs, resolved amounts and derived accounting.
// Specs (spec.h) come in with names; everything here is checked and resolved.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/model/explanation.h"
#include "core/model/ids.h"
#include "core/model/resources.h"
#include "core/model/shared_text.h"
#include "core/model/spec.h"

namespace allot {

enum class JobState { kPending, kRunning, kSuspended, kSucceeded, kFailed, kCancelled };
inline constexpr JobState kJobStates[] = {JobState::kPending,   JobState::kRunning, JobState::kSuspended,
                                          JobState::kSucceeded, JobState::kFailed,  JobState::kCancelled};
const char* job_state_name(JobState s);
std::optional<JobState> parse_job_state(std::string_view s);
inline bool is_active(JobState s) { return s == JobState::kPending || s == JobState::kRunning || s == JobState::kSuspended; }
inline bool is_waiting(JobState s) { return s == JobState::kPending || s == JobState::kSuspended; }

// A capacity plan's state, derived from time (core/model/plans.h, plan_state_at): Scheduled before its start,
// Active from its start, Ending from `end - grace` (its jobs are checkpointed and requeued, its nodes take no new
// work) and Expired from its end (its nodes have left).
enum class PlanState { kScheduled, kActive, kEnding, kExpired };
const char* plan_state_name(PlanState s);
std::optional<PlanState> parse_plan_state(std::string_view s);

struct Plan {
  PlanId id;
  PlanSpec spec;
  TypeId type;
  // The state the cluster has been brought to (plans.h, apply_plan_step); the drivers step it to the state its
  // times give, so that what a step does (suspending jobs, nodes leaving) is an operation they can journal.
  PlanState state = PlanState::kScheduled;
  bool deleted = false;  // deleted by request; the ID is never reused and jobs naming it wait for good
};

struct Node {
  NodeId id;
  std::string name;
  TypeId type;
  std::string instance_group;
  std::map<std::string, std::string> labels;  // full label keys
  std::vector<std::string> topology;          // one value per topology level; the last is the name
  NodeHealth health = NodeHealth::kSchedulable;
  bool cordoned = false;
  bool removed = false;  // left the cluster; the ID is never reused
  PlanId plan;           // the capacity plan the node belongs to (its plan label); none for the cluster's own
  // Suspected of failing (a live server's view: its agent missed a heartbeat, or reported a fault that is
  // about to be acted on). Nothing new is placed on it; what runs there keeps running. Never journaled.
  bool suspect = false;
  // What is free on the node lives in ClusterState::room, the table placement works on.

  bool schedulable() const { return !removed && !cordoned && !suspect && health == NodeHealth::kSchedulable; }
};

// A team's limits for one user (TeamSpec::user_limits), resolved against the catalog (core/quota/user_limits.h).
struct UserLimits {
  std::string user;
  std::optional<int64_t> running_jobs, pending_jobs;
  std::vector<std::pair<TypeId, int64_t>> accelerators;  // by type, each once
};

struct Team {
  TeamId id;
  TeamSpec spec;
  // Per instance type (TypeId index): what the allocation gives, and the nominal quota the rules use, which is
  // the allocation plus the capacity of the Active capacity plans the team owns (core/model/plans.h).
  std::vector<Resources> allocated;
  std::vector<Resources> nominal;
  // Per instance type: the resources the allocation leaves unlimited (`vcpu: unlimited`). The quota neither
  // limits nor counts them: they are outside the team's usage as the quota rules see it, outside the pool, and
  // never borrowed or lent (quota.h).
  std::vector<ResourceSet> unlimited;
  // The part of `r`, on `type`, that this team's quota counts.
  Resources counted(TypeId type, const Resources& r) const {
    return type.index() < unlimited.size() ? unlimited[type.index()].outside(r) : r;
  }
  // Derived from the allocation, the catalog and the cluster's capacity (state.cpp keeps it): the instance
  // types a pod set without a type may use, in the order they are tried.
  std::vector<TypeId> candidate_types;
  // spec.user_limits resolved (empty: none).
  std::vector<UserLimits> user_limits;
  // Removed (remove_team): it keeps its ID for the jobs that name it, holds no quota, and is left out of the
  // team names that error messages offer. Defining it again brings it back.
  bool removed = false;
  bool lends() const { return spec.strategy != SharingStrategy::kDontLend; }
  bool borrows() const { return spec.strategy == SharingStrategy::kLendAndBorrow; }
};

struct TopologyRequest {
  enum class Mode { kNone, kRequired, kPreferred };
  Mode mode = Mode::kNone;
  int level = -1;            // index into the topology levels
  int slice_level = -1;      // -1: no slices
  int slice_size = 0;
  int exclusive_level = -1;  // -1: not exclusive
};

struct PodSet {
  std::string name;
  int replicas = 1;      // an elastic pod set: its largest size
  int min_replicas = 1;  // equal to `replicas` unless the pod set is elastic
  std::optional<TypeId> type;  // nullopt: any type the team may use
  AmountSpec per_replica;
  TopologyRequest topology;
};

// Where one replica runs: the node, the accelerators bound to it, and the vCPUs of their NUMA domains.
struct ReplicaBinding {
  NodeId node;
  std::vector<int> accelerators;
  std::vector<int> numa_domains;
  std::string cpus;  // "0-47,96-143": the vCPUs of those NUMA domains
};

struct PodSetPlacement {
  TypeId type;
  Resources per_replica;
  std::vector<ReplicaBinding> replicas;
};

struct Placement {
  std::vector<PodSetPlacement> pod_sets;
  bool empty() const { return pod_sets.empty(); }
  std::vector<NodeId> nodes() const;  // distinct, sorted
};

struct Transition {
  Time at = 0;
  JobState from = JobState::kPending;
  JobState to = JobState::kPending;
  SharedText reason;  // with the jobs it names (ref_text.h)
};

// Why an elastic job changed size.
enum class ResizeCause : uint8_t {
  kGrow,     // capacity nobody waits for stayed idle for the policy's delay
  kShrink,   // another job needed the room (reclaim or priority), and replicas above min were enough
};
const char* resize_cause_name(ResizeCause c);  // "grow", "shrink"

// One resize of an elastic job, kept for `describe`.
struct ResizeEvent {
  Time at = 0;
  int from = 0, to = 0;  // replicas of the elastic pod set
  ResizeCause cause = ResizeCause::kGrow;
  SharedText reason;
};

// One in-place recovery of a running job (core/lifecycle/in_place.h), kept for `describe` and the job's view.
struct RecoveryEvent {
  Time at = 0;
  std::string node;   // the failed node
  int epoch = 0;      // the membership epoch it began
  int replicas = 0;   // how many replicas it placed again
};

// Several clusters (docs/multicluster.md): a copy of a manager's job in a worker cluster, by the worker's name (in
// the manager's --workers file) and the copy's job name there.
struct RemoteCopyRef {
  std::string worker;
  std::string copy;
  friend bool operator==(const RemoteCopyRef&, const RemoteCopyRef&) = default;
};
// Where a manager's job (spec.multicluster) runs: changed only by the journaled steps of core/lifecycle/remote_copy.h.
struct RemoteCopy {
  RemoteCopyRef live;    // the copy that is the job's own now; empty worker: none (not dispatched, or withdrawn)
  RemoteCopyRef last;    // the last copy dispatched (its logs are read there once the job ended)
  bool running = false;  // the live copy's worker admitted it
  int dispatches = 0;    // copies made so far: the next one is named JOB-(dispatches + 1)
  std::vector<RemoteCopyRef> stale;  // copies in workers that were lost, cancelled there once they answer again
  uint64_t events_seen = 0;  // the worker's number of the live copy's last event mirrored here (0: none yet)
  Time waiting_since = 0;    // when the live copy last began to wait in its worker (dispatched, or waiting there again)
  friend bool operator==(const RemoteCopy&, const RemoteCopy&) = default;
};

struct Job {
  // The fields a scheduler pass reads of every waiting job come first, next to each other: a pass walks tens of
  // thousands of jobs, and fields spread over a Job's nine cache lines cost a miss each (the spec, read by
  // people and the API, comes after them).
  JobId id;
  TeamId team;
  int priority = 0;  // the priority class weight; 0 without a class
  PlanId plan;  // the capacity plan it runs on (spec.plan); placement uses that plan's nodes only
  // Jobs whose pod sets ask for the same thing (replicas, types, amounts, topology) share a shape, interned in
  // ClusterState::shape_ids at submission. Answers that depend only on the shape (never fits) or on the shape and
  // the team (a scheduler pass's admission attempts) are computed once per shape, not once per job.
  uint32_t shape = 0;
  uint64_t arrival = 0;  // submission order; ties in every ordering break on it
  Time submitted_at = 0;
  Time waiting_since = 0;  // when it last became Pending or Suspended
  // Waiting for locality (locality_wait.h): the first scheduler pass of this waiting period at which the job
  // could have run spread although one domain could hold it; its locality wait counts from then. Unset while it
  // has not (and whenever it changes state). Journaled (store::LocalityWaitStart), so a restart keeps it.
  std::optional<Time> locality_wait_from;
  JobState state = JobState::kPending;
  ReasonCode reason_code = ReasonCode::kSubmitted;  // the same as `reason`, for programs
  bool feasible = true;  // false: a waiting job that no amount of waiting would run (explanation.h)
  // Held by request (`allot hold`): a waiting job the scheduler passes over until it is released. It stays
  // Pending (or Suspended); its reason says it is held.
  bool held = false;
  // It names jobs in spec.after (core/model/dependency.h): the scheduler passes it over until they hold. Here, beside the
  // fields a pass reads, so that jobs without dependencies cost no look at `after`.
  bool depends = false;
  // A task of a job array (core/model/array.h): its array's slot in ClusterState::arrays; -1 for an ordinary job. Here,
  // beside the fields a pass reads, so that the throttle costs ordinary jobs one compare.
  int32_t array = -1;
  // Elastic jobs (docs/scheduling.md, "Elastic jobs"): the pod set whose size may change (-1: none; a job has
  // at most one), when the current run took its size, and every resize.
  int elastic_pod_set = -1;
  std::vector<PodSet> pod_sets;
  SharedText reason;  // why it is in its state, for people (shared: many waiting jobs say the same)
  Placement placement;
  bool borrowing = false;  // admitted while its team was above nominal quota
  Time started_at = 0;     // of the current run

  JobSpec spec;
  RemoteCopy remote;       // spec.multicluster only
  int64_t work_done_s = 0; // kept work from earlier runs (checkpointed)
  int preemptions = 0;
  int restarts = 0;        // restarts after failures (node or process)
  // The wall-time limit (core/lifecycle/time_limit.h), resolved at submission from the spec and the team's and class's
  // settings (0: none), whether each new run starts its clock again, and the seconds earlier runs ran (or, when
  // the clock resets, earlier parts of this run: a resize restarts a run without restarting its clock).
  int64_t time_limit_s = 0;
  bool time_limit_resets = false;
  int64_t run_before_s = 0;
  // Gang start timeouts (core/lifecycle/start_timeout.h): how many runs were requeued because not every replica started in
  // time, and until when the scheduler passes the job over after the last one (0: it does not).
  int start_timeouts = 0;
  Time backoff_until = 0;
  std::vector<Transition> history;
  std::vector<ResizeEvent> resizes;
  // Recovery in place (core/lifecycle/in_place.h): the membership epoch of the current run (0 when it starts, one more per
  // recovery; with the attempt it names the run's rendezvous port), and every recovery of the job, oldest first.
  int membership_epoch = 0;
  std::vector<RecoveryEvent> recoveries;
  // spec.after resolved at submission, one ID per entry in the same order: the job each name meant then (a later
  // job of that name is another job). Kept by snapshots as IDs.
  std::vector<JobId> after;
  bool elastic() const { return elastic_pod_set >= 0; }
  // Replicas the job holds now (0 when not running): of its elastic pod set, or of all pod sets of a fixed job.
  int size() const;
  int max_size() const { return elastic() ? pod_sets[static_cast<size_t>(elastic_pod_set)].replicas : 0; }
  int min_size() const { return elastic() ? pod_sets[static_cast<size_t>(elastic_pod_set)].min_replicas : 0; }
  // A finished job deleted by request (`allot delete`): its name is free for a new job, and listings skip it.
  // Its ID is never reused, so decisions and events that name it stay valid.
  bool deleted = false;
  // Compacted by retention (state.h, compact_finished): a finished job that left the live state. Only its ID
  // remains, as a tombstone (IDs are never reused): no spec, no name, no team, no history; `deleted` is set
  // too, so every listing skips it. Its records stay in the journal.
  bool compacted = false;
  // Runs of an earlier job of the same name, deleted before this one was submitted (ClusterState::
  // attempts_used): a live server numbers this job's attempts from here, so that what an agent reports about
  // the earlier job's replicas is never taken for this one's.
  int attempt_base = 0;
  // The part of attempt_base that came from ClusterState::attempts_folded (the name was not listed in
  // attempts_used, so it may never have been used): attempt numbers shown to people (log lines between attempts,
  // ALLOT_ATTEMPT) subtract it, so that a new name's first run reads attempt 0 whether or not names were folded.
  // Agents still tell runs apart by the whole number (server_state.h, attempt_of and attempt_shown).
  int attempt_folded = 0;
};

// A job array by name (core/model/array.h): its tasks' IDs in the order they were added (index order), kept by every
// path that adds a job. The IDs of tasks deleted or compacted since stay (their jobs say so); a later array of the
// same name, once those are gone, joins the same entry.
struct ArrayTasks {
  std::string name;
  std::vector<JobId> tasks;
};

// What blocks one job that a scheduler pass left waiting; the pass returns these and the state applies them
// (state.h, explain_waiting).
struct WaitingReason {
  JobId job;
  ReasonCode code = ReasonCode::kNone;
  bool feasible = true;
  SharedText text;
};

// The scheduler's decisions, one type per kind, closed in a variant: every place that handles decisions visits
// them with one case per kind and no catch-all (core/model/overloaded.h), so a new kind does not compile until each
// of them says what it does with it.
struct AdmitDecision {
  JobId job;
  Placement placement;
  bool borrowing = false;  // the team is above its nominal quota after admission
  RefText reason;          // where, within quota or borrowing, after which preemptions; with the jobs it names
  // Admitted ahead of the backfill reservation's holder, which still waits (backfill.h): a backfilled job. Data for
  // the replay's figures; no rule reads it.
  bool backfilled = false;
};

// Which preemption rule took a victim (docs/scheduling.md, "Preemption").
enum class PreemptionRule : uint8_t {
  kReclaim,    // a team within its nominal quota takes back what it lent
  kPriority,   // a higher-priority job of the same team
  kFairShare,  // a borrower of lower share takes from a team above its fair share (policy.fair_share_preemption)
};
const char* preemption_rule_name(PreemptionRule r);
std::optional<PreemptionRule> parse_preemption_rule(std::string_view name);

struct PreemptionRecord;  // core/preemption/preemption_record.h

struct PreemptDecision {
  JobId job;        // the victim
  JobId preemptor;  // the job that needed the room
  PreemptionRule rule = PreemptionRule::kReclaim;
  RefText reason;  // which rule, who gained or lost what; with the jobs it names
  // The record of the group this victim belongs to (one preemptor, all its victims), shared by the group's
  // decisions; set by the pass once the group is applied (core/preemption/preemption_record.h). Null in decisions made
  // from journal records written before groups were recorded.
  std::shared_ptr<const PreemptionRecord> record;
};

// An elastic job restarts at a new size from its checkpoint: its whole new placement, not a difference, since
// ranks are dense again after a restart.
struct ResizeDecision {
  JobId job;
  Placement placement;
  bool borrowing = false;
  int from = 0, to = 0;  // replicas of the elastic pod set
  ResizeCause cause = ResizeCause::kGrow;
  JobId for_job;         // kShrink: the job that needed the room
  PreemptionRule rule = PreemptionRule::kReclaim;  // kShrink: the preemption rule that took the replicas
  RefText reason;
  // kShrink: the record of the preemption group the shrink belongs to (PreemptDecision::record), set by the
  // pass once the group is applied; null for a grow and in decisions replayed from the journal.
  std::shared_ptr<const PreemptionRecord> record;
};

using Decision = std::variant<AdmitDecision, PreemptDecision, ResizeDecision>;

// The job a decision is about (the admitted job, the victim).
inline JobId decision_job(const Decision& d) {
  return std::visit([](const auto& x) { return x.job; }, d);
}

}  // namespace allot
