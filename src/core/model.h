#pragma once
// The core's interned model: nodes, teams and jobs with IDs, resolved amounts and derived accounting.
// Specs (spec.h) come in with names; everything here is checked and resolved.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/explanation.h"
#include "core/ids.h"
#include "core/resources.h"
#include "core/shared_text.h"
#include "core/spec.h"

namespace allot {

enum class JobState { kPending, kRunning, kSuspended, kSucceeded, kFailed, kCancelled };
const char* job_state_name(JobState s);
std::optional<JobState> parse_job_state(std::string_view s);
inline bool is_active(JobState s) { return s == JobState::kPending || s == JobState::kRunning || s == JobState::kSuspended; }
inline bool is_waiting(JobState s) { return s == JobState::kPending || s == JobState::kSuspended; }

// A capacity plan's state, derived from time (core/plans.h, plan_state_at): Scheduled before its start,
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

struct Team {
  TeamId id;
  TeamSpec spec;
  // Per instance type (TypeId index): what the allocation gives, and the nominal quota the rules use, which is
  // the allocation plus the capacity of the Active capacity plans the team owns (core/plans.h).
  std::vector<Resources> allocated;
  std::vector<Resources> nominal;
  // Derived from the allocation, the catalog and the cluster's capacity (state.cpp keeps it): the instance
  // types a pod set without a type may use, in the order they are tried.
  std::vector<TypeId> candidate_types;
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
  int replicas = 1;
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
  std::string reason;
};

struct Job {
  JobId id;
  JobSpec spec;
  TeamId team;
  int priority = 0;  // the priority class weight; 0 without a class
  std::vector<PodSet> pod_sets;
  PlanId plan;  // the capacity plan it runs on (spec.plan); placement uses that plan's nodes only
  uint64_t arrival = 0;  // submission order; ties in every ordering break on it
  Time submitted_at = 0;
  Time waiting_since = 0;  // when it last became Pending or Suspended

  JobState state = JobState::kPending;
  SharedText reason;  // why it is in its state, for people (shared: many waiting jobs say the same)
  ReasonCode reason_code = ReasonCode::kSubmitted;  // the same, for programs
  bool feasible = true;  // false: a waiting job that no amount of waiting would run (explanation.h)
  Placement placement;
  bool borrowing = false;  // admitted while its team was above nominal quota
  Time started_at = 0;     // of the current run
  int64_t work_done_s = 0; // kept work from earlier runs (checkpointed)
  int preemptions = 0;
  int restarts = 0;        // restarts after failures (node or process)
  std::vector<Transition> history;

  // Jobs whose pod sets ask for the same thing (replicas, types, amounts, topology) share a shape, interned in
  // ClusterState::shape_ids at submission. Answers that depend only on the shape (never fits) or on the shape and
  // the team (a scheduler pass's admission attempts) are computed once per shape, not once per job.
  uint32_t shape = 0;
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
// them with one case per kind and no catch-all (core/overloaded.h), so a new kind does not compile until each
// of them says what it does with it.
struct AdmitDecision {
  JobId job;
  Placement placement;
  bool borrowing = false;  // the team is above its nominal quota after admission
  std::string reason;      // where, within quota or borrowing, after which preemptions
};

// Which preemption rule took a victim (docs/scheduling.md, "Preemption").
enum class PreemptionRule : uint8_t {
  kReclaim,    // a team within its nominal quota takes back what it lent
  kPriority,   // a higher-priority job of the same team
  kFairShare,  // a borrower of lower share takes from a team above its fair share (policy.fair_share_preemption)
};
const char* preemption_rule_name(PreemptionRule r);

struct PreemptDecision {
  JobId job;        // the victim
  JobId preemptor;  // the job that needed the room
  PreemptionRule rule = PreemptionRule::kReclaim;
  std::string reason;  // which rule, who gained or lost what
};

using Decision = std::variant<AdmitDecision, PreemptDecision>;

// The job a decision is about (the admitted job, the victim).
inline JobId decision_job(const Decision& d) {
  return std::visit([](const auto& x) { return x.job; }, d);
}

}  // namespace allot
