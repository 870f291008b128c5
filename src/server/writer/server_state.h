#pragma once
// What the server's writer thread owns: the core's ClusterState plus the server's own tables (node addresses
// and heartbeats, removed teams, exit reports, counters), and the one function through which journal
// records change them, live and on replay alike. Because replay goes through the same function, the
// counters, tables and events rebuilt on start are the ones the server had when it stopped.
//
// Thread-safety: none; only the writer thread touches a ServerState.
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/cow_map.h"
#include "core/model/cow_value.h"
#include "core/model/state.h"
#include "server/writer/audit_trail.h"
#include "server/views/observed.h"
#include "server/lifecycle/running_index.h"
#include "server/lifecycle/start_gate.h"
#include "server/views/usage_ledger.h"
#include "store/record.h"

namespace allot::server {

// One health check's last result as the node's agent reported it (agent/health_checks.h).
struct NodeCheck {
  std::string name;
  std::string status;      // passed, failed, skipped
  std::string detail;
  std::string on_failure;  // reboot, replace
  int64_t at_ms = 0;
  bool operator==(const NodeCheck&) const = default;
};

// One change of a node's health, for `allot describe node` (rebuilt from the journal on start).
struct NodeChange {
  Time at = 0;
  std::string from, to, cause, reason;
};

// Which of a replica's requested limits the node's agent holds it to (agent/cgroups.h): a cgroup v1 or v2 that
// it could make and write; false where it could not (not root, read-only, not delegated), and replicas there run
// without that limit. Reported in every heartbeat's health, shown as the node's `limits_enforced`.
struct LimitsEnforced {
  bool memory = false;
  bool cpu = false;
  bool operator==(const LimitsEnforced&) const = default;
};

struct NodeInfo {
  // First, the fields the writer's rounds read for every node each batch (time_out_nodes, lifecycle_tick): kept
  // together so that with 10,000 nodes a round touches a cache line or two per node, not five.
  bool agent = false;                 // an agent registered it: it must heartbeat
  bool timed_out = false;             // its health was last changed by a heartbeat timeout
  // Not journaled: silent past the heartbeat timeout while not Schedulable (a Schedulable node is timed out
  // instead, timed_out): its health stays, but its agent has stopped its replicas (it fences itself), so no start
  // elsewhere waits for their stops (start_gate.h). Looked at again at every writer tick.
  bool fenced = false;
  bool suspect = false;           // mirrors Node::suspect: no new replicas here
  // Where node_of() last found the node in the cluster's table: the writer's rounds look at every node each batch,
  // and hashing 10,000 names three times a batch was most of their cost. A cache, checked at each use.
  uint32_t node_hint = UINT32_MAX;
  int64_t last_heartbeat_ms = 0;      // not journaled: a restarted server gives every node a fresh timeout
  int64_t heartbeat_interval_ms = 1000;  // what the agent reports (not journaled)
  int64_t fault_since_ms = 0;     // a failed check reported and not yet acted on (0: none)
  // A replica here died abnormally and the node's health since is not known yet (its agent's checks run): suspect,
  // and the exit is held (node_lifecycle.h). 0: none.
  int64_t exit_judging_since_ms = 0;
  store::HealthCause cause = store::HealthCause::kAdmin;  // of the last health change (node lifecycle, below)

  std::string address = "127.0.0.1";  // MASTER_ADDR for jobs whose rank 0 runs here
  // (job index, rank) of every replica ever placed here: its agent may ship those replicas' logs (also after a
  // cancel or preemption ended the run), and no others. It grows with the jobs the node has run (until finished
  // ones are compacted), and the views share it (cow_value.h): a view of 10,000 nodes copied it for each.
  CowValue<std::set<std::pair<uint32_t, int>>> ranks_placed;

