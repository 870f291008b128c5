#include "server/writer/server_state.h"

#include <algorithm>

#include "core/model/plans.h"
#include "server/outside/webhook_rules.h"
#include "store/replay.h"

namespace allot::server {

namespace {

using namespace allot::store;

// The node a record is about, for events and for finding the jobs it stops.
struct NodeOf {
  std::string operator()(const AddNode& o) const { return o.node.name; }
  std::string operator()(const RemoveNode& o) const { return o.node; }
  std::string operator()(const NodeHealthChange& o) const { return o.node; }
  std::string operator()(const Cordon& o) const { return o.node; }
  std::string operator()(const Drain& o) const { return o.node; }
  // No catch-all: a new kind of record does not compile until it says which node it names, if any.
  std::string operator()(const SetPolicy&) const { return ""; }
  std::string operator()(const UpsertTeam&) const { return ""; }
  std::string operator()(const RemoveTeam&) const { return ""; }
  std::string operator()(const Submit&) const { return ""; }
  std::string operator()(const Cancel&) const { return ""; }
  std::string operator()(const Finish&) const { return ""; }
  std::string operator()(const Admit&) const { return ""; }
  std::string operator()(const Preempt&) const { return ""; }
  std::string operator()(const Requeue& o) const { return o.node; }
  std::string operator()(const TimeLimitExceeded&) const { return ""; }
  std::string operator()(const LocalityWaitBegan&) const { return ""; }
  // Names nodes, but stops only its own job (which apply() accounts for as the named job).
  std::string operator()(const StartTimeout&) const { return ""; }
  std::string operator()(const LogRuleFired&) const { return ""; }
  std::string operator()(const DependencyNeverHolds&) const { return ""; }
  // Names several nodes and stops no job (docs/topology.md, "Live nodes").
  std::string operator()(const SetNetworkLayers&) const { return ""; }
  std::string operator()(const Resize&) const { return ""; }
  std::string operator()(const CreateToken&) const { return ""; }
  std::string operator()(const RevokeToken&) const { return ""; }
  std::string operator()(const Audit&) const { return ""; }
  std::string operator()(const HoldJob&) const { return ""; }
  std::string operator()(const SetJobPriority&) const { return ""; }
  std::string operator()(const DeleteJob&) const { return ""; }
  std::string operator()(const CreatePlan&) const { return ""; }
  std::string operator()(const PlanStepRecord&) const { return ""; }  // its nodes: plan_nodes_of()
  std::string operator()(const DeletePlan&) const { return ""; }
  std::string operator()(const CreateReservation&) const { return ""; }
  std::string operator()(const ReservationStepRecord&) const { return ""; }  // its jobs: reservation_jobs_of()
  std::string operator()(const DeleteReservation&) const { return ""; }
  std::string operator()(const CompactFinished&) const { return ""; }
  std::string operator()(const CreateWebhook&) const { return ""; }
  std::string operator()(const DeleteWebhook&) const { return ""; }
  std::string operator()(const PutAdmissionCheck&) const { return ""; }
  std::string operator()(const DeleteAdmissionCheck&) const { return ""; }
  std::string operator()(const AdmissionCheckAnswered&) const { return ""; }
  // The failed node: the recovery's event is on it too. The job it names keeps running.
  std::string operator()(const RecoverInPlace& o) const { return o.node; }
  std::string operator()(const InPlaceFallback&) const { return ""; }
  std::string operator()(const RemoteCopyStep&) const { return ""; }  // a worker cluster's, not a node here
};


// The nodes in the cluster of the plan a plan step or deletion names: the jobs it may stop run there, and they
// may leave.
// The jobs a reservation step may requeue (its start): every running job, as the nodes an amount takes are
// chosen by the step itself. Steps are rare; nothing else looks at them all.
std::vector<JobId> reservation_jobs_of(const ClusterState& s, const Op& op) {
  if (!std::holds_alternative<ReservationStepRecord>(op)) return {};
  return s.running_jobs.sorted();
}

std::vector<std::string> plan_nodes_of(const ClusterState& s, const Op& op) {
  std::string plan;
  if (const auto* p = std::get_if<PlanStepRecord>(&op)) plan = p->plan;
  else if (const auto* d = std::get_if<DeletePlan>(&op)) plan = d->plan;
  std::vector<std::string> out;
  const Plan* p = plan.empty() ? nullptr : s.find_plan(plan);
  if (!p) return out;
  for (const Node& n : s.nodes)
    if (!n.removed && n.plan == p->id) out.push_back(n.name);
  return out;
}

std::vector<JobId> running_on(const ClusterState& s, const std::string& node_name) {
  std::vector<JobId> out;
  const Node* n = s.find_node(node_name);
  if (!n) return out;
  for (const Job& j : s.jobs) {
    if (j.state != JobState::kRunning) continue;
    for (NodeId id : j.placement.nodes())
      if (id == n->id) {
        out.push_back(j.id);
        break;
      }
  }
  return out;
}

RefText job_message(const Job& j) { return std::string(job_state_name(j.state)) + ": " + j.reason.ref_text(); }

// "network layers set on 2 nodes: gpu-1 (nn-1a/nn-2b/nn-3c), gpu-2 (...)"; the first 20 nodes by name, then how
// many more (an apply may name thousands; the journal record has them all).
std::string network_layers_message(const std::vector<NodeLayers>& nodes) {
  constexpr size_t kShown = 20;
  std::string out = "network layers set on " + std::to_string(nodes.size()) + (nodes.size() == 1 ? " node: " : " nodes: ");
  for (size_t i = 0; i < nodes.size() && i < kShown; ++i) {
    std::string path;
    for (const auto& l : nodes[i].layers) path += (path.empty() ? "" : "/") + l;
    out += (i ? ", " : "") + nodes[i].node + " (" + path + ")";
  }
  if (nodes.size() > kShown) out += " and " + std::to_string(nodes.size() - kShown) + " more";
  return out;
}

// What the record says, after it was applied, for people reading the event stream.
RefText message_of(const ServerState& st, const Record& r) {
  const ClusterState& s = st.cluster;
  struct M {
    const ClusterState& s;
    RefText operator()(const SetPolicy&) const { return "cluster policy updated"; }
    RefText operator()(const UpsertTeam& o) const { return "team " + o.team.name + " created or updated"; }
    RefText operator()(const RemoveTeam& o) const { return "team " + o.team + " removed"; }
    RefText operator()(const AddNode& o) const {
      return "node joined (" + o.node.instance_type + (o.agent ? ", agent at " + o.address : "") + ")";
    }
    RefText operator()(const RemoveNode& o) const { return "node left the cluster" + (o.cause.empty() ? "" : ": " + o.cause); }
    RefText operator()(const NodeHealthChange& o) const {
      return std::string("health ") + node_health_name(o.health) + " (by " + health_cause_name(o.cause) + ")" +
             (o.reason.empty() ? "" : ": " + o.reason);
    }
    RefText operator()(const Cordon& o) const { return o.cordoned ? "cordoned" : "uncordoned"; }
    RefText operator()(const Drain&) const { return "drained: cordoned, its jobs suspended"; }
    RefText operator()(const Submit& o) const {
      return "submitted by team " + o.job.team + (o.job.priority.empty() ? "" : ", priority " + o.job.priority);
    }
    RefText operator()(const Cancel& o) const { return "cancelled by request"; }
    RefText operator()(const Finish& o) const {
      const Job* j = s.find_job(o.job);
      return j ? job_message(*j) : o.reason;
    }
    RefText operator()(const Admit& o) const { return "admitted: " + o.reason; }
    RefText operator()(const Preempt& o) const { return "preempted: " + o.reason; }
    RefText operator()(const Requeue& o) const { return "requeued: " + o.reason; }
    RefText operator()(const LocalityWaitBegan& o) const {
      const Job* j = s.find_job(o.job);
      // The pass that began the wait gave the job its reason ("waiting for locality: ... until t=T ...").
      return j && j->reason_code == ReasonCode::kLocality ? j->reason.ref_text() : RefText("its locality wait began");
    }
    RefText operator()(const StartTimeout& o) const { return "start timeout: " + o.reason; }
    // The job's reason, which names the rule and never the line (the line is for readers of the job's logs only).
    RefText operator()(const LogRuleFired& o) const {
      const Job* j = s.find_job(o.job);
      return j ? job_message(*j) : std::string("log rule ") + log_rule_kind_name(o.firing.kind) + " fired";
    }
    RefText operator()(const DependencyNeverHolds& o) const {
      const Job* j = s.find_job(o.job);
      return j ? job_message(*j) : "cancelled: its dependency on job " + o.after + " can never hold";
    }
    RefText operator()(const SetNetworkLayers& o) const { return network_layers_message(o.nodes); }
    RefText operator()(const TimeLimitExceeded& o) const {
      const Job* j = s.find_job(o.job);
      return j ? job_message(*j) : "time limit of " + std::to_string(o.time_limit_s) + " s reached (DeadlineExceeded)";
    }
    RefText operator()(const Resize& o) const {
      return "resized (" + o.cause + ") from " + std::to_string(o.from) + " to " + std::to_string(o.to) + " replicas: " + o.reason;
    }
    RefText operator()(const CreateToken& o) const {
      std::string scope;
      for (const auto& t : o.token.teams) scope += (scope.empty() ? ", teams " : ",") + t;
      if (!o.token.node.empty()) scope += ", node " + o.token.node;
      return "token " + o.token.id + " created (role " + auth::role_name(o.token.role) + scope + ")";
    }
    RefText operator()(const RevokeToken& o) const { return "token " + o.id + " revoked"; }
    // Neither the secret nor the URL (a URL may hold a credential of the receiver's, such as a chat service's
    // hook path): the id, scope and kinds only.
    RefText operator()(const CreateWebhook& o) const {
      std::string kinds;
      for (NoticeKind k : o.webhook.events) kinds += (kinds.empty() ? "" : ",") + std::string(notice_kind_name(k));
      return "webhook " + o.webhook.id + " created (" + (o.webhook.team.empty() ? "cluster-wide" : "team " + o.webhook.team) +
             ", events " + kinds + ")";
    }
    RefText operator()(const DeleteWebhook& o) const { return "webhook " + o.id + " deleted"; }
    // The kind and scope, never the URL (it may hold a credential of the endpoint's).
    RefText operator()(const PutAdmissionCheck& o) const {
      auto list = [](const std::vector<std::string>& v) {
        std::string out;
        for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
        return out;
      };
      std::string scope = o.check.teams.empty() ? "every team" : "teams " + list(o.check.teams);
      if (!o.check.priority_classes.empty()) scope += ", priority classes " + list(o.check.priority_classes);
      return "admission check " + o.check.name + " put (" + admission_check_kind_name(o.check.kind) + ", " + scope + ")";
    }
    RefText operator()(const DeleteAdmissionCheck& o) const { return "admission check " + o.name + " deleted"; }
    RefText operator()(const AdmissionCheckAnswered& o) const {
      const Job* j = s.find_job(o.job);
      if (o.answer != CheckAnswer::kReady && j) return job_message(*j);
      return "admission check " + o.check + " answered " + check_answer_name(o.answer) + " for attempt " +
             std::to_string(o.attempt) + (o.message.empty() ? "" : ": " + o.message);
    }
    // The job's state and reason after the step (core/lifecycle/remote_copy.h), which name the worker and the copy; a mirrored
    // event of the copy says what the worker said.
    RefText operator()(const RemoteCopyStep& o) const {
      if (o.step == RemoteStep::kEvent)
        return "in worker cluster " + o.worker + " as job " + o.copy + " (its event " + std::to_string(o.worker_seq) + ", " +
               o.worker_kind + "): " + o.reason;
      const Job* j = s.find_job(o.job);
      return j ? job_message(*j) : std::string("copy ") + o.copy + " in worker cluster " + o.worker + ": " + remote_step_name(o.step);
    }
    RefText operator()(const Audit& o) const { return o.action; }
    RefText operator()(const HoldJob& o) const { return o.held ? "held by request" : "released"; }
    RefText operator()(const SetJobPriority& o) const {
      return "priority class set to " + (o.priority.empty() ? std::string("none") : o.priority);
    }
    RefText operator()(const DeleteJob&) const { return "deleted; its name is free for a new job"; }
    RefText operator()(const CreatePlan& o) const {
      return "plan " + o.plan.name + " created (" + std::to_string(o.plan.count) + " x " + o.plan.instance_type +
             (o.plan.team.empty() ? ", no owner" : ", team " + o.plan.team) + ")";
    }
    RefText operator()(const PlanStepRecord& o) const { return "plan " + o.plan + " is " + o.state; }
    RefText operator()(const DeletePlan& o) const { return "plan " + o.plan + " deleted"; }
    RefText operator()(const CreateReservation& o) const {
      const ReservationSpec& r = o.reservation;
      return "reservation " + r.name + " created for team " + r.team + (r.user.empty() ? "" : ", user " + r.user) + " (" +
             (r.count > 0 ? std::to_string(r.count) + " x " + r.instance_type : std::to_string(r.nodes.size()) + " named nodes") + ")";
    }
    RefText operator()(const ReservationStepRecord& o) const { return "reservation " + o.reservation + " is " + o.state; }
    RefText operator()(const DeleteReservation& o) const {
      return "reservation " + o.reservation + " deleted; its nodes returned to the common pool";
    }
    RefText operator()(const RecoverInPlace& o) const {
      std::string moved;
      for (const auto& m : o.moves) moved += (moved.empty() ? "" : ", ") + std::string("replica ") + std::to_string(m.index) + " to " + m.to.node;
      return "recovered in place from the failure of node " + o.node + ": membership epoch " + std::to_string(o.epoch) +
             ", " + moved + "; the other replicas keep running";
    }
    RefText operator()(const InPlaceFallback& o) const {
      const Job* j = s.find_job(o.job);
      return j ? job_message(*j) : o.reason;
    }
    RefText operator()(const CompactFinished& o) const {
      return "retention: jobs that finished at or before " + std::to_string(o.finished_before) + " left the server (" +
             std::to_string(s.compacted_jobs) + " compacted so far); the journal keeps their records";
    }
  };
  return std::visit(M{s}, r.op);
}

void push(ServerState& st, std::vector<Event>& events, Time at, std::string kind, std::string job, std::string node,
          RefText message) {
  std::string team;
  if (const Job* j = job.empty() ? nullptr : st.cluster.find_job(job)) {
    if (j->state == JobState::kRunning) {
      st.running.insert(j->id.index());
    } else {
      st.running.erase(j->id.index());
      st.replica_cpus.erase(j->id.index());
      st.pulls.erase(j->id.index());
      st.run_checks.erase(j->id.index());  // a run's checks end with it; the next admission begins anew
      st.in_place_waits.erase(j->id.index());
    }
    st.running_by_node.update(*j);
    team = st.cluster.teams[j->team.index()].spec.name;
  }
  events.push_back({++st.last_event, at, std::move(kind), std::move(job), std::move(node), std::move(message), std::move(team)});
}

// A preempt record's group goes with its event and into the job descriptions of the victim and, once per group
// (with the group's first victim), of the preemptor.
// A shrink (a resize record with a group) counts as one of its group's victims.
void note_preemption(ServerState& st, const Record& r, Event& e) {
  const auto* p = std::get_if<Preempt>(&r.op);
  const auto* rz = std::get_if<Resize>(&r.op);
  const std::optional<PreemptionGroup>* group = p ? &p->group : rz ? &rz->group : nullptr;
  if (!group || !*group) return;
  const std::string& victim = p ? p->job : rz->job;
  e.preemption = std::make_shared<const PreemptionGroup>(**group);
  auto remember = [&](const std::string& name) {
    const Job* j = st.cluster.find_job(name);
    if (!j) return;
    auto& seen = st.preemptions_of[j->id.index()];
    seen.push_back({r.at, e.preemption});
    if (seen.size() > ServerState::kPreemptionsKept) seen.pop_front();
  };
  remember(victim);
  if (!(*group)->victims.empty() && (*group)->victims.front().job == victim) remember((*group)->preemptor);
}

void add_history(NodeInfo& info, NodeChange c) {
  auto& history = info.history.edit();
  history.push_back(std::move(c));
  if (history.size() > NodeInfo::kHistoryKept) history.erase(history.begin());
}

// The accelerators a placement holds, or its replicas when it holds none: the unit of goodput.
int64_t slots_of(const std::vector<PodSetRecord>& placement) {
  int64_t accel = 0, replicas = 0;
  for (const auto& ps : placement) {
    accel += ps.per_replica.accelerators * static_cast<int64_t>(ps.replicas.size());
    replicas += static_cast<int64_t>(ps.replicas.size());
  }
  return accel > 0 ? accel : replicas;
}

// A run of `j` ended at `at` (it was Running before the record and is not now). Work since its last
// checkpoint is lost unless it succeeded or was cancelled; a failure is listed as a restart with its cause.
void account_stop(ServerState& st, const Job& j, Time at, int restarts_before, const std::string& cause, const std::string& node) {
  JobAccount& acc = st.accounts.edit(j.id.index());
  const int64_t run_s = std::max<int64_t>(0, at - j.started_at);
  const int64_t ci = j.spec.checkpoint_interval_s;
  const int64_t kept = ci > 0 ? run_s / ci * ci : run_s;
  const bool failure = j.restarts > restarts_before || j.state == JobState::kFailed;
  const bool keeps_all = j.state == JobState::kSucceeded || j.state == JobState::kCancelled;
  const int64_t lost = keeps_all ? 0 : run_s - kept;
  acc.held_s += run_s * acc.slots;
  acc.lost_s += lost * acc.slots;
  st.usage.stopped(j.id.index(), at, lost, failure ? UsageLoss::kFailure : UsageLoss::kPreemption);
  if (failure)
    acc.restarts.push_back(RestartInfo{at, restarts_before + j.preemptions, cause, node, run_s, lost});
}

// After a compaction: the server's own tables keep nothing of the jobs that left (core/model/state.h,
// compact_finished), so that they too follow the jobs kept rather than every job ever run. Each table is walked
// once; a compaction runs every few seconds at most (server/writer/retention.h).
void forget_compacted(ServerState& st) {
  const auto& jobs = st.cluster.jobs;
  auto gone = [&](uint32_t job) { return job < jobs.size() && jobs[job].compacted; };
  auto drop = [&](auto& table) {
    for (auto it = table.begin(); it != table.end();) it = gone(it->first) ? table.erase(it) : std::next(it);
  };
  st.accounts.erase_if([&](uint32_t job, const auto&) { return gone(job); });
  st.usage.forget_jobs(st.cluster);
  drop(st.log_rules_fired);
  drop(st.preemptions_of);
  drop(st.exits);
  drop(st.deferred_exits);
  st.waiting_since.erase_if([&](uint32_t job, const auto&) { return gone(job); });
  drop(st.run_checks);
  drop(st.in_place_waits);
  drop(st.check_retries);
  for (auto it = st.check_trying.begin(); it != st.check_trying.end();) it = gone(it->first.first) ? st.check_trying.erase(it) : std::next(it);
  for (auto& [name, info] : st.nodes) {
    // Only a node that loses an entry is edited: the others keep sharing theirs with the views.
    if (std::none_of(info.ranks_placed->begin(), info.ranks_placed->end(), [&](const auto& r) { return gone(r.first); }))
      continue;
    auto& ranks = info.ranks_placed.edit();
    for (auto it = ranks.begin(); it != ranks.end();) it = gone(it->first) ? ranks.erase(it) : std::next(it);
  }
}

// The server's tables for one record that the cluster has already taken.
// The server's tables for one record, by kind. No catch-all: a new kind of record does not compile until it says
// what it changes here, if anything.
struct Note {
  ServerState& st;
  const Record& r;

