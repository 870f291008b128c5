#pragma once
// What users write, with names: teams, allocations, policy, nodes and jobs as the scenario format, the API and
// the store carry them. The core turns specs into its interned model (model.h) and rejects what is invalid.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lifecycle/log_rules.h"
#include "core/model/result.h"

namespace allot {

// Names of what users create appear in URL paths, log file names, tables and Kubernetes objects, so they
// follow Kubernetes' rules for object names (RFC 1123):
//   team, plan,     a DNS label: 1..63 characters of lowercase letters, digits and '-', beginning and ending
//   reservation
//                   with a letter or digit (Kubernetes namespaces, which teams map to, are labels; a plan's
//                   name is the value of its nodes' plan label, which is at most a label long);
//   job, node,      a DNS subdomain: 1..253 characters, DNS labels joined by '.' (as Kubernetes Job,
//   priority class  Node and PriorityClass names are).
// So a name has no upper case, space, '/', '_', control or bidirectional-formatting character, and nothing
// beyond ASCII. The scenario readers (src/config), the server and the CLI check names here; names that come
// from traces (sim replay) and names already in a journal are not checked.
enum class NameKind { kTeam, kJob, kNode, kPriorityClass, kPlan, kReservation, kGroup };
// "team", "job", "node", "priority class", "plan", "reservation", "group"
const char* name_kind_word(NameKind kind);
inline constexpr size_t kMaxLabelName = 63;
inline constexpr size_t kMaxSubdomainName = 253;
// An error naming the kind, the name (with unprintable bytes escaped) and the rule, or ok.
Status check_name(NameKind kind, std::string_view name);
// `text` as it can be shown in a message: bytes outside printable ASCII as \xNN, cut after `max` bytes.
std::string printable(std::string_view text, size_t max = 80);

using Time = int64_t;  // seconds; virtual in the simulator, wall-clock in the server

// An allocation entry or a per-replica request. Allocations use instances, or accelerators / vCPU / memory;
// per-replica requests use accelerators / vCPU / memory or whole_node. Unset amounts follow the proportional
// rule of request.h.
struct AmountSpec {
  std::optional<int64_t> instances;     // allocations only
  std::optional<int64_t> accelerators;  // whole accelerators
  std::optional<int64_t> vcpu_milli;    // 1000 = one vCPU
  std::optional<int64_t> memory_mib;
  bool whole_node = false;  // per-replica only: the whole node
  // Allocations only (`vcpu: unlimited`, `memory_gib: unlimited`): the team's quota does not limit this resource
  // on the type, and neither counts nor lends it (quota.h). Memory follows vCPU: unlimited vCPU without a
  // memory amount leaves memory unlimited too. The amount of an unlimited resource is unset.
  bool vcpu_unlimited = false;
  bool memory_unlimited = false;
  // A per-replica request that asks for nothing at all.
  bool asks_nothing() const { return !whole_node && !accelerators && !vcpu_milli && !memory_mib && !instances; }
  friend bool operator==(const AmountSpec&, const AmountSpec&) = default;
};

struct AllocationSpec {
  std::string instance_type;
  AmountSpec amount;
  friend bool operator==(const AllocationSpec&, const AllocationSpec&) = default;
};

enum class SharingStrategy { kLendAndBorrow, kLend, kDontLend };
enum class PreemptTeamTasks { kLowerPriority, kNever };
const char* sharing_strategy_name(SharingStrategy s);    // "LendAndBorrow", "Lend", "DontLend"
const char* preempt_team_tasks_name(PreemptTeamTasks p);  // "LowerPriority", "Never"

// The Linux capabilities (capabilities(7), numbers 0..40 in this order), which an administrator may let a team's
// containers keep (TeamContainerSettings). A closed list: a name outside it is refused where it is read.
enum class Capability {
  kChown, kDacOverride, kDacReadSearch, kFowner, kFsetid, kKill, kSetgid, kSetuid, kSetpcap, kLinuxImmutable,
  kNetBindService, kNetBroadcast, kNetAdmin, kNetRaw, kIpcLock, kIpcOwner, kSysModule, kSysRawio, kSysChroot,
  kSysPtrace, kSysPacct, kSysAdmin, kSysBoot, kSysNice, kSysResource, kSysTime, kSysTtyConfig, kMknod, kLease,
  kAuditWrite, kAuditControl, kSetfcap, kMacOverride, kMacAdmin, kSyslog, kWakeAlarm, kBlockSuspend, kAuditRead,
  kPerfmon, kBpf, kCheckpointRestore
};
// "NET_RAW": the name without CAP_, as podman's --cap-add and Kubernetes' securityContext take it.
const char* capability_name(Capability c);
inline constexpr int kCapabilityCount = 41;

// What the administrator lets a team's containers have (docs/teams-and-policy.md, "Containers"). Pure data that
// travels with the team (teams file, `allot teams apply`, the API, the journal); the scheduling core never reads
// it. The server checks a job's volumes against host_paths at submission (config/container_rules.h), and hands
// capabilities and registry_auth_file to the agents with each replica of the team.
struct TeamContainerSettings {
  // Host directories (absolute, normalised) whose insides the team's volumes may mount; empty: no host volumes.
  std::vector<std::string> host_paths;
  // Linux capabilities kept in the team's containers (every other one is dropped); sorted, each once.
  std::vector<Capability> capabilities;
  // An absolute path on the nodes of a registry credentials file (podman's --authfile); empty: none.
  std::string registry_auth_file;
  bool empty() const { return host_paths.empty() && capabilities.empty() && registry_auth_file.empty(); }
  friend bool operator==(const TeamContainerSettings&, const TeamContainerSettings&) = default;
};

// Wall-time limits an administrator sets for a team or a priority class (docs/teams-and-policy.md, "Time
// limits"): the limit a job gets when it declares none, the largest it may declare, and whether a restart (a
// retry, a node failure, a preemption) starts the clock again. Unset: no default, no maximum. Where a team and a
// class both set one, the stricter holds (core/lifecycle/time_limit.h).
struct TimeLimitSettings {
  std::optional<int64_t> default_s;
  std::optional<int64_t> max_s;
  bool resets_on_restart = false;
  friend bool operator==(const TimeLimitSettings&, const TimeLimitSettings&) = default;
};

// Per-user limits inside a team (docs/teams-and-policy.md, "Per-user limits"; Slurm association limits
// GrpTRES=gres/gpu, MaxJobs, MaxSubmitJobs): what the jobs one user submitted to the team may hold at once. The user
// is a job's JobSpec::user (the name its token carries). Unset: no limit of that kind. core/quota/user_limits.h holds
// the rule.
struct UserLimitSpec {
  std::string user;
  std::optional<int64_t> running_jobs;  // jobs admitted and not yet ended (Running, or starting)
  std::optional<int64_t> pending_jobs;  // waiting jobs (Pending or Suspended); a submission past it is refused
  // Instance type name -> the most accelerators of that type the user's running jobs may hold together.
  std::map<std::string, int64_t> accelerators;
  friend bool operator==(const UserLimitSpec&, const UserLimitSpec&) = default;
};

struct TeamSpec {
  std::string name;
  int fair_share_weight = 0;  // 0..100
  std::vector<AllocationSpec> allocation;
  SharingStrategy strategy = SharingStrategy::kLendAndBorrow;
  int borrow_limit = 50;  // percent of the team's own quota, per resource; LendAndBorrow only
  PreemptTeamTasks preempt_team_tasks = PreemptTeamTasks::kLowerPriority;
  TeamContainerSettings containers;
  // The per-replica request a pod set gets when it asks for nothing (a Kubernetes manifest without resource
  // requests), as a LimitRange default: accelerators, vcpu_milli, memory_mib or whole_node. Empty: none, and
  // such a pod set is refused with a message naming this setting (core/lifecycle/submit.cpp).
  AmountSpec default_request;
  TimeLimitSettings time_limits;
  // Per-user limits, one entry per user (each user once). Empty: none, and every user's jobs are scheduled as
  // the team's other jobs are.
  std::vector<UserLimitSpec> user_limits;
  // The cohort group the team belongs to (docs/scheduling.md, "Cohort trees"); empty: none, the team shares at
  // the top of the cluster, as every team did before groups existed.
  std::string group;
  friend bool operator==(const TeamSpec&, const TeamSpec&) = default;
};

// A group of teams and groups that share quota (docs/scheduling.md, "Cohort trees"; Kueue's hierarchical
// cohorts). Limits are percent of the group's subtree quota (core/quota/cohort_tree.h); unset: no limit.
struct GroupSpec {
  std::string name;
  std::string parent;  // empty: a root, under the cluster
  std::vector<AllocationSpec> allocation;  // the group's own quota, beside what its children lend it
  std::optional<int> borrow_limit;  // 0..10000: what the subtree may hold beyond its subtree quota
  std::optional<int> lend_limit;    // 0..100: what of its subtree quota others outside it may use
  // 0..100; 1 unless given, as Kueue's cohorts (0 would put every group's share at infinity, and then groups
  // would be served in the order the policy lists them)
  int fair_share_weight = 1;
  friend bool operator==(const GroupSpec&, const GroupSpec&) = default;
};

struct PriorityClassSpec {
  std::string name;
  int weight = 0;  // 0..100
  // How long a job of this class with a `preferred` topology request may wait for one domain of that level
  // (docs/scheduling.md, "Waiting for locality"); unset: the policy's locality_wait_s.
  std::optional<int64_t> locality_wait_s;
  TimeLimitSettings time_limits;
  friend bool operator==(const PriorityClassSpec&, const PriorityClassSpec&) = default;
};

enum class TaskPrioritization { kFcfs, kTaskRanking };
enum class IdleCompute { kFairShare, kFcfs };
// One spelling each, the same in YAML, JSON, the CLI and Kueue annotations: the tables and the names below are
// the only home of these words (readers parse with parse_*, lists of choices come from the k* tables).
inline constexpr TaskPrioritization kTaskPrioritizations[] = {TaskPrioritization::kFcfs, TaskPrioritization::kTaskRanking};
inline constexpr IdleCompute kIdleComputes[] = {IdleCompute::kFairShare, IdleCompute::kFcfs};
const char* task_prioritization_name(TaskPrioritization t);  // "fcfs", "task-ranking"
const char* idle_compute_name(IdleCompute i);                // "fair-share", "fcfs"
std::optional<TaskPrioritization> parse_task_prioritization(std::string_view name);
std::optional<IdleCompute> parse_idle_compute(std::string_view name);

struct PolicySpec {
  TaskPrioritization task_prioritization = TaskPrioritization::kFcfs;
  IdleCompute idle_compute = IdleCompute::kFairShare;
  bool idle_pool = false;
  std::vector<PriorityClassSpec> priority_classes;
  // A running job younger than this cannot be preempted (0: no protection).
  int64_t min_runtime_s = 0;
  // A job pending longer than this gets a reservation: jobs ordered after it may not take capacity of its
  // instance type until it runs (0: no reservations).
  int64_t starvation_threshold_s = 0;
  // Baselines for comparison (`allot sim replay --baseline fifo`), not for production clusters: without
  // preemption nothing is ever reclaimed or preempted; with strict FIFO the queue is one line in arrival order
  // and the first job that cannot run blocks every job behind it (head-of-line blocking).
  bool preemption = true;
  bool strict_fifo = false;
  // Opt-in fair-sharing preemption (core/preemption/fair_share_preemption.h): a borrower may take jobs of teams above their
  // fair share, and reclaim takes teams in share order.
  bool fair_share_preemption = false;
  // An elastic job below its largest size grows into capacity that has been idle this long, and resizes at
  // most once per this long (docs/scheduling.md, "Elastic jobs").
  int64_t elastic_grow_delay_s = 300;
  // A job with a `preferred` topology request that would run spread over several domains of that level, where
  // one domain of the empty cluster could hold it, waits this long (from when it began waiting) for one domain
  // instead (docs/scheduling.md, "Waiting for locality"). 0: it spreads at once. A priority class may set its own.
  int64_t locality_wait_s = 0;
  // Gang start timeout (docs/resiliency.md, "Gang start timeout"; Kueue's waitForPodsReady): a run not every replica
  // of which is running this long after its replicas were handed to the agents is requeued without using a retry,
  // and the job waits start_backoff_s x 2^(n-1) (at most start_backoff_max_s) after its n-th such requeue before it
  // may run again. 0: off. Only the server applies it (the simulator starts every replica at once).
  int64_t start_timeout_s = 0;
  int64_t start_backoff_s = 60;
  int64_t start_backoff_max_s = 3600;
  // Backfill with a reservation (docs/scheduling.md, "Backfill"; EASY backfilling, as Slurm's backfill does for
  // the head of its queue): the first job in queue order that cannot be admitted now gets a reservation, the earliest time its running jobs' time limits free room for it and the nodes it would take
  // then; jobs after it may take those nodes only if their own time limit ends before that time.
  bool backfill = false;
  // With backfill: a job whose priority class weight is below this gets no reservation; it still starts whenever it
  // fits now (Slurm's bf_min_prio_reserve). 0: every job may hold one.
  int backfill_min_priority = 0;
  // Cohort trees (docs/scheduling.md, "Cohort trees"): parents before or after children, in any order. Empty:
  // one flat cohort, every team under the cluster.
  std::vector<GroupSpec> groups;
  friend bool operator==(const PolicySpec&, const PolicySpec&) = default;
};

enum class NodeHealth { kSchedulable, kUnschedulable, kUnschedulablePendingReboot, kUnschedulablePendingReplacement };
const char* node_health_name(NodeHealth h);

// One node, name already expanded from a host list. Labels may use the short topology names
// (network-node-layer-3, ultraserver, zone, hostname); the core maps them to the full keys.
struct NodeSpec {
  std::string name;
  std::string instance_type;
  std::string instance_group;
  std::map<std::string, std::string> labels;
  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

struct SliceSpec {
  std::string level;
  int size = 0;
  friend bool operator==(const SliceSpec&, const SliceSpec&) = default;
};

// Level names as the user wrote them (short or full label keys); empty when not requested.
struct TopologySpec {
  std::string required;
  std::string preferred;
  std::optional<SliceSpec> slice;
  std::string exclusive;
  bool empty() const { return required.empty() && preferred.empty() && !slice && exclusive.empty(); }
  friend bool operator==(const TopologySpec&, const TopologySpec&) = default;
};

struct PodSetSpec {
  std::string name = "main";
  int replicas = 1;  // an elastic pod set: its largest size
  // Set for an elastic pod set (`replicas: {min: 2, max: 8}`): the smallest size it runs at. Unset: the pod set
  // always runs `replicas` replicas.
  std::optional<int> min_replicas;
  std::string instance_type;  // empty: any type the team may use
  AmountSpec per_replica;
  TopologySpec topology;
  friend bool operator==(const PodSetSpec&, const PodSetSpec&) = default;
};

// When a node pulls a job's image (docs/jobs.md, "Images"), as Kubernetes' imagePullPolicy: kIfNotPresent pulls
// when the node has no image of that reference, kAlways before every start, kNever never (the image must be there).
enum class PullPolicy { kIfNotPresent, kAlways, kNever };
// "IfNotPresent", "Always", "Never": the one spelling in YAML, JSON, manifests and `allot describe`.
const char* pull_policy_name(PullPolicy p);
inline constexpr PullPolicy kPullPolicies[] = {PullPolicy::kIfNotPresent, PullPolicy::kAlways, PullPolicy::kNever};

// How a running job recovers from a node fault (docs/resiliency.md, "Recovery in place"). kRestart: every replica
// stops and the job restarts from its checkpoint (the default). kInPlace: only the replicas on the failed node are
// placed again (core/lifecycle/in_place.h); the others keep running and are told the new membership, so the new rank copies
// the state from a peer; when that does not work out within the job's recovery_timeout, the job restarts as kRestart.
enum class Recovery : uint8_t { kRestart, kInPlace };
// "restart", "in_place": the one spelling in YAML, JSON and `allot describe`.
const char* recovery_name(Recovery r);
inline constexpr Recovery kRecoveries[] = {Recovery::kRestart, Recovery::kInPlace};
// The bound on an in-place recovery when the job gives none, and the largest it may give (seconds).
inline constexpr int64_t kDefaultRecoveryTimeoutS = 120;
inline constexpr int64_t kMaxRecoveryTimeoutS = 3600;
// The signals a job may choose to hear of a new membership by (membership_signal): ones a program does not get by
// accident from a terminal or the kernel, and whose default action a framework expects to override.
inline constexpr std::string_view kMembershipSignals[] = {"SIGUSR1", "SIGUSR2", "SIGHUP", "SIGWINCH", "SIGURG"};

// A host directory or file mounted into a job's containers at `path`.
struct VolumeSpec {
  std::string host_path;  // absolute and normalised on the node
  std::string path;       // absolute in the container
  bool read_only = false;
  friend bool operator==(const VolumeSpec&, const VolumeSpec&) = default;
};

// The OCI image every replica of a job runs in. An empty image: the replicas are bare processes on the node.
struct ContainerSpec {
  std::string image;  // an OCI reference ("registry.example/team/train:1.4", "busybox@sha256:...")
  // Resolved when the spec is read (config/container_rules.h, default_pull_policy), so a stored spec says it.
  PullPolicy pull_policy = PullPolicy::kIfNotPresent;
  std::optional<int64_t> shm_mib;  // the size of /dev/shm; unset: a quarter of the replica's memory request
  std::vector<VolumeSpec> volumes;
  // The arguments the replicas run with, in place of the image's CMD (Kubernetes' `args`): after the image's
  // entrypoint, or after the job's command when it has one (which replaces the entrypoint). Passed as argv items,
  // never through a shell. Empty: the image's own CMD (without a command) or none (after a command).
  std::vector<std::string> args;
  bool empty() const { return image.empty(); }
  friend bool operator==(const ContainerSpec&, const ContainerSpec&) = default;
};

// Dependencies between jobs (docs/jobs.md, "Dependencies"; Slurm's --dependency): what must have happened to
// the named job before this one may run. kSucceeded: it ended Succeeded (afterok); kEnded: it ended in any state
// (afterany, the default); kStarted: it began running (after). core/model/dependency.h holds the rule.
enum class DependencyCondition { kSucceeded, kEnded, kStarted };
// "succeeded", "ended", "started": the one spelling in YAML, JSON, the journal and `allot describe`.
const char* dependency_condition_name(DependencyCondition c);
inline constexpr DependencyCondition kDependencyConditions[] = {DependencyCondition::kSucceeded, DependencyCondition::kEnded,
                                                                DependencyCondition::kStarted};
// The most entries a job's `after` may list.
inline constexpr size_t kMaxDependencies = 32;
struct JobDependency {
  std::string job;  // a job of the same team, kept under this name when this one is submitted
  DependencyCondition condition = DependencyCondition::kEnded;
  friend bool operator==(const JobDependency&, const JobDependency&) = default;
};

// Job arrays (docs/jobs.md, "Arrays"; Slurm's --array=0-(N-1)%P, a Kubernetes Job with completionMode: Indexed):
// one submission of `count` tasks, of which at most `parallel` are admitted at once. core/model/array.h holds the rules.
inline constexpr int kMaxArrayCount = 100000;
struct ArraySpec {
  int count = 1;     // tasks, 1..kMaxArrayCount
  int parallel = 1;  // the most tasks admitted (running or starting) at once, 1..count; readers default it to count
  // On a task (core/model/array.h, array_tasks): the array's name (the submission's) and the task's index 0..count-1.
  // Unset on the submission itself, which is never a job: the server and the simulator submit its tasks.
  std::string name;
  std::optional<int> index;
  friend bool operator==(const ArraySpec&, const ArraySpec&) = default;
};

struct JobSpec {
  std::string name;
  std::string team;
  // Who submitted it: the user name of the token that did (the server sets it; only an admin may name another
  // user), or a scenario file's `user`. Empty: no user (a token without a user name, and every job before tokens
  // carried one); the team's per-user limits (core/quota/user_limits.h) never apply to such a job.
  std::string user;
  std::string priority;  // priority class name; empty: the lowest priority (weight 0)
  std::vector<PodSetSpec> pod_sets;
  int max_retries = 0;
  int64_t checkpoint_interval_s = 0;  // 0: every moment is kept (the simulator's default)
  std::optional<int64_t> duration_s;  // simulator: runs this long, then Succeeded
  // Wall-time limit (`time_limit`, a manifest's activeDeadlineSeconds): once the job has run this many seconds,
  // counted over all its runs, it is stopped and ends Failed with reason deadline_exceeded (core/lifecycle/time_limit.h).
  // Unset: its team's or priority class's default, if any.
  std::optional<int64_t> time_limit_s;
  std::vector<std::string> command;   // server: argv of each replica; may be empty with an image (its entrypoint)
  std::map<std::string, std::string> env;
  // Labels for people and selectors (`allot jobs -l`, `cancel --selector`); the scheduler never reads them.
  std::map<std::string, std::string> labels;
  std::string plan;  // a capacity plan the job runs on (its nodes only); empty: any node
  // A reservation of existing nodes the job runs in (Slurm's --reservation; core/model/reservations.h): its nodes only,
  // once it is Active. Empty: any node its team may use.
  std::string reservation;
  ContainerSpec container;  // empty image: bare processes, as without containers
  // Each replica gets JOB_COMPLETION_INDEX, its index in the job (the same as its RANK), as the pods of a
  // Kubernetes Job with completionMode: Indexed do.
  bool completion_index = false;
  // Rules on the replicas' output (core/lifecycle/log_rules.h; docs/jobs.md, "log_rules"): progress that must show, lines that
  // mean restart or fail. Empty: none.
  LogRules log_rules;
  // Jobs that must have succeeded, ended or started before this one may run (core/model/dependency.h). Empty: none.
  std::vector<JobDependency> after;
  // A job array (core/model/array.h): on a submission, the count and parallelism; on each of its tasks, also the array's
  // name and the task's index. Unset: an ordinary job.
  std::optional<ArraySpec> array;
  // Recovery from a node fault (docs/resiliency.md, "Recovery in place"): the mode, the bound on an in-place
  // recovery before the job falls back to a full restart (0: kDefaultRecoveryTimeoutS), and the signal the surviving
  // replicas get when the membership changes (one of kMembershipSignals; empty: none, they watch membership.json).
  Recovery recovery = Recovery::kRestart;
  int64_t recovery_timeout_s = 0;
  std::string membership_signal;
  int64_t recovery_bound_s() const { return recovery_timeout_s > 0 ? recovery_timeout_s : kDefaultRecoveryTimeoutS; }
  // Several clusters (docs/multicluster.md): set by a manager server on every job of a team it dispatches to worker
  // clusters, never by a job file. The manager's scheduler passes such a job over; a copy of it runs in one worker.
  bool multicluster = false;
  friend bool operator==(const JobSpec&, const JobSpec&) = default;
};

// A capacity plan (a flexible training plan): `count` instances of one type reserved from `start` to `end`.
// While it is Active its nodes are in the cluster and its capacity raises the owning team's nominal quota (or,
// without an owner, joins the idle pool); `grace_s` before `end` its jobs are checkpointed and requeued and
// its nodes take no new work; at `end` they leave (core/model/plans.h).
struct PlanSpec {
  std::string name;
  std::string instance_type;
  int count = 1;
  Time start = 0;
  Time end = 0;
  int64_t grace_s = 0;
  std::string team;  // empty: no owner
  std::map<std::string, std::string> labels;  // topology labels of its nodes (short names allowed)
  friend bool operator==(const PlanSpec&, const PlanSpec&) = default;
};

}  // namespace allot