  // Node lifecycle (server/lifecycle/node_lifecycle.h, docs/resiliency.md). Journaled through the health changes: the
  // cause and reason of the last one, when it happened, and the history.
  std::string reason;
  int64_t phase_since_ms = 0;
  CowValue<std::vector<NodeChange>> history;  // the newest kHistoryKept; shared with the views as ranks_placed
  static constexpr size_t kHistoryKept = 50;
  // What the agent reports (not journaled; the next heartbeat says it again).
  CowValue<std::vector<NodeCheck>> checks;  // shared with the views until a report changes them
  size_t checks_configured = 0;
  int boot = 0;
  std::string deep_status = "none", deep_detail;
  bool exit_checks_running = false;  // HealthReport::exit_checks_running
  std::optional<LimitsEnforced> limits;  // unset: the agent has not said (an older agent)
  // The server's own view between heartbeats (not journaled).
  int boot_at_reboot_order = -1;  // the boot the agent was in when the reboot was ordered
  std::string suspect_reason;
  std::string fault_reason;
  bool fault_replace = false;     // the failed check asks for a replacement, not a reboot
  std::string exit_judging_reason;
  std::string replaces;           // the node this one replaced
  int start_timeouts = 0;         // start_timeout records naming it: replicas it did not start in time (journaled)
};

// The cluster's live node named `name` (nullptr: none), as ClusterState::find_node finds it, remembering where in
// `info` (the node's NodeInfo) so that the next look needs no hash of the name. The writer's thread, on its own
// state (it writes the hint).
const Node* node_of(const ClusterState& cluster, const std::string& name, NodeInfo& info);

// A replacement the writer asks the provisioner for once the batch is durable (server/outside/provisioner.h).
struct ProvisionRequest {
  std::string node, instance_type;
  std::map<std::string, std::string> labels;  // handed to the command as k=v,k=v (provisioner.h)
  std::string replacement, reason;
  std::string join_token;  // a fresh agent-join token's bearer text, handed over in a file readable by its owner only
  std::string plan;        // a capacity plan's node (server/lifecycle/plan_steps.h): it joins with --plan and replaces nothing
};

// One restart of a job after a failure, for `allot describe` (rebuilt from the journal on start).
struct RestartInfo {
  Time at = 0;
  int attempt = 0;      // the run that ended
  std::string cause;    // which node and which check, or which replica exited how
  std::string node;     // the failed node, when a node caused it
  int64_t run_s = 0;    // how long that run had been running
  int64_t lost_s = 0;   // work since its last checkpoint (checkpoint_interval), lost by the restart
};

// Goodput bookkeeping of one job: accelerator-seconds (or replica-seconds, for CPU jobs) held by its runs and
// lost to restarts and preemptions, the way `sim replay` counts them (useful = held - lost).
struct JobAccount {
  int64_t slots = 0;      // accelerators (or replicas) of the current placement
  int64_t held_s = 0;     // slot-seconds of runs that ended
  int64_t lost_s = 0;     // slot-seconds of work lost when runs ended
  // When the current run began at its current size: its admission, or its latest resize (which ends a run at
  // the old size and begins one at the new).
  Time run_since = 0;
  std::vector<RestartInfo> restarts;
  // The instance types the current run holds (observed.h, placement_types): a preemption of the run counts
  // under them. Set at admission and resize; not in snapshots, which restore it from a running job's placement.
  std::vector<TypeId> run_types;
};

// A non-zero exit of a replica of a multi-node job, held back for a moment: when a peer's node turns out to be
// failing (it missed a heartbeat, reported a fault), the failure is the node's, not a second one of the job's.
struct DeferredExit {
  int attempt = 0;
  std::string node;    // the node that reported it
  std::string reason;  // "replica R exited with code C"
  int64_t until_ms = 0;
};

// Who may read an event in the stream. Members follow their own teams' jobs (Event::team) and what happens to
// the cluster; records about tokens name token ids and other teams' scopes, which only the roles that read the
// whole cluster (admins and viewers) see.
enum class EventAudience { kEveryReader, kWholeClusterReaders };
EventAudience event_audience(const store::Op& op);
const char* event_audience_name(EventAudience a);  // "every-reader", "whole-cluster-readers" (state snapshots)
std::optional<EventAudience> parse_event_audience(std::string_view name);

// One line of the event stream (/v1/events): a journaled change or one of its consequences for a job.
struct Event {
  uint64_t seq = 0;
  Time at = 0;
  std::string kind;  // the record kind (submit, admit, preempt, node_health, ...) or "job" for a consequence
  std::string job;
  std::string node;
  RefText message;  // with the jobs it names: readers who may not see a team's jobs get them unnamed (view/job_refs.h)
  std::string team;  // the job's team, when there is a job: members see only their teams' job events
  // A preempt event: the victim's preemption group as journaled (core/preemption/preemption_record.h); null for records
  // written before groups were.
  std::shared_ptr<const PreemptionGroup> preemption;
  EventAudience audience = EventAudience::kEveryReader;
  // The webhook notice this event is (webhook_rules.h, notice_of), decided from the record and the job's new
  // state when the event is made; none for most. Not kept in snapshots: webhooks deliver only events that happen
  // while the server runs.
  std::optional<store::NoticeKind> notice;
};

// A preemption group a job took part in, as victim or preemptor, and when.
struct PreemptionSeen {
  Time at = 0;
  std::shared_ptr<const PreemptionGroup> group;
};

// Exits reported by agents for one run of a job.
// A Running job's in-place recovery that waits for its moved ranks to run (server/lifecycle/in_place_recovery.h).
struct InPlaceWait {
  int epoch = 0;           // the membership epoch the recovery began
  int64_t since_ms = 0;    // when: the record's time, or (on the leader that wrote it) the moment it was written
  std::set<int> ranks;     // the moved ranks not yet reported running on their new nodes
};

struct ExitTrack {
  int attempt = -1;
  std::set<int> succeeded;  // ranks that exited 0
};

// Seconds from submission to first admission, as a Prometheus histogram (cumulative buckets at render time):
// milliseconds (an idle cluster) to a week (a GPU queue), so that no quantile saturates at the last bound.
struct LatencyHistogram {
  static constexpr double kBounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
                                       300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800, 345600, 604800};
  static constexpr size_t kBuckets = sizeof(kBounds) / sizeof(kBounds[0]);
  uint64_t counts[kBuckets + 1] = {};  // the last one: above every bound
  double sum = 0;
  uint64_t count = 0;
  void observe(double seconds);
};