  void operator()(const AddNode& a) const {
    st.left_live_ms.erase(a.node.name);  // back under its name: its heartbeats say what runs there again
    NodeInfo& info = st.nodes[a.node.name];
    st.round_nodes_changed = true;
    info = NodeInfo{};
    if (!a.address.empty()) info.address = a.address;
    info.agent = a.agent;
    info.phase_since_ms = r.at * 1000;
    add_history(info, NodeChange{r.at, "", "Schedulable", a.agent ? "agent" : "admin", "joined the cluster"});
  }
  void operator()(const NodeHealthChange& h) const {
    NodeInfo& info = st.nodes[h.node];
    st.round_nodes_changed = true;
    info.timed_out = h.cause == HealthCause::kTimeout;
    if (h.cause == HealthCause::kAgent) info.agent = true;
    if (!h.address.empty()) info.address = h.address;
    const std::string from = info.history->empty() ? "" : info.history->back().to;
    info.cause = h.cause;
    info.reason = h.reason;
    info.phase_since_ms = r.at * 1000;
    info.fault_since_ms = 0;
    add_history(info, NodeChange{r.at, from, node_health_name(h.health), health_cause_name(h.cause), h.reason});
    if (!h.replaces.empty()) {
      st.retired[h.replaces] = h.node;
      info.replaces = h.replaces;
    }
  }
  void operator()(const RemoveNode& rn) const {
    if (auto it = st.nodes.find(rn.node); it != st.nodes.end() && it->second.agent && !it->second.timed_out && !it->second.fenced)
      st.left_live_ms[rn.node] = (r.at + 1) * 1000;
    st.nodes.erase(rn.node);
    st.round_nodes_changed = true;
  }
  void operator()(const RemoveTeam& rt) const { st.removed_teams.insert(rt.team); }
  void operator()(const UpsertTeam& ut) const { st.removed_teams.erase(ut.team.name); }
  void operator()(const Admit& ad) const {
    ++st.admissions_total;
    if (const Job* j = st.cluster.find_job(ad.job)) {
      st.observed.admitted(st.cluster, *j, ad.borrowing, r.at);
      JobAccount& acc = st.accounts.edit(j->id.index());
      acc.slots = slots_of(ad.placement);
      acc.run_since = r.at;
      acc.run_types = placement_types(j->placement);
      st.usage.started(st.cluster, *j, r.at,
                       ad.placement.empty() ? std::nullopt : std::optional<std::string>(ad.placement.front().instance_type));
      st.run_checks[j->id.index()] = RunChecks{attempt_of(*j), r.seq, {}};
      int rank = 0;
      for (const auto& ps : ad.placement)
        for (const auto& rep : ps.replicas) st.nodes[rep.node].ranks_placed.edit().insert({j->id.index(), rank++});
    }
  }
  void operator()(const Resize& rz) const {
    // A resize restarts the job on its new placement: the run at the old size ends here (its slot-seconds held,
    // and its work since the last checkpoint lost), and the ranks of the new run count at the new size.
    if (const Job* j = st.cluster.find_job(rz.job)) {
      JobAccount& acc = st.accounts.edit(j->id.index());
      const int64_t run_s = std::max<int64_t>(0, r.at - acc.run_since);
      const int64_t ci = j->spec.checkpoint_interval_s;
      const int64_t lost = run_s - (ci > 0 ? run_s / ci * ci : run_s);
      acc.held_s += run_s * acc.slots;
      acc.lost_s += lost * acc.slots;
      acc.slots = slots_of(rz.placement);
      acc.run_since = r.at;
      acc.run_types = placement_types(j->placement);
      // The cluster restarted the run at another size: what it lost counts as lost to preemption.
      st.usage.stopped(j->id.index(), r.at, lost, UsageLoss::kPreemption);
      st.usage.started(st.cluster, *j, r.at, std::nullopt);
      st.run_checks[j->id.index()] = RunChecks{attempt_of(*j), r.seq, {}};  // a new run: its checks are asked again
      int rank = 0;
      for (const auto& ps : rz.placement)
        for (const auto& rep : ps.replicas) st.nodes[rep.node].ranks_placed.edit().insert({j->id.index(), rank++});
    }
  }
  void operator()(const Preempt& pr) const {
    ++st.preemptions_total;
    // The victim's run has ended already (the cluster took the record first): its types are the account's.
    if (const Job* j = st.cluster.find_job(pr.job)) {
      const JobAccount* acc = st.accounts.find(j->id.index());
      st.observed.preempted(st.cluster, pr.rule, j->team, acc ? acc->run_types : std::vector<TypeId>{});
    }
  }
  void operator()(const CreateToken& ct) const {
    st.tokens.edit()[ct.token.id] = TokenInfo{ct.token, r.at, r.actor.token, false, 0};
    ++st.tokens_version;
  }
  void operator()(const RevokeToken& rv) const {
    if (auto it = st.tokens->find(rv.id); it != st.tokens->end() && !it->second.revoked) {
      TokenInfo& t = st.tokens.edit().at(rv.id);
      t.revoked = true;
      t.revoked_at = r.at;
    }
    ++st.tokens_version;
  }
  void operator()(const CreateWebhook& cw) const {
    st.webhooks[cw.webhook.id] = WebhookInfo{cw.webhook, r.at, r.actor.token};
    ++st.webhooks_version;
  }
  void operator()(const DeleteWebhook& dw) const {
    st.webhooks.erase(dw.id);
    ++st.webhooks_version;
  }
  void operator()(const PutAdmissionCheck& pc) const {
    auto it = st.admission_checks.find(pc.check.name);
    // Replacing a check keeps the record that first made it: the runs waiting on it wait on the new one.
    const uint64_t since = it == st.admission_checks.end() ? r.seq : it->second.since_seq;
    st.admission_checks[pc.check.name] = AdmissionCheckInfo{pc.check, r.at, r.actor.token, since};
    ++st.admission_checks_version;
  }
  void operator()(const DeleteAdmissionCheck& dc) const {
    st.admission_checks.erase(dc.name);
    for (auto it = st.check_trying.begin(); it != st.check_trying.end();)
      it = it->first.second == dc.name ? st.check_trying.erase(it) : std::next(it);
    ++st.admission_checks_version;
  }
  void operator()(const AdmissionCheckAnswered& a) const {
    const Job* j = st.cluster.find_job(a.job);
    if (!j) return;
    const uint32_t index = j->id.index();
    st.check_trying.erase({index, a.check});
    switch (a.answer) {
      case CheckAnswer::kReady:
        if (auto it = st.run_checks.find(index); it != st.run_checks.end() && it->second.attempt == a.attempt)
          it->second.ready.insert(a.check);
        break;
      case CheckAnswer::kRetry:
        ++st.check_retries[index];
        st.run_checks.erase(index);
        break;
      case CheckAnswer::kReject:
        st.run_checks.erase(index);
        break;
    }
    ++st.admission_checks_version;
  }
  void operator()(const CompactFinished&) const { forget_compacted(st); }
  void operator()(const Audit& au) const {
    st.audit.push_back(AuditEntry{r.seq, r.at, r.actor, au});
    if (st.audit.size() > ServerState::kAuditKept) st.audit.pop_front();
  }
  // What these change is the cluster's alone (store::apply_record), or the events apply() writes.
  void operator()(const SetPolicy&) const {}
  void operator()(const Cordon&) const {}
  void operator()(const Drain&) const {}
  void operator()(const Submit& sub) const {
    // The job's user (its token's user name); a job without one, by the token's id as before users existed.
    if (const Job* j = st.cluster.find_job(sub.job.name)) st.usage.submitted(*j, j->spec.user.empty() ? r.actor.token : j->spec.user);
  }
  void operator()(const Cancel&) const {}
  void operator()(const Finish&) const {}
  void operator()(const HoldJob&) const {}
  void operator()(const SetJobPriority&) const {}
  void operator()(const DeleteJob&) const {}
  void operator()(const CreatePlan&) const {}
  void operator()(const PlanStepRecord&) const {}
  void operator()(const DeletePlan&) const {}
  void operator()(const CreateReservation&) const {}
  void operator()(const ReservationStepRecord&) const {}
  void operator()(const DeleteReservation&) const {}
  void operator()(const Requeue&) const {}
  void operator()(const TimeLimitExceeded&) const {}
  void operator()(const LocalityWaitBegan&) const {}
  void operator()(const DependencyNeverHolds&) const {}
  void operator()(const SetNetworkLayers&) const {}
  void operator()(const InPlaceFallback&) const {}
  // The moved ranks are placed on their new nodes (`allot describe node`, the node's ranks).
  // The moved ranks are awaited from the record's time (server/lifecycle/in_place_recovery.h).
  void operator()(const RecoverInPlace& o) const {
    const Job* j = st.cluster.find_job(o.job);
    if (!j) return;
    InPlaceWait& wait = st.in_place_waits[j->id.index()];
    wait = InPlaceWait{o.epoch, r.at * 1000, {}};
    for (const auto& m : o.moves) {
      int rank = 0;
      for (int p = 0; p < m.pod_set && p < static_cast<int>(j->placement.pod_sets.size()); ++p)
        rank += static_cast<int>(j->placement.pod_sets[p].replicas.size());
      st.nodes[m.to.node].ranks_placed.edit().insert({j->id.index(), rank + m.index});
      wait.ranks.insert(rank + m.index);
    }
  }
  void operator()(const RemoteCopyStep&) const {}  // the job's account of its copies is the cluster's (Job::remote)
  void operator()(const LogRuleFired& o) const {
    if (const Job* j = st.cluster.find_job(o.job)) st.log_rules_fired[j->id.index()] = LogRuleSeen{o.attempt, r.at, o.firing};
  }
  // The nodes that did not start their replica in time (`allot describe node`): rebuilt on replay.
  void operator()(const StartTimeout& o) const {
    for (const auto& n : o.nodes)
      if (auto it = st.nodes.find(n); it != st.nodes.end()) ++it->second.start_timeouts;
  }
};

void note(ServerState& st, const Record& r) {
  st.last_seq = r.seq;
  ++st.version;
  // Usage accrues up to this record at the rates in force before it (usage_ledger.h): the cluster may already
  // have taken it, but the rates are the ledger's own, read after the previous record.
  st.usage.accrue_to(r.at);
  std::visit(Note{st, r}, r.op);
}

}  // namespace

namespace {
// Every record kind, visited exhaustively: a new kind does not compile until it says who may read its event.
// Token records name token ids and the teams they act for; the audit trail is the admins' own.
struct AudienceOf {
  EventAudience operator()(const store::CreateToken&) const { return EventAudience::kWholeClusterReaders; }
  EventAudience operator()(const store::RevokeToken&) const { return EventAudience::kWholeClusterReaders; }
  EventAudience operator()(const store::Audit&) const { return EventAudience::kWholeClusterReaders; }
  // Webhook records name ids and scopes other teams need not read (never a URL or a secret).
  EventAudience operator()(const store::CreateWebhook&) const { return EventAudience::kWholeClusterReaders; }
  EventAudience operator()(const store::DeleteWebhook&) const { return EventAudience::kWholeClusterReaders; }
  // A check's name, kind and scope (never its URL): what the checks' list shows a member of the teams it applies to.
  EventAudience operator()(const store::PutAdmissionCheck&) const { return EventAudience::kWholeClusterReaders; }
  EventAudience operator()(const store::DeleteAdmissionCheck&) const { return EventAudience::kWholeClusterReaders; }
  // About the job: its team's members read it.
  EventAudience operator()(const store::AdmissionCheckAnswered&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::SetPolicy&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::UpsertTeam&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::RemoveTeam&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::AddNode&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::RemoveNode&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::NodeHealthChange&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Cordon&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Drain&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Submit&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Cancel&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Finish&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Admit&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Preempt&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Resize&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::HoldJob&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::SetJobPriority&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::DeleteJob&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::CreatePlan&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::PlanStepRecord&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::DeletePlan&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::CreateReservation&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::ReservationStepRecord&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::DeleteReservation&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::CompactFinished&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::Requeue&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::TimeLimitExceeded&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::LocalityWaitBegan&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::StartTimeout&) const { return EventAudience::kEveryReader; }
  // Its message is the job's reason, without the matching line (docs/security.md, "Logs").
  EventAudience operator()(const store::LogRuleFired&) const { return EventAudience::kEveryReader; }
  // Names only jobs of the job's own team (a job may depend on no other team's).
  EventAudience operator()(const store::DependencyNeverHolds&) const { return EventAudience::kEveryReader; }
  // Node names and network node ids, as GET /v1/nodes shows every reader.
  EventAudience operator()(const store::SetNetworkLayers&) const { return EventAudience::kEveryReader; }
  // About the job and the node it lost, as a node failure's events are.
  EventAudience operator()(const store::RecoverInPlace&) const { return EventAudience::kEveryReader; }
  EventAudience operator()(const store::InPlaceFallback&) const { return EventAudience::kEveryReader; }
  // About the job (worker names are the manager's configuration, which every reader of the job may know).
  EventAudience operator()(const store::RemoteCopyStep&) const { return EventAudience::kEveryReader; }
};
}  // namespace

EventAudience event_audience(const store::Op& op) { return std::visit(AudienceOf{}, op); }

const char* event_audience_name(EventAudience a) {
  switch (a) {
    case EventAudience::kEveryReader: return "every-reader";
    case EventAudience::kWholeClusterReaders: return "whole-cluster-readers";
  }
  return "every-reader";
}

std::optional<EventAudience> parse_event_audience(std::string_view name) {
  for (EventAudience a : {EventAudience::kEveryReader, EventAudience::kWholeClusterReaders})
    if (name == event_audience_name(a)) return a;
  return std::nullopt;
}

void LatencyHistogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBuckets && seconds > kBounds[i]) ++i;
  ++counts[i];
  sum += seconds;
  ++count;
}

