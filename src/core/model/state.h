#pragma once
// ClusterState: everything the scheduler knows at one moment, and the operations that change it. Every
// change goes through these functions, which keep the accounting (node room, team usage) right; the store
// journals the same operations, and the simulator and the server drive the same functions.
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/catalog.h"
#include "core/quota/cohort_tree.h"
#include "core/model/job_set.h"
#include "core/model/chunk_table.h"
#include "core/model/cow_map.h"
#include "core/model/cow_value.h"
#include "core/model/job_table.h"
#include "core/model/model.h"
#include "core/model/reservations.h"
#include "core/model/result.h"
#include "core/model/spec.h"
#include "core/placement/topology_levels.h"
#include "core/placement/topology_tree.h"

namespace allot {

// What is free on one node, the unit placement works on. Placement trials copy this table and change the
// copy, never the state.
struct NodeRoom {
  TypeId type;  // the node's instance type, here so that scans of the table stay in one compact array
  Resources free;
  uint64_t accelerators_free = 0;  // bit i: accelerator i is unbound
  int replicas = 0;
  JobId exclusive_owner;  // a topology-exclusive job that holds this node's domain
  bool usable = false;    // schedulable: healthy, not cordoned, not removed
};
using RoomTable = std::vector<NodeRoom>;
using UsageTable = std::vector<std::vector<Resources>>;  // [team][instance type]

struct ClusterState {
  Catalog catalog = Catalog::builtin();
  std::vector<std::string> levels;  // topology levels, coarse to fine, the last is the hostname
  PolicySpec policy;
  ChunkTable<Node> nodes;    // index = NodeId; views share unchanged chunks (chunk_table.h): write through edit()
  std::vector<Team> teams;   // index = TeamId
  // The policy's groups resolved against the teams and the catalog (core/quota/cohort_tree.h); empty: a flat cluster.
  CohortTree cohorts;
  JobTable jobs;             // index = JobId; memory follows the jobs kept (job_table.h)
  std::vector<Plan> plans;   // index = PlanId
  // Looked up by string_view without making a string (the writer looks up every node's name on each round).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view name) const { return std::hash<std::string_view>{}(name); }
  };
  // Shared with the copies of the state until a node is added or removed (cow_value.h): a view of 10,000 nodes
  // copied 10,000 names.
  CowValue<std::unordered_map<std::string, NodeId, NameHash, std::equal_to<>>> node_by_name;
  std::unordered_map<std::string, TeamId> team_by_name;
  // Shared shard by shard with the copies of the state (the views the server publishes; cow_map.h).
  CowMap<std::string, JobId> job_by_name;
  std::unordered_map<std::string, PlanId> plan_by_name;  // plans not deleted
  // Reservations of existing nodes by name, Scheduled or Active (core/model/reservations.h); they leave when they end.
  std::map<std::string, Reservation> reservations;
  // Job arrays by name (core/model/array.h): index = Job::array of their tasks.
  std::vector<ArrayTasks> arrays;
  std::unordered_map<std::string, int32_t> array_by_name;
  // Per instance type: the capacity of Active plans without an owner, which joins the idle pool (quota.h).
  std::vector<Resources> plan_idle;
  RoomTable room;          // index = NodeId
  // index = NodeId: when a replica last started or stopped on the node, or the node joined. Elastic jobs grow
  // only onto nodes unchanged for the policy's delay (capacity idle that long).
  std::vector<Time> room_changed_at;
  UsageTable usage;        // what each team's running jobs hold, per instance type
  TopologyTree tree;
  // Open begin_node_batch calls, and whether a node joined or left since the first opened: while a batch is
  // open the tree, `capacity` and the candidate types are not rebuilt (end_node_batch rebuilds them once).
  int node_batch = 0;
  bool tree_stale = false;
  uint64_t next_arrival = 0;
  // Per name of a deleted or compacted job: the attempts its jobs used so far (Job::attempt_base of the next job
  // so named), so that what an agent still reports about the old job's replicas is never taken for the new one's.
  std::unordered_map<std::string, int> attempts_used;
  // Bound on attempts_used (compact_finished): when it outgrows kAttemptsKept names, its entries are folded into
  // this one number, the most attempts any of them used, and a later job of a folded name numbers its attempts
  // from here. Every attempt of the old job is below it, so the guarantee above holds; the new job's numbers
  // merely start higher than they would have, and only inside: people are shown them from 0 (Job::attempt_folded).
  // No bound could tell a folded name from one never used without keeping every name, hence the two numbers.
  int attempts_folded = 0;
  static constexpr size_t kAttemptsKept = 4096;
  // Retention (compact_finished): the latest cutoff (every finished job whose last change was at or before it
  // has left the live state), when that compaction happened, and how many jobs have been compacted in all.
  Time compacted_before = 0;
  Time compacted_at = 0;
  uint64_t compacted_jobs = 0;
  // The finished jobs not yet compacted, by (finished_at, ID): compaction and the retention checks walk those
  // that leave, not every job ever submitted. Kept only once retention is in use (keep_finished_index: the first
  // compaction or retention check builds it), so that without retention it costs nothing.
  std::set<std::pair<Time, uint32_t>> finished_jobs;
  bool finished_indexed = false;
  uint64_t shape_version = 0;  // bumped when nodes join or leave; caches of "never fits" key on it
  std::vector<Resources> capacity;  // per instance type: all nodes in the cluster, any health
  // The jobs that are running, and those waiting (Pending or Suspended), kept by every change of a job's
  // state, so the scheduler's passes cost the active jobs rather than every job ever submitted.
  JobSet running_jobs, waiting_jobs;
  // Job shapes (model.h, Job::shape), interned at submission: the key spells out everything placement looks
  // at on an empty cluster (pod sets, replicas, types, amounts, topology), and nothing else.
  std::unordered_map<std::string, uint32_t> shape_ids;
  // Bumped whenever a node joins, leaves or changes whether it is schedulable; the answers of fit_cache.h, kept by
  // whoever runs passes, key on it and on shape_version.
  uint64_t health_version = 0;