// A token as the server knows it: the journaled record plus its life (docs/security.md).
struct TokenInfo {
  store::TokenRecord token;
  Time created_at = 0;
  std::string created_by;  // the id of the token that made it; "server" for the bootstrap token
  bool revoked = false;
  Time revoked_at = 0;
};
using TokenTable = std::map<std::string, TokenInfo>;  // by id

// How many nodes the join token `join_id` has registered: the agent credentials made for nodes that joined with
// it, revoked ones included (docs/security.md, "Join tokens").
int joins_of(const TokenTable& tokens, const std::string& join_id);

// A webhook as the server knows it: the journaled record (with its secret) and who made it when.
struct WebhookInfo {
  store::WebhookRecord webhook;
  Time created_at = 0;
  std::string created_by;  // the id of the token that made it
};
using WebhookTable = std::map<std::string, WebhookInfo>;  // by id

// An admission check as the server knows it (admission_checks.h): the journaled record, who made it when, and the
// journal record that first made a check of this name: the runs that began after it wait for it, those that began
// before do not (so a check made while jobs run never holds their replicas, also after a restart).
struct AdmissionCheckInfo {
  store::AdmissionCheckRecord check;
  Time created_at = 0;
  std::string created_by;  // the id of the token that made it
  uint64_t since_seq = 0;
};
using AdmissionCheckTable = std::map<std::string, AdmissionCheckInfo>;  // by name

// The admission checks of a job's current run: the journal record that began it (its admit or resize) and the
// checks that answered ready for it. Rebuilt by replay, in snapshots.
struct RunChecks {
  int attempt = -1;
  uint64_t began_seq = 0;
  std::set<std::string> ready;
  bool operator==(const RunChecks&) const = default;
};

// An HTTP check asked for a run and not answered usably yet (no answer, an error status, a body that is not an
// answer): what the last try gave and when the next goes. In memory only: a restarted server asks again at once.
struct CheckTrying {
  int attempt = -1;
  int failures = 0;
  std::string error;
  int64_t next_try_ms = 0;
};

// The CPUs each replica of a job's current run reported it is bound to (GET /v1/jobs/NAME, `allot describe`).
struct ReplicaCpus {
  int attempt = 0;
  std::map<int, std::string> by_rank;
};

// Which replicas of a job's current run have started, and since when the agents had them (gang start timeout,
// start_timeouts.h). In memory: a restarted server gives every run a fresh start timeout.
struct ReplicaStarts {
  int attempt = -1;
  int64_t since_ms = 0;  // when the server first saw the run handed out (0: not yet)
  std::set<int> ranks;   // reported running (or exited)
};

