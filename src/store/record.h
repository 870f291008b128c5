#pragma once
// The journal's records: one explicit record per state-changing operation of the core (state.h), named the
// way users name things (jobs, teams, nodes, instance types by name, never by interned ID), each with the
// time it happened. Replaying the records in order through the same core operations gives exactly the state
// that was acknowledged: decisions are recorded with their full placement and applied as they were made, so
// replay never runs the scheduler.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "auth/caller.h"
#include "core/preemption/preemption_record.h"
#include "core/lifecycle/remote_copy.h"
#include "core/model/resources.h"
#include "core/model/spec.h"
#include "core/placement/topology_levels.h"
#include "store/admission_check.h"
#include "store/notice_kind.h"

namespace allot::store {

struct SetPolicy {
  PolicySpec policy;
  friend bool operator==(const SetPolicy&, const SetPolicy&) = default;
};
struct UpsertTeam {
  TeamSpec team;
  friend bool operator==(const UpsertTeam&, const UpsertTeam&) = default;
};
struct RemoveTeam {
  std::string team;
  friend bool operator==(const RemoveTeam&, const RemoveTeam&) = default;
};
// A node joins. `address` is where its replicas reach each other (MASTER_ADDR); `agent` says an agent
// registered it, so it is expected to heartbeat.
struct AddNode {
  NodeSpec node;
  std::string address;
  bool agent = false;
  friend bool operator==(const AddNode&, const AddNode&) = default;
};
struct RemoveNode {
  std::string node;
  // Why it left, when the server says (its MIG layout changed, docs/mig.md); empty: removed by an admin or retired.
  // Written to the journal only when set.
  std::string cause;
  friend bool operator==(const RemoveNode&, const RemoveNode&) = default;
};
// Who changed a node's health: an administrator, its agent (registering or heartbeating again), the
// server because heartbeats stopped, a health check the agent reported (or the reboot that followed it), or a
// deep health check (docs/resiliency.md). Only a timeout is undone by the next heartbeat.
enum class HealthCause { kAdmin, kAgent, kTimeout, kHealthCheck, kDeepCheck };
const char* health_cause_name(HealthCause c);
struct NodeHealthChange {
  std::string node;
  NodeHealth health = NodeHealth::kSchedulable;
  HealthCause cause = HealthCause::kAdmin;
  std::string address;  // kAgent: the address it registered again with; empty when unchanged
  std::string reason;   // why, for people (which check failed, what the reboot showed); may be empty
  std::string replaces;  // kDeepCheck: the failed node this one replaces (retired by it); empty otherwise
  friend bool operator==(const NodeHealthChange&, const NodeHealthChange&) = default;
};
struct Cordon {
  std::string node;
  bool cordoned = true;
  friend bool operator==(const Cordon&, const Cordon&) = default;
};
// Cordon plus suspension of every job running on the node (core/lifecycle/drain.h).
struct Drain {
  std::string node;
  friend bool operator==(const Drain&, const Drain&) = default;
};
struct Submit {
  JobSpec job;
  friend bool operator==(const Submit&, const Submit&) = default;
};
struct Cancel {
  std::string job;
  friend bool operator==(const Cancel&, const Cancel&) = default;
};
struct Finish {
  std::string job;
  bool succeeded = true;
  std::string reason;
  // A failure that is a node's, not the job's code (a held exit taken when a peer node turned out to be failing,
  // docs/resiliency.md): the node its restart is charged to (`restart_history[].node`). Empty: the job's own.
  std::string node = {};
  friend bool operator==(const Finish&, const Finish&) = default;
};

// A placement by names: per pod set the instance type and per-replica amounts, per replica its node and the
// accelerators and vCPUs bound to it, in rank order.
struct ReplicaRecord {
  std::string node;
  std::vector<int> accelerators;
  std::vector<int> numa_domains;
  std::string cpus;
  friend bool operator==(const ReplicaRecord&, const ReplicaRecord&) = default;
};
struct PodSetRecord {
  std::string instance_type;
  Resources per_replica;
  std::vector<ReplicaRecord> replicas;
  friend bool operator==(const PodSetRecord&, const PodSetRecord&) = default;
};
struct Admit {
  std::string job;
  std::vector<PodSetRecord> placement;
  bool borrowing = false;
  RefText reason;  // with the jobs it names ("reason_refs", record_json.h)
  friend bool operator==(const Admit&, const Admit&) = default;
};
// One victim. Every victim's record carries its group whole, so each one reads on its own (events, describe).
// Records written before rules and groups were journaled have neither: they decode with both empty.
struct Preempt {
  std::string job;
  std::string preemptor;  // the job that needed the room
  RefText reason;
  std::optional<PreemptionRule> rule;
  std::optional<PreemptionGroup> group;
  friend bool operator==(const Preempt&, const Preempt&) = default;
};
// An elastic job restarted at a new size: its whole new placement (like Admit), the sizes, why, and for a
// shrink the job that needed the room, the preemption rule that took the replicas and the group (as Preempt).
struct Resize {
  std::string job;
  std::vector<PodSetRecord> placement;
  bool borrowing = false;
  int from = 0, to = 0;
  std::string cause;  // "grow", "shrink" (core/model/model.h, resize_cause_name)
  std::string for_job;
  RefText reason;
  std::optional<PreemptionRule> rule;
  std::optional<PreemptionGroup> group;
  friend bool operator==(const Resize&, const Resize&) = default;
};

// A bearer token as the server keeps it (docs/security.md): never the secret, only its SHA-256. Who made it and
// when are the record's actor and time.
struct TokenRecord {
  std::string id;
  std::string secret_hash;
  auth::Role role = auth::Role::kViewer;
  std::vector<std::string> teams;  // member, viewer
  std::string node;                // agent: the one node it may act for; agent-join: the one name it may register
  Time expires_at = 0;             // Unix seconds; 0: never
  std::string description;
  int max_nodes = 0;               // agent-join: how many nodes it may register; 0: no limit
  std::string joined_with;         // agent: the id of the join token its node joined with (empty: made by an admin)
  // member, viewer, admin: the user the token acts for (core/quota/user_limits.h): its jobs carry it, the audit trail and
  // per-user metrics name it, the team's per-user limits apply to it. Empty: none (tokens made before users).
  std::string user;
  friend bool operator==(const TokenRecord&, const TokenRecord&) = default;
};
struct CreateToken {
  TokenRecord token;
  friend bool operator==(const CreateToken&, const CreateToken&) = default;
};
struct RevokeToken {
  std::string id;
  friend bool operator==(const RevokeToken&, const RevokeToken&) = default;
};
// One request that asked for a change, whatever came of it: what it asked (method and path), what it named, and
// the answer (HTTP status and, for a refusal, why). Who asked and when are the record's actor and time.
struct Audit {
  std::string action;  // "POST /v1/jobs"
  std::string target;  // the job, team, node or token it named, when there is one
  int status = 200;
  std::string message;  // why it was refused; empty when it was done
  std::string source;   // the client's address (records written before it was kept have none)
  friend bool operator==(const Audit&, const Audit&) = default;
};

// A waiting job held (`allot hold`) or released (`allot release`).
struct HoldJob {
  std::string job;
  bool held = true;
  friend bool operator==(const HoldJob&, const HoldJob&) = default;
};
// A waiting job moved to another priority class (empty: none, the lowest).
struct SetJobPriority {
  std::string job;
  std::string priority;
  friend bool operator==(const SetJobPriority&, const SetJobPriority&) = default;
};
// A finished job deleted: its name is free for a new job.
struct DeleteJob {
  std::string job;
  friend bool operator==(const DeleteJob&, const DeleteJob&) = default;
};

// Capacity plans (core/model/plans.h): created, stepped to the state their times give (the writer applies each step
// when it is due, so what the step did, suspending jobs and removing nodes, replays as it happened), deleted.
struct CreatePlan {
  PlanSpec plan;
  friend bool operator==(const CreatePlan&, const CreatePlan&) = default;
};
struct PlanStepRecord {
  std::string plan;
  std::string state;  // the state it moved to: Active, Ending, Expired
  friend bool operator==(const PlanStepRecord&, const PlanStepRecord&) = default;
};
struct DeletePlan {
  std::string plan;
  friend bool operator==(const DeletePlan&, const DeletePlan&) = default;
};
// Reservations of existing nodes (core/model/reservations.h): created, stepped when their times come (the writer applies
// each step, so the nodes an amount chose and the jobs requeued at the start replay as they happened), deleted.
struct CreateReservation {
  ReservationSpec reservation;
  friend bool operator==(const CreateReservation&, const CreateReservation&) = default;
};
struct ReservationStepRecord {
  std::string reservation;
  std::string state;  // the state it moved to: Active, Expired
  friend bool operator==(const ReservationStepRecord&, const ReservationStepRecord&) = default;
};
struct DeleteReservation {
  std::string reservation;
  friend bool operator==(const DeleteReservation&, const DeleteReservation&) = default;
};
// Why a run was requeued without using a retry (Requeue::cause).
enum class RequeueCause {
  // Rank 0's node found the run's MASTER_PORT (`port`) in use before starting it (docs/resiliency.md, "The
  // rendezvous port"); its next run gets another port. Records without a cause are of this kind.
  kRendezvousPort,
  // The node's agent stopped its replicas by fencing while the server itself could not hear (a stall, connections
  // refused past every seat, a disruption: docs/resiliency.md, "Leases and fencing"): the server's fault, not the
  // job's or the node's.
  kServerDeaf,
};
const char* requeue_cause_name(RequeueCause c);  // "rendezvous_port", "server_deaf"
// A run stopped for a cause that is neither the job's code nor a failure of its node (RequeueCause). The job is
// suspended without using a retry (as a preemption is) and requeued.
struct Requeue {
  std::string job;
  std::string node;
  int port = 0;
  std::string reason;
  RequeueCause cause = RequeueCause::kRendezvousPort;  // journaled only when it is another
  friend bool operator==(const Requeue&, const Requeue&) = default;
};
// A running job reached its wall-time limit (core/lifecycle/time_limit.h): it stopped and ended Failed with reason
// deadline_exceeded. The limit is written for people reading the journal; replay checks, from the journaled runs,
// that the job had reached it by the record's time.
struct TimeLimitExceeded {
  std::string job;
  int64_t time_limit_s = 0;
  friend bool operator==(const TimeLimitExceeded&, const TimeLimitExceeded&) = default;
};
// A waiting job's locality wait began counting at the record's time (core/placement/locality_wait.h): the scheduler pass
// that first found it could run spread although one domain could hold it. Journaled so that a restarted server
// counts the wait from the same time (docs/scheduling.md, "Waiting for locality").
struct LocalityWaitBegan {
  std::string job;
  friend bool operator==(const LocalityWaitBegan&, const LocalityWaitBegan&) = default;
};
// A run not every replica of which was running within the policy's start_timeout (core/lifecycle/start_timeout.h): it
// stopped and the job was requeued without using a retry, to back off `backoff_s` before it may run again.
// `nodes` are those that did not start a replica of it (in name order, each once); `reason` says which.
struct StartTimeout {
  std::string job;
  std::vector<std::string> nodes;
  int64_t backoff_s = 0;
  std::string reason;
  friend bool operator==(const StartTimeout&, const StartTimeout&) = default;
};
// A webhook (docs/api.md, "Webhooks"): where the server POSTs the events it asks for, signed with its secret.
// Unlike a token's secret, which the server only compares and so keeps as a hash, this one is a signing key the
// leader must hold to sign every delivery (and a standby once it leads), so the journal keeps it as it keeps jobs'
// environments (docs/security.md, "Files at rest"); no answer but the one that made it, no event, log line or
// audit entry shows it. Who made it and when are the record's actor and time.
struct WebhookRecord {
  std::string id;    // public: names it in lists, deliveries (X-Allot-Webhook) and `allot webhook delete`
  std::string team;  // empty: cluster-wide (every event); else that team's jobs' events only
  std::string url;   // http:// or https://, checked when made (server/outside/webhook_rules.h)
  std::vector<NoticeKind> events;  // at least one, each once
  std::string secret;              // the HMAC-SHA256 key, 64 hex digits
  std::string description;
  friend bool operator==(const WebhookRecord&, const WebhookRecord&) = default;
};
struct CreateWebhook {
  WebhookRecord webhook;
  friend bool operator==(const CreateWebhook&, const CreateWebhook&) = default;
};
struct DeleteWebhook {
  std::string id;
  friend bool operator==(const DeleteWebhook&, const DeleteWebhook&) = default;
};
// A rule on a running job's output fired on its agent (core/lifecycle/log_rules.h): a hung run or a restart_on line restarted
// it using a retry, a fail_on line failed it without one. `line` is the job's own output (bounded and escaped by the
// server when the agent reported it): the journal keeps it as data, and only readers of the job's logs see it.
struct LogRuleFired {
  std::string job;
  int attempt = 0;  // the run it ended, for people reading the journal (replay ends the job's current run)
  LogRuleFiring firing;
  friend bool operator==(const LogRuleFired&, const LogRuleFired&) = default;
};
// A waiting job that never ran ended because its dependency on `after` can never hold (core/model/dependency.h): it is
// Cancelled with reason dependency_never. The scheduler pass finds it; replay checks, on the replayed state, that
// the dependency had failed for good by then. `condition` is the dependency's, for people reading the journal.
struct DependencyNeverHolds {
  std::string job;
  std::string after;
  DependencyCondition condition = DependencyCondition::kEnded;
  friend bool operator==(const DependencyNeverHolds&, const DependencyNeverHolds&) = default;
};
// Retention (`allot server --retain-finished`): every finished job whose last change was at or before the cutoff
// leaves the live state (core/model/state.h, compact_finished). Its own records stay in the journal.
struct CompactFinished {
  Time finished_before = 0;
  friend bool operator==(const CompactFinished&, const CompactFinished&) = default;
};

// The network-node layers of registered nodes set at once (EC2 topology on live nodes, docs/topology.md): by
// `allot topology apply` (POST /v1/topology/apply) for every node its file matched, or by an agent that registered
// again with other layers than its node has. One record for the whole apply, so a restart has all of it or none.
struct SetNetworkLayers {
  std::vector<NodeLayers> nodes;  // each node once, with 3 or 4 layers (core check_network_layers)
  friend bool operator==(const SetNetworkLayers&, const SetNetworkLayers&) = default;
};

// An admission check (docs/scheduling.md, "Admission checks"): what must say ready before an admitted run's
// replicas go to agents. It applies to the runs of the jobs of `teams` (empty: every team) whose priority class is
// one of `priority_classes` (empty: any, none included) admitted after the check was made. Who made it and when are
// the record's actor and time. Putting a check of a name that exists replaces it (runs already waiting keep waiting).
struct AdmissionCheckRecord {
  std::string name;  // a DNS label
  AdmissionCheckKind kind = AdmissionCheckKind::kHttp;
  std::string url;  // kHttp: http:// or https:// (server/outside/webhook_rules.h, parse_webhook_url); empty otherwise
  std::vector<std::string> teams;
  std::vector<std::string> priority_classes;
  std::string description;
  friend bool operator==(const AdmissionCheckRecord&, const AdmissionCheckRecord&) = default;
};
struct PutAdmissionCheck {
  AdmissionCheckRecord check;
  friend bool operator==(const PutAdmissionCheck&, const PutAdmissionCheck&) = default;
};
struct DeleteAdmissionCheck {
  std::string name;
  friend bool operator==(const DeleteAdmissionCheck&, const DeleteAdmissionCheck&) = default;
};
// A check answered for run `attempt` (server attempt_of) of a Running job. kReady is the server's table only (the
// run starts once every check that applies said ready); kRetry stops the run and requeues the job Suspended without
// using a retry, passed over for `backoff_s` (reason admission_check_retry); kReject ends it Failed without a retry
// (reason admission_check_rejected). `message` is the check's own, bounded by the server.
struct AdmissionCheckAnswered {
  std::string job;
  int attempt = 0;
  std::string check;
  CheckAnswer answer = CheckAnswer::kReady;
  std::string message;
  int64_t backoff_s = 0;  // kRetry only
  friend bool operator==(const AdmissionCheckAnswered&, const AdmissionCheckAnswered&) = default;
};

// Recovery in place (core/lifecycle/in_place.h; docs/resiliency.md, "Recovery in place"): a running job with recovery
// in_place recovered from the failure of `node`: its replicas there were placed again (`moves`, each a pod set and
// the replica's index in it, and where it runs now), the others kept running, in membership epoch `epoch` (written
// for people and checked on replay). Journaled before the node's health change, which then finds none of the job's
// replicas on the node and so does not restart it.
struct ReplicaMoveRecord {
  int pod_set = 0;
  int index = 0;
  ReplicaRecord to;
  friend bool operator==(const ReplicaMoveRecord&, const ReplicaMoveRecord&) = default;
};
struct RecoverInPlace {
  std::string job;
  std::string node;
  int epoch = 0;
  std::vector<ReplicaMoveRecord> moves;
  friend bool operator==(const RecoverInPlace&, const RecoverInPlace&) = default;
};
// An in-place recovery that did not finish within the job's recovery_timeout (its new replicas were not all
// running): the run ended as a node failure ends it (core/lifecycle/in_place.h, fall_back_from_in_place).
struct InPlaceFallback {
  std::string job;
  int epoch = 0;  // the recovery's membership epoch, for people reading the journal
  std::string reason;
  friend bool operator==(const InPlaceFallback&, const InPlaceFallback&) = default;
};

// Several clusters (docs/multicluster.md): a step of a manager's job through the worker clusters (core/lifecycle/remote_copy.h),
// decided by the manager's dispatcher from what the workers answered, and journaled before it acts on it where the
// step is an act (a dispatch is journaled before the copy is submitted, so a restart submits the same copy again,
// which the worker answers 409 for when it has it already). `reason` is the worker's (kRunning, kSucceeded,
// kFailed) or the manager's (kLost); bounded by the dispatcher. A mirrored event of the copy (kEvent) has the worker's
// message as `reason`, and its number and kind there as `worker_seq` and `worker_kind` (0 and empty for the others).
struct RemoteCopyStep {
  std::string job;
  RemoteStep step = RemoteStep::kDispatched;
  std::string worker;
  std::string copy;
  std::string reason;
  uint64_t worker_seq = 0;
  std::string worker_kind;
  friend bool operator==(const RemoteCopyStep&, const RemoteCopyStep&) = default;
};

using Op = std::variant<SetPolicy, UpsertTeam, RemoveTeam, AddNode, RemoveNode, NodeHealthChange, Cordon, Drain,
                        Submit, Cancel, Finish, Admit, Preempt, CreateToken, RevokeToken, Audit, Resize, HoldJob,
                        SetJobPriority, DeleteJob, CreatePlan, PlanStepRecord, DeletePlan,
                        CompactFinished, Requeue, TimeLimitExceeded, LocalityWaitBegan, StartTimeout,
                        CreateWebhook, DeleteWebhook, LogRuleFired, DependencyNeverHolds, SetNetworkLayers,
                        PutAdmissionCheck, DeleteAdmissionCheck, AdmissionCheckAnswered, CreateReservation,
                        ReservationStepRecord, DeleteReservation, RecoverInPlace, InPlaceFallback,
                        RemoteCopyStep>;

// The name of a record kind as it is written in the journal ("submit", "admit", ...).
const char* op_name(const Op& op);
// The job a record is about (submit, admit, finish, ...); empty for records about no one job.
std::string job_of(const Op& op);

// An actor without a token: the server itself (scheduler decisions, heartbeat timeouts, the bootstrap token),
// or a caller refused before its token was known (audited in nobody's name).
enum class Tokenless : uint8_t { kServer, kStranger };
// The role an actor acted in: its token's role, or one of the tokenless; none (std::monostate) for a record
// without an actor. In the journal it is spelled as the token's role is (auth::role_name), "server" or "none",
// and "" for none: the same bytes the string this replaced was written as.
using ActorRole = std::variant<std::monostate, auth::Role, Tokenless>;
const char* actor_role_name(const ActorRole& r);
std::optional<ActorRole> parse_actor_role(std::string_view name);
std::string actor_role_list();  // "admin, member, viewer, agent, agent-join, server, none", for messages

// Who made a change: the token the request carried (its id, role and scope), or the server itself ("server":
// scheduler decisions, heartbeat timeouts, the bootstrap token). Records written before tokens existed have
// none (empty token).
struct Actor {
  std::string token;
  ActorRole role;
  std::vector<std::string> teams;
  std::string node;
  std::string user;  // the token's user (TokenRecord::user); empty: none, and in records written before users
  friend bool operator==(const Actor&, const Actor&) = default;
};

struct Record {
  uint64_t seq = 0;  // position in the journal, assigned by the writer: 1, 2, 3, ...
  Time at = 0;       // when it happened (server: wall-clock seconds)
  Op op;
  Actor actor;
  friend bool operator==(const Record&, const Record&) = default;
};

}  // namespace allot::store