  // The reason every job starts with, one text for all (model.h, Job::reason).
  SharedText submitted_reason{"waiting for the scheduler"};
  // ... and the first entry of every job's history, shared the same way.
  SharedText submitted_history{"submitted"};

  ClusterState();
  explicit ClusterState(Catalog c, std::vector<std::string> topology_levels = {});

  const Node* find_node(std::string_view name) const;
  const Team* find_team(std::string_view name) const;
  const Job* find_job(std::string_view name) const;
  const Plan* find_plan(std::string_view name) const;  // not deleted
  std::string plan_names() const;
  int priority_weight(std::string_view class_name) const;  // -1 when unknown
  std::string priority_class_names() const;
  std::string team_names() const;
  // All nodes of a type that are in the cluster (any health): the capacity that exists.
  Resources type_capacity(TypeId type) const {
    return type.index() < capacity.size() ? capacity[type.index()] : Resources{};
  }
};

// --- Configuration -------------------------------------------------------------------------------------------
Status set_policy(ClusterState& s, const PolicySpec& policy);
// Adds a team or replaces its spec. Running jobs keep running; new quota applies to the next decisions.
Status upsert_team(ClusterState& s, const TeamSpec& spec);
Status remove_team(ClusterState& s, std::string_view name);
Result<TypeId> add_instance_type(ClusterState& s, InstanceType type);