// The replicas of a job's current run whose agents report them pulling the job's image (docs/jobs.md, "Images"):
// `allot describe` says "Pulling image" while any does, and the first report of a run is an event.
struct ImagePulls {
  int attempt = -1;
  std::set<std::pair<std::string, int>> pulling;  // (node, rank)
  bool noted = false;  // the run's "pulling image" event is out
};

// The last rule on a job's output that fired (store::LogRuleFired): what `allot describe` and GET /v1/jobs/{job}
// show, the matching line only to readers of the job's logs (docs/security.md, "Logs"). Kept in state snapshots.
struct LogRuleSeen {
  int attempt = 0;
  Time at = 0;
  LogRuleFiring firing;
  bool operator==(const LogRuleSeen&) const = default;
};

// With policy.backfill: the reservation the scheduler's last pass ended with (core/admission/backfill.h): its holder, when
// the running jobs' time limits free room for it, and the nodes it would take then. Not journaled and not in
// snapshots: every pass plans it afresh from the jobs then running.
struct ReservationSeen {
  JobId holder;
  Time at = 0;
  std::vector<std::string> nodes;  // names, sorted as the core sorted their ids
};

struct ServerState {
  ClusterState cluster;
  std::unordered_map<std::string, NodeInfo> nodes;  // by node name
  // Not journaled: no node's silence counts before this (the server stalled or refused connections then;
  // node_silence.h).
  int64_t hearing_since_ms = 0;
  // Something the writer's per-batch rounds look at changed for some node since they last walked every node
  // (round_nodes.h): set wherever suspicion, a fault, an exit judged, a health change, an agent, a heartbeat
  // interval or the set of nodes changes. True in a new state, whose first round walks every node.
  bool round_nodes_changed = true;
  std::set<std::string> removed_teams;              // removed through the API; their jobs are refused
  std::unordered_map<uint32_t, ExitTrack> exits;    // by JobId index; in memory, agents report again
  std::unordered_map<uint32_t, DeferredExit> deferred_exits;  // by JobId index; in memory
  // By JobId index, of Running jobs only; in memory, agents report again with every heartbeat.
  std::unordered_map<uint32_t, ReplicaCpus> replica_cpus;
  std::unordered_map<uint32_t, ImagePulls> pulls;  // the same: Running jobs only, in memory
  std::unordered_map<uint32_t, ReplicaStarts> starts;  // the same (start_timeouts.h)
  // By JobId index; rebuilt by replay. Shared shard by shard with the views (cow_map.h): a view used to copy an
  // account, with its restarts, for every job kept.
  CowMap<uint32_t, JobAccount> accounts;
  std::unordered_map<uint32_t, LogRuleSeen> log_rules_fired;  // by JobId index; rebuilt by replay, in snapshots
  std::vector<ProvisionRequest> provision_queue;              // taken by the writer after each batch
  // Nodes retired by a replacement (name -> the replacement): their agents may not join again under that name.
  // Rebuilt by replay from the replacements' health changes.
  std::map<std::string, std::string> retired;
  // Nodes that left the cluster (retired by a replacement, removed) while their agent was live, and when (ms, an
  // upper bound): their agent may still be stopping replicas, and once cut off (its credential revoked, its
  // heartbeats refused) it fences itself within the heartbeat timeout, so until then no start waits on their
  // stops as confirmed (start_gate.h). Not journaled: dropped by the writer once the timeout has passed.
  std::map<std::string, int64_t> left_live_ms;
  // Steady-clock time of each live submission not yet admitted: the start of the scheduling latency.
  // Shared shard by shard with the state's copies (core/model/cow_map.h).
  CowMap<uint32_t, std::chrono::steady_clock::time_point> waiting_since;
  // Live submissions only; not rebuilt by replay. By (team, instance type): a job admitted onto several instance
  // types is observed under each of them, like the by-rule counters (observed.h, RuleKey).
  std::map<std::pair<std::string, std::string>, LatencyHistogram> scheduling_latency;
  uint64_t admissions_total = 0;
  uint64_t preemptions_total = 0;
  // The last kPreemptionsKept groups each job took part in (by JobId index), newest last: what `allot describe`
  // shows of who preempted it, or whom it preempted. Rebuilt by replay.
  std::unordered_map<uint32_t, std::deque<PreemptionSeen>> preemptions_of;
  static constexpr size_t kPreemptionsKept = 10;
  // Hourly usage aggregates (usage_ledger.h, GET /v1/usage): rebuilt by replay, in snapshots, kept through
  // compaction.
  UsageLedger usage;
  Observed observed;  // queue waits, decisions by rule, pass durations, utilisation samples (observed.h)
  // Jobs Running now (JobId indices, in order), so a heartbeat looks at running jobs only. Kept up to date from
  // the events: every change of a job's state names the job in one.
  std::set<uint32_t> running;
  RunningIndex running_by_node;  // the same jobs by node (running_index.h)
  std::optional<ReservationSeen> reservation;  // the last pass's, while its holder waits (policy.backfill)
  StartGate gate;  // which runs the agents were given, and the stops they wait for (start_gate.h); not journaled
  // Shared with the views and the request threads' authenticator until a token record changes it (cow_value.h):
  // with an agent credential per node, a view of 10,000 nodes copied 10,000 tokens.
  CowValue<TokenTable> tokens;
  uint64_t tokens_version = 0;  // bumped by every token record: the writer republishes the table then
  WebhookTable webhooks;
  uint64_t webhooks_version = 0;  // bumped by every webhook record: the writer hands the table to the sender then
  AdmissionCheckTable admission_checks;
  uint64_t admission_checks_version = 0;  // bumped by every check record: the writer hands asks to the checker then
  std::unordered_map<uint32_t, InPlaceWait> in_place_waits;  // by JobId index; rebuilt from the journal
  std::unordered_map<uint32_t, RunChecks> run_checks;  // by JobId index: Running jobs' runs (admission_checks.h)
  std::unordered_map<uint32_t, int> check_retries;     // by JobId index: retry answers so far (the backoff doubles)
  std::map<std::pair<uint32_t, std::string>, CheckTrying> check_trying;  // by (job index, check); in memory
  // The newest audit entries, oldest first; older ones stay in the journal (kAuditKept bounds memory). Each
  // entry is shared by the views (audit_trail.h).
  AuditTrail audit;
  static constexpr size_t kAuditKept = 100000;
  uint64_t last_seq = 0;    // the last journal record applied
  uint64_t last_event = 0;  // the last event numbered
  uint64_t version = 0;     // bumped by every applied record; caches key on it
  // Nodes whose heartbeat answer a command changed outside any record (a heartbeat's health or CPU report, a
  // registration): the writer republishes their answers after the batch and empties this (heartbeat_board.h).
  std::vector<std::string> nodes_touched;
};

