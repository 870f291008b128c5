#pragma once
// The core's interned model: nodes, teams and jobs with IDs, resolved amounts and derived accounting.
// Specs (spec.h) come in with names; everything here is checked and resolved.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  // Suspected of failing (a live server's view: its agent missed a heartbeat, or reported a fault that is
  // about to be acted on). Nothing new is placed on it; what runs there keeps running. Never journaled.
  bool suspect = false;
  // What is free on the node lives in ClusterState::room, the table placement works on.

  bool schedulable() const { return !removed && !cordoned && !suspect && health == NodeHealth::kSchedulable; }
};

struct Team {
  TeamId id;
  TeamSpec spec;
  std::vector<Resources> nominal;  // per instance type (TypeId index)
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
  uint64_t arrival = 0;  // submission order; ties in every ordering break on it
  Time submitted_at = 0;
  Time waiting_since = 0;  // when it last became Pending or Suspended

  JobState state = JobState::kPending;
  SharedText reason;  // why it is in its state, for people (shared: many waiting jobs say the same)
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

// One admission or preemption the scheduler decided, with the rule that applied.
struct Decision {
  enum class Kind { kAdmit, kPreempt };
  Kind kind = Kind::kAdmit;
  JobId job;
  Placement placement;   // kAdmit
  bool borrowing = false;
  JobId preemptor;       // kPreempt: the job that needed the room
  std::string reason;    // which rule, who gained or lost what
};

}  // namespace allot