// --- Nodes ---------------------------------------------------------------------------------------------------
Status add_node(ClusterState& s, const NodeSpec& spec, Time now);
// Adds several nodes at once (the topology tree is rebuilt once); all or nothing.
Status add_nodes(ClusterState& s, const std::vector<NodeSpec>& specs, Time now);
// For nodes that join one call at a time but as one batch (POST /v1/nodes writes a journal record per node,
// and replaying a journal reads them back one by one): between begin and end, add_node does not rebuild the
// topology tree, the capacity per type or the candidate types, so n nodes cost O(n) rather than O(n^2).
// REQUIRES: nothing between begin and end but add_node / add_nodes (nothing may place or read the tree).
void begin_node_batch(ClusterState& s);
void end_node_batch(ClusterState& s);
// The node leaves; its jobs are suspended (they keep their checkpointed work and their place in the queue).
// `cause`, when given, says why it left (its MIG layout changed, docs/mig.md), in the reason of every job it stops.
Status remove_node(ClusterState& s, std::string_view name, Time now, std::string_view cause = {});
// A node that fails becomes UnschedulablePendingReplacement (or ...PendingReboot); the jobs that ran on it
// restart elsewhere while max_retries allows, and fail otherwise.
Status fail_node(ClusterState& s, std::string_view name, Time now, NodeHealth to = NodeHealth::kUnschedulablePendingReplacement);
Status set_node_health(ClusterState& s, std::string_view name, NodeHealth health, Time now);
Status set_cordon(ClusterState& s, std::string_view name, bool cordoned);
// A suspect node takes no new replicas until cleared (model.h, Node::suspect); its running jobs are untouched.
Status set_node_suspect(ClusterState& s, std::string_view name, bool suspect);
// Sets the network-node layers of registered nodes (EC2 topology on live nodes, docs/topology.md): each node's
// network-node-layer-1..N labels become its layers and deeper layer labels go. All or nothing: every node must be
// in the cluster, named once, and its layers pass check_network_layers. Running jobs stay where they are (their
// placements and the nodes their exclusive domains hold are kept); only new placements see the new domains.
Status set_network_layers(ClusterState& s, const std::vector<NodeLayers>& changes);

// --- Jobs ----------------------------------------------------------------------------------------------------
Result<JobId> submit_job(ClusterState& s, const JobSpec& spec, Time now);
Status cancel_job(ClusterState& s, std::string_view name, Time now);
// Ends a running job: Succeeded, or Failed (which auto-resume restarts while max_retries allows).
Status finish_job(ClusterState& s, std::string_view name, Time now, bool succeeded, std::string reason = "");
// A waiting manager's job whose copy ended in a worker cluster ends the same way here (core/lifecycle/remote_copy.h).
Status end_remote_job(ClusterState& s, std::string_view name, Time now, bool succeeded, std::string reason);
// Ends a running job that has reached its wall-time limit (time_limit.h): it stops, and ends Failed with reason
// deadline_exceeded without using a retry. Refused for a job that has not reached it by `now`.
Status exceed_time_limit(ClusterState& s, std::string_view name, Time now);
// A rule on the running job's output fired on one of its replicas (core/lifecycle/log_rules.h): kHung and kRestart end the
// run as a failure charged to the job's retries (auto-resume restarts it while max_retries allows), never to a
// node; kFail ends it Failed without using a retry. Refused for a rule the job does not declare.
Status fire_log_rule(ClusterState& s, std::string_view name, Time now, const LogRuleFiring& firing);
// Requeues a running job not every replica of whose run started within the policy's start timeout
// (start_timeout.h): it stops and is Suspended with reason start_timeout without using a retry, and the scheduler
// passes it over until now + backoff_s. `why` says which replicas did not start where.
Status time_out_start(ClusterState& s, std::string_view name, Time now, int64_t backoff_s, const std::string& why);
// An admission check (the server's, docs/scheduling.md "Admission checks") answered retry for the running job's
// run: it stops and is Suspended with reason admission_check_retry without using a retry (Kueue releases the
// workload's quota and requeues it), passed over until now + backoff_s.
Status requeue_for_admission_check(ClusterState& s, std::string_view name, Time now, int64_t backoff_s,
                                   const std::string& check, const std::string& message);
// An admission check answered reject: the running job stops and ends Failed, without a retry, with reason
// admission_check_rejected and the check's message.
Status reject_by_admission_check(ClusterState& s, std::string_view name, Time now, const std::string& check,
                                 const std::string& message);