// A copy of the live state for readers on other threads (ViewPublisher, view_publisher.h): every member copied except
// the job and node tables, whose chunks unchanged since `previous` (the last view of the same state, or null) are
// shared with it (JobTable::view_of, ChunkTable::view_of). The result must only ever be read. REQUIRES: the thread
// that owns `live`, with no mutable reference into its jobs or nodes written through afterwards (between batches).
std::shared_ptr<const ServerState> view_of(ServerState& live, const ServerState* previous, JobTable::ViewCost* cost = nullptr);

// Applies a record: the core operation (store::apply_record), then the server's tables, and appends the
// events it causes. An error means the core refused it and nothing changed.
Status apply(ServerState& st, const store::Record& r, std::vector<Event>& events);

// For a decision the scheduler has already applied to the cluster: the same table updates and events as
// apply() makes for its record, without applying it again.
void note_decision(ServerState& st, const store::Record& r, std::vector<Event>& events);

// A job's run number as agents see it: restarts plus preemptions plus resizes (an elastic job restarts at its
// new size), after the runs of earlier jobs of the same name (Job::attempt_base), so a new run is never
// mistaken for an old one.
inline int attempt_of(const Job& j) { return j.attempt_base + j.restarts + j.preemptions + static_cast<int>(j.resizes.size()); }
// The run number shown to people (the log's lines between attempts, `allot logs`, ALLOT_ATTEMPT): attempt_of
// without the part of attempt_base that came from folded names (Job::attempt_folded). A name never used before
// thus starts at attempt 0 as it would had no names been folded, and one whose earlier jobs are still listed in
// attempts_used is numbered after them as before. Never used to tell runs apart: two jobs of the same name may
// show the same numbers (an old job whose name was folded, and the new one), their attempt_of never are.
inline int attempt_shown(const Job& j) { return attempt_of(j) - j.attempt_folded; }

}  // namespace allot::server