const Node* node_of(const ClusterState& cluster, const std::string& name, NodeInfo& info) {
  // Names are unique among the nodes not removed, so a live node of this name at the hint is the one.
  if (info.node_hint < cluster.nodes.size()) {
    const Node& n = cluster.nodes[info.node_hint];
    if (!n.removed && n.name == name) return &n;
  }
  const Node* n = cluster.find_node(name);
  if (n) info.node_hint = n->id.index();
  return n;
}

int joins_of(const TokenTable& tokens, const std::string& join_id) {
  int n = 0;
  for (const auto& [id, t] : tokens) n += t.token.role == auth::Role::kAgent && t.token.joined_with == join_id;
  return n;
}

std::shared_ptr<const ServerState> view_of(ServerState& live, const ServerState* previous, JobTable::ViewCost* cost) {
  // The job and node tables are moved aside while the rest is copied (a move keeps their buffers, so nothing that
  // points into them changes), then put back whatever happens; the view's tables are taken from them afterwards,
  // sharing what did not change since `previous` (job_table.h, chunk_table.h).
  JobTable jobs = std::move(live.cluster.jobs);
  ChunkTable<Node> nodes = std::move(live.cluster.nodes);
  live.cluster.jobs = JobTable();
  live.cluster.nodes = ChunkTable<Node>();
  std::shared_ptr<ServerState> view;
  try {
    view = std::make_shared<ServerState>(live);
  } catch (...) {
    live.cluster.jobs = std::move(jobs);
    live.cluster.nodes = std::move(nodes);
    throw;
  }
  live.cluster.jobs = std::move(jobs);
  live.cluster.nodes = std::move(nodes);
  view->cluster.jobs = JobTable::view_of(live.cluster.jobs, previous ? &previous->cluster.jobs : nullptr, cost);
  view->cluster.nodes = ChunkTable<Node>::view_of(live.cluster.nodes, previous ? &previous->cluster.nodes : nullptr);
  return view;
}