// Holds a waiting job (Pending or Suspended) so that no scheduler pass considers it, or releases it
// (job_changes.cpp). Holding a held job, or releasing one that is not, is refused.
Status set_job_held(ClusterState& s, std::string_view name, bool held, Time now);
// Moves a waiting job to another priority class (empty: the lowest, weight 0); its place in the queue follows
// from the next pass on. A running job keeps the class it was admitted with.
Status set_job_priority(ClusterState& s, std::string_view name, const std::string& priority_class, Time now);
// Deletes a finished job: its name is free again (a job of that name may be submitted), listings skip it.
Status delete_job(ClusterState& s, std::string_view name);
// Retention: every finished job (Succeeded, Failed or Cancelled, deleted or not) whose last change was at or
// before `finished_before` leaves the live state. Its name is free again (as after delete_job), and its slot
// in `jobs` becomes a tombstone that keeps only its ID (model.h, Job::compacted), so that memory and
// snapshots follow the jobs still kept, not every job ever submitted. Deterministic: the same state and
// cutoff compact the same jobs. A cutoff after `now` is refused. Returns the jobs compacted, in ID order (none
// is fine). It costs the jobs that leave (ClusterState::finished_jobs), not every job ever submitted; chunks of
// `jobs` left with tombstones only are freed, and attempts_used is kept within kAttemptsKept names.
Result<std::vector<JobId>> compact_finished(ClusterState& s, Time finished_before, Time now);
// When a finished job finished: its last change of state (history), or its submission.
Time finished_at(const Job& j);
// Builds ClusterState::finished_jobs from every job and keeps it up to date from then on (once: later calls
// change nothing). compact_finished calls it, and so does the server's retention check.
void keep_finished_index(ClusterState& s);
// compacted_tombstone(id): what a compacted job's slot holds (job_table.h).

// --- Decisions (the scheduler's, replayed by drivers and the store) ------------------------------------------
Status admit_job(ClusterState& s, JobId job, const Placement& placement, bool borrowing, Time now, RefText reason);
Status preempt_job(ClusterState& s, JobId job, Time now, RefText reason, ReasonCode code = ReasonCode::kPreempted);
// An elastic job restarts at a new size from its last checkpoint (kept work as if it stopped now).
Status resize_job(ClusterState& s, const ResizeDecision& d, Time now);
Status apply_decision(ClusterState& s, const Decision& d, Time now);
// Gives each job a pass left waiting its explanation. A Suspended job keeps saying why it stopped, then
// "; waiting: " and what blocks it now. Entries for jobs that are no longer waiting are skipped.
void explain_waiting(ClusterState& s, const std::vector<WaitingReason>& reasons);
// A waiting job's locality wait counts from `from` (locality_wait.h): the scheduler's pass that first found it
// could run spread, or the journal's record of that pass. An error for a job that is not waiting or already has
// its start: the record belongs to another waiting period.
Status start_locality_wait(ClusterState& s, JobId job, Time from);

// --- Derived values ------------------------------------------------------------------------------------------
// Seconds of work a job keeps if it stops now: everything up to its last checkpoint. Work is counted at the
// job's full size: an elastic job running below its max does size/max of a second of work per second.
int64_t kept_work(const Job& job, Time now);
// Seconds of running that `work` seconds of work take at the job's current size (rounded up).
int64_t run_time_for(const Job& job, int64_t work);
// Seconds of work still to do (simulator), counting the current run as if it stopped now without loss.
int64_t remaining_work(const Job& job, Time now);
// Room on one node for a placement, as the live state has it.
RoomTable room_from_state(const ClusterState& s);

// Adds a newly submitted or restored job to the state indexes (running, waiting, finished); submit_job does it.
void index_new_job(ClusterState& s, const Job& j);

// Charges or releases a placement's resources against a room table and a usage table (the live ones, or a
// scratch copy in a trial).
void charge(RoomTable& room, UsageTable& usage, const ClusterState& s, const Job& job, const Placement& p);
void release(RoomTable& room, UsageTable& usage, const ClusterState& s, const Job& job, const Placement& p);

}  // namespace allot