Status apply(ServerState& st, const Record& r, std::vector<Event>& events) {
  const std::string node = std::visit(NodeOf{}, r.op);
  // Jobs a node operation may stop: after it, each one that changed state gets its own event.
  std::vector<JobId> before;
  std::vector<JobState> states;
  std::vector<int> restarts;
  if (!node.empty() && !std::holds_alternative<AddNode>(r.op)) before = running_on(st.cluster, node);
  // A plan's end stops the jobs on its nodes and removes the nodes.
  const std::vector<std::string> plan_nodes = plan_nodes_of(st.cluster, r.op);
  for (const auto& n : plan_nodes)
    for (JobId id : running_on(st.cluster, n))
      if (std::find(before.begin(), before.end(), id) == before.end()) before.push_back(id);
  // A reservation's start requeues the jobs it does not admit from its nodes.
  for (JobId id : reservation_jobs_of(st.cluster, r.op))
    if (std::find(before.begin(), before.end(), id) == before.end()) before.push_back(id);
  for (JobId id : before) states.push_back(st.cluster.jobs[id.index()].state), restarts.push_back(st.cluster.jobs[id.index()].restarts);
  // The job a job operation names, if it runs: a run that ends is accounted for (goodput, restarts).
  const std::string job_name = job_of(r.op);
  const Job* named = job_name.empty() ? nullptr : st.cluster.find_job(job_name);
  const bool named_running = named && named->state == JobState::kRunning;
  const int named_restarts = named ? named->restarts : 0;
  auto status = store::apply_record(st.cluster, r);
  if (!status) return status;
  note(st, r);
  for (const auto& n : plan_nodes)
    if (!st.cluster.find_node(n) && st.nodes.erase(n)) st.round_nodes_changed = true;
  if (named_running) {
    const Job& j = *st.cluster.find_job(job_name);
    if (j.state != JobState::kRunning) {
      const auto* fin = std::get_if<Finish>(&r.op);
      account_stop(st, j, r.at, named_restarts, fin ? fin->reason : j.reason.str(), fin ? fin->node : std::string());
    }
  }
  // An audit record changes nothing the rates follow, and one comes with every request that asks for a change.
  if (!std::holds_alternative<Audit>(r.op)) st.usage.refresh_rates(st.cluster);
  for (size_t i = 0; i < before.size(); ++i) {
    const Job& j = st.cluster.jobs[before[i].index()];
    if (j.state == JobState::kRunning) continue;
    if (named_running && j.spec.name == job_name) continue;  // accounted for above (a requeue names its job and node)
    std::string cause = "node " + node;
    if (node.empty())  // a plan's end or a reservation's start: the record says which
      cause = message_of(st, r).str();
    else if (const auto* h = std::get_if<NodeHealthChange>(&r.op))
      cause += " became " + std::string(node_health_name(h->health)) + (h->reason.empty() ? "" : ": " + h->reason);
    else
      cause += ": " + message_of(st, r).str();
    account_stop(st, j, r.at, restarts[i], cause, node);
  }
  // The audit trail has its own endpoint; the event stream is for what happened to the cluster.
  if (std::holds_alternative<Audit>(r.op)) return ok_status();
  push(st, events, r.at, op_name(r.op), job_of(r.op), node, message_of(st, r));
  note_preemption(st, r, events.back());
  events.back().audience = event_audience(r.op);
  events.back().notice = notice_of(r.op, st.cluster);
  for (size_t i = 0; i < before.size(); ++i) {
    const Job& j = st.cluster.jobs[before[i].index()];
    if (j.state == states[i]) continue;
    push(st, events, r.at, "job", j.spec.name, node, job_message(j));
    events.back().notice = notice_of_consequence(j.state);
  }
  return ok_status();
}

void note_decision(ServerState& st, const Record& r, std::vector<Event>& events) {
  note(st, r);
  // A preemption ended a run (the scheduler applied it already; started_at still names that run).
  if (const auto* p = std::get_if<Preempt>(&r.op))
    if (const Job* j = st.cluster.find_job(p->job)) account_stop(st, *j, r.at, j->restarts, p->reason.str(), "");
  st.usage.refresh_rates(st.cluster);
  push(st, events, r.at, op_name(r.op), job_of(r.op), "", message_of(st, r));
  note_preemption(st, r, events.back());
  events.back().audience = event_audience(r.op);
  events.back().notice = notice_of(r.op, st.cluster);
}

}  // namespace allot::server
