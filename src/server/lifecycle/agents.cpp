#include "server/lifecycle/agents.h"

#include <map>
#include <set>

#include "config/container_rules.h"
#include "config/log_rules_json.h"
#include "server/api/api.h"
#include "server/lifecycle/node_lifecycle.h"
#include "server/lifecycle/per_run.h"
#include "server/lifecycle/replica_ranks.h"

namespace allot::server {
using nlohmann::json;

json container_assignment(const ClusterState& s, const Job& j, const PodSetPlacement& ps) {
  const ContainerSpec& c = j.spec.container;
  const TeamContainerSettings& team = s.teams[j.team.index()].spec.containers;
  json volumes = json::array();
  for (const VolumeSpec& v : c.volumes) volumes.push_back({{"host_path", v.host_path}, {"path", v.path}, {"read_only", v.read_only}});
  json caps = json::array();
  for (Capability cap : team.capabilities) caps.push_back(capability_name(cap));
  json out = {{"image", c.image},
              {"pull_policy", pull_policy_name(c.pull_policy)},
              // The spec's size, or a quarter of the replica's memory request (config/container_rules.h).
              {"shm_mib", c.shm_mib ? *c.shm_mib : config::default_shm_mib(ps.per_replica.memory_mib)},
              {"volumes", volumes},
              {"cap_add", caps}};
  if (!team.registry_auth_file.empty()) out["auth_file"] = team.registry_auth_file;
  if (!c.args.empty()) out["args"] = c.args;
  return out;
}

// The job's env, plus JOB_COMPLETION_INDEX (the replica's index in the job, its RANK) for a job that asks for it
// (a Kubernetes Job with completionMode: Indexed). A task of a job array (core/model/array.h) gets its index instead, in
// ALLOT_ARRAY_INDEX and JOB_COMPLETION_INDEX, and the array's task count in ALLOT_ARRAY_COUNT, in every replica (as
// every container of an Indexed Job's pod sees its completion index). A manifest's own JOB_COMPLETION_INDEX is kept.
static std::map<std::string, std::string> replica_env(const Job& j, int rank) {
  if (!j.spec.completion_index && !j.spec.array) return j.spec.env;
  std::map<std::string, std::string> env = j.spec.env;
  if (j.spec.array && j.spec.array->index) {
    const std::string index = std::to_string(*j.spec.array->index);
    env["ALLOT_ARRAY_INDEX"] = index;
    env["ALLOT_ARRAY_COUNT"] = std::to_string(j.spec.array->count);
    env.try_emplace("JOB_COMPLETION_INDEX", index);
    return env;
  }
  env.try_emplace("JOB_COMPLETION_INDEX", std::to_string(rank));
  return env;
}

json replica_assignment(const ServerState& st, const ServerOptions& options, const Job& j, int rank, int local_rank,
                        const PodSetPlacement& ps, const ReplicaBinding& r) {
  const ClusterState& s = st.cluster;
  const InstanceType& type = s.catalog.at(ps.type);
  std::string master_addr = "127.0.0.1";
  if (!j.placement.pod_sets.empty() && !j.placement.pod_sets[0].replicas.empty()) {
    const Node& master = s.nodes[j.placement.pod_sets[0].replicas[0].node.index()];
    if (auto it = st.nodes.find(master.name); it != st.nodes.end()) master_addr = it->second.address;
  }
  json a = {{"job", j.spec.name},
            {"team", j.spec.team},
            {"rank", rank},
            {"world_size", world_size(j)},
            {"local_rank", local_rank},
            {"master_addr", master_addr},
            {"master_port", master_port(options, j.id, attempt_of(j), j.membership_epoch)},
            {"command", j.spec.command},
            {"env", replica_env(j, rank)},
            {"accelerators", r.accelerators},
            {"accelerator_kind", accelerator_kind_name(type.accelerator_kind)},
            {"cpus", r.cpus},
            {"attempt", attempt_of(j)},
            // ALLOT_RESTART_COUNT: restarts after failures, and resizes (each restarts from the checkpoint).
            {"restart_count", j.restarts + static_cast<int>(j.resizes.size())},
            {"checkpoint_root", options.checkpoint_dir},
            // The request per replica, which the agent turns into the replica's cgroup limits.
            {"vcpu_milli", ps.per_replica.vcpu_milli},
            {"memory_mib", ps.per_replica.memory_mib}};
  if (type.accelerator_kind == AcceleratorKind::kNeuron)
    a["neuron_cores_per_accelerator"] = type.neuron_cores_per_accelerator;
  if (!j.spec.container.empty()) a["container"] = container_assignment(s, j, ps);
  // Rules the agent matches on the replica's output (core/lifecycle/log_rules.h); absent: none.
  if (!j.spec.log_rules.empty()) a["log_rules"] = config::log_rules_json(j.spec.log_rules);
  // ALLOT_ATTEMPT, where it is not `attempt` (a job numbered after folded names: server_state.h, attempt_shown).
  if (j.attempt_folded != 0) a["attempt_shown"] = attempt_shown(j);
  // Recovery in place (core/lifecycle/in_place.h): the run's membership, which the agent writes to membership.json and, when
  // the epoch changes under a running replica, signals (docs/resiliency.md, "Recovery in place").
  if (j.spec.recovery == Recovery::kInPlace) {
    json ranks = json::array();
    for_each_replica(j, [&](int rank_of, const PodSetPlacement&, const ReplicaBinding& b) {
      const std::string& node = s.nodes[b.node.index()].name;
      auto it = st.nodes.find(node);
      ranks.push_back({{"rank", rank_of}, {"node", node}, {"address", it == st.nodes.end() ? "" : it->second.address}});
    });
    json m = {{"epoch", j.membership_epoch}, {"ranks", std::move(ranks)}};
    if (!j.spec.membership_signal.empty()) m["signal"] = j.spec.membership_signal;
    a["membership"] = std::move(m);
  }
  return a;
}

namespace {

// The running job a replica report is about, when it is the job's current attempt and the rank is placed on
// `node`: an agent reports only for its own node, and a late report of an earlier attempt changes nothing.
const Job* reported_job(const Txn& txn, const Node& node, const ReplicaReport& rep) {
  const Job* j = txn.cluster().find_job(rep.job);
  if (!j || j->state != JobState::kRunning) return nullptr;
  if (rep.attempt && *rep.attempt != attempt_of(*j)) return nullptr;
  bool here = false;
  for_each_replica(*j, [&](int rank, const PodSetPlacement&, const ReplicaBinding& r) { here |= rank == rep.rank && r.node == node.id; });
  return here ? j : nullptr;
}

std::optional<ReplicaState> replica_state_named(const std::string& name) {
  for (ReplicaState s : {ReplicaState::kRunning, ReplicaState::kPulling, ReplicaState::kExited, ReplicaState::kLost,
                         ReplicaState::kNotStarted})
    if (name == replica_state_name(s)) return s;
  return std::nullopt;
}

// {"reason": "image_pull", "message": "<image>: <answer>"}. The message comes from outside (a registry): kept to
// kMaxReplicaFailureMessage bytes with everything outside printable ASCII escaped, so it cannot forge lines in
// a terminal or a log. A longer message is cut, not refused: refusing the heartbeat would make the node look
// silent, and a registry's long answer is no fault of the node's.
Result<ReplicaFailure> parse_failure(const json& f, const std::string& where) {
  if (!f.is_object()) return Error::invalid(where + " must be an object {\"reason\", \"message\"}");
  if (auto st = only_keys(f, {"reason", "message", "rule", "line", "memory_limit_mib"}, where); !st) return st.error();
  if (!f.contains("reason") || !f["reason"].is_string()) return Error::invalid(where + ": reason (a string) is required");
  std::string allowed;
  for (view::ReplicaFailureReason r : view::kReplicaFailureReasons) allowed += (allowed.empty() ? "" : ", ") + std::string(view::replica_failure_reason_name(r));
  auto reason = view::replica_failure_reason_named(f["reason"].get_ref<const std::string&>());
  if (!reason) return Error::invalid(where + ": reason '" + printable(f["reason"].get_ref<const std::string&>()) + "' is not one of " + allowed);
  ReplicaFailure out{*reason, "", std::nullopt, 0};
  if (f.contains("message")) {
    if (!f["message"].is_string()) return Error::invalid(where + ": message must be a string");
    out.message = printable(f["message"].get_ref<const std::string&>(), view::kMaxReplicaFailureMessage);
  }
  if (*reason == view::ReplicaFailureReason::kLogRule) {
    // {"rule": {"kind": hung|restart|fail, "index": i}, "line": "..."}: which rule, as data (core/lifecycle/log_rules.h).
    const std::string rule_where = where + ".rule";
    if (!f.contains("rule") || !f["rule"].is_object()) return Error::invalid(rule_where + " (an object {\"kind\", \"index\"}) is required with reason log_rule");
    const json& r = f["rule"];
    if (auto st = only_keys(r, {"kind", "index"}, rule_where); !st) return st.error();
    auto kind = r.contains("kind") && r["kind"].is_string() ? parse_log_rule_kind(r["kind"].get_ref<const std::string&>()) : std::nullopt;
    if (!kind) return Error::invalid(rule_where + ".kind must be hung, restart or fail");
    if (!r.contains("index") || !r["index"].is_number_integer() || r["index"].get<int64_t>() < 0 ||
        r["index"].get<int64_t>() >= static_cast<int64_t>(kMaxLogRulePatterns))
      return Error::invalid(rule_where + ".index must be an integer 0.." + std::to_string(kMaxLogRulePatterns - 1));
    LogRuleFiring firing{*kind, static_cast<int>(r["index"].get<int64_t>()), 0, ""};
    if (f.contains("line")) {
      if (!f["line"].is_string()) return Error::invalid(where + ": line must be a string");
      // The agent sends it escaped already (printable); bounded again here, a line longer than that is cut.
      firing.line = printable(f["line"].get_ref<const std::string&>(), kMaxLogRuleLineShown);
    }
    out.log_rule = std::move(firing);
  } else if (f.contains("rule") || f.contains("line")) {
    return Error::invalid(where + ": rule and line go only with reason log_rule");
  }
  if (*reason == view::ReplicaFailureReason::kOomKilled) {
    // {"memory_limit_mib": N}: the limit the replica went past, as data (agent/cgroups.h).
    const json* m = f.contains("memory_limit_mib") ? &f["memory_limit_mib"] : nullptr;
    if (!m || !m->is_number_integer() || m->get<int64_t>() < 1 || m->get<int64_t>() > (int64_t{1} << 40))
      return Error::invalid(where + ".memory_limit_mib (an integer 1.." + std::to_string(int64_t{1} << 40) + ") is required with reason oom_killed");
    out.memory_limit_mib = m->get<int64_t>();
  } else if (f.contains("memory_limit_mib")) {
    return Error::invalid(where + ": memory_limit_mib goes only with reason oom_killed");
  }
  return out;
}

// The reason a failed run shows (`allot describe`, the restart's cause, the job's final reason).
std::string failure_reason_text(const ReplicaReport& rep) {
  if (rep.failure) {
    switch (rep.failure->reason) {
      case view::ReplicaFailureReason::kImagePull: return "image pull: " + rep.failure->message;
      case view::ReplicaFailureReason::kLogRule: break;  // ended through fire_log_rule (apply_exits), not this text
      case view::ReplicaFailureReason::kFenced: break;   // apply_exits: requeued, or an exit with its code
      case view::ReplicaFailureReason::kOomKilled:
        return "OOMKilled: replica " + std::to_string(rep.rank) + " used more than its memory limit of " +
               std::to_string(rep.failure->memory_limit_mib) + " MiB (per_replica memory) and the kernel's out-of-memory killer ended it";
    }
  }
  if (rep.state == ReplicaState::kLost)
    return "replica " + std::to_string(rep.rank) + " was lost: it ended with its agent, which restarted (exit code unknown)";
  return "replica " + std::to_string(rep.rank) + " exited with code " + std::to_string(rep.exit_code);
}

}  // namespace

const char* replica_state_name(ReplicaState s) {
  switch (s) {
    case ReplicaState::kRunning: return "running";
    case ReplicaState::kPulling: return "pulling";
    case ReplicaState::kExited: return "exited";
    case ReplicaState::kLost: return "lost";
    case ReplicaState::kNotStarted: return "not_started";
  }
  return "?";
}

Result<std::vector<ReplicaReport>> parse_heartbeat(const json& body) {
  if (auto st = only_keys(body, {"replicas"}, "heartbeat"); !st) return st.error();
  std::vector<ReplicaReport> out;
  if (!body.contains("replicas")) return out;
  const json& list = body["replicas"];
  if (!list.is_array()) return Error::invalid("heartbeat: replicas must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& r = list[i];
    const std::string where = "heartbeat: replicas[" + std::to_string(i) + "]";
    if (!r.is_object()) return Error::invalid(where + " must be an object");
    if (auto st = only_keys(r, {"job", "rank", "state", "exit_code", "attempt", "cpus", "failure", "cause", "port"}, where); !st) return st.error();
    ReplicaReport rep;
    if (!r.contains("job") || !r["job"].is_string()) return Error::invalid(where + ": job (a name) is required");
    rep.job = r["job"].get<std::string>();
    if (!r.contains("rank") || !r["rank"].is_number_integer() || r["rank"].get<int64_t>() < 0 || r["rank"].get<int64_t>() > 1'000'000)
      return Error::invalid(where + ": rank must be an integer 0..1000000");
    rep.rank = r["rank"].get<int>();
    // Not r.value("state", ""): that throws on a state of another type (a number), where the answer is this error.
    const std::string state = r.contains("state") && r["state"].is_string() ? r["state"].get<std::string>() : "";
    auto named = replica_state_named(state);
    if (!named) return Error::invalid(where + ": state must be running, pulling, exited, lost or not_started");
    rep.state = *named;
    if (rep.state == ReplicaState::kNotStarted)
      if (auto st = parse_not_started(r, where, rep); !st) return st.error();
    if (r.contains("failure")) {
      if (rep.state != ReplicaState::kExited) return Error::invalid(where + ": only an exited replica may carry a failure");
      auto failure = parse_failure(r["failure"], where + ".failure");
      if (!failure) return failure.error();
      rep.failure = std::move(*failure);
      // Fencing stops a replica of the job's as any stop does: its exit code is what it exited with.
      if (rep.failure->reason == view::ReplicaFailureReason::kFenced && (!r.contains("exit_code") || !r["exit_code"].is_number_integer()))
        return Error::invalid(where + ": an exit with failure fenced needs its exit_code (an integer)");
    }
    if (rep.state == ReplicaState::kExited && !rep.failure) {
      if (!r.contains("exit_code") || !r["exit_code"].is_number_integer())
        return Error::invalid(where + ": an exited replica needs its exit_code (an integer) or a failure");
      rep.exit_code = static_cast<int>(r["exit_code"].get<int64_t>());
    } else if (rep.state == ReplicaState::kExited && r.contains("exit_code")) {
      if (!r["exit_code"].is_number_integer()) return Error::invalid(where + ": exit_code must be an integer");
      rep.exit_code = static_cast<int>(r["exit_code"].get<int64_t>());
    }
    if (r.contains("attempt")) {
      if (!r["attempt"].is_number_integer()) return Error::invalid(where + ": attempt must be an integer");
      rep.attempt = static_cast<int>(r["attempt"].get<int64_t>());
    }
    if (r.contains("cpus")) {
      // A Linux CPU list ("0-3,8"), as the agent formats it; bounded so a report cannot grow the state.
      const json& c = r["cpus"];
      const bool ok = c.is_string() && c.get_ref<const std::string&>().size() <= 4096 &&
                      c.get_ref<const std::string&>().find_first_not_of("0123456789,-") == std::string::npos;
      if (!ok) return Error::invalid(where + ": cpus must be a CPU list such as \"0-3,8\" (digits, ',' and '-'; at most 4096 characters)");
      rep.cpus = c.get<std::string>();
    }
    out.push_back(std::move(rep));
  }
  return out;
}

namespace {
// Whether the server itself could not hear its agents within the last failure timeout (node_silence.h:
// ServerState::hearing_since_ms, the end of a stall, of refused connections or of a disruption).
bool server_was_deaf(const Txn& txn, const ServerOptions& options) {
  const int64_t since = txn.view().hearing_since_ms;
  return since > 0 && txn.now_ms() - since <= options.heartbeat_timeout.count();
}
}  // namespace

void apply_exits(Txn& txn, const std::string& node_name, const std::vector<ReplicaReport>& reports, const ServerOptions& options) {
  for (const ReplicaReport& given : reports) {
    if (!given.exited()) continue;
    const Node* node = txn.cluster().find_node(node_name);
    const Job* j = node ? reported_job(txn, *node, given) : nullptr;
    if (!j) continue;
    if (given.port_in_use) {
      if (given.rank == 0) requeue_for_port(txn, *j, node_name, options, given.port_in_use);
      continue;
    }
    // The agent stopped the replica because the server did not answer it (fencing). When the server itself could
    // not hear within the last failure timeout, the silence was the server's: the run is requeued without using a
    // retry. Otherwise the silence was the node's: an exit like any other, as before agents said so.
    const bool fenced = given.failure && given.failure->reason == view::ReplicaFailureReason::kFenced;
    if (fenced && server_was_deaf(txn, options)) {
      txn.state().exits.erase(j->id.index());
      (void)txn.apply(store::Requeue{j->spec.name, node_name, 0,
                                     "the agent of node " + node_name + " stopped replica " + std::to_string(given.rank) +
                                         " (fencing: " + given.failure->message + ") while the server could not hear its agents; requeued without using a retry",
                                     store::RequeueCause::kServerDeaf});
      continue;
    }
    ReplicaReport unfenced;
    if (fenced) {
      unfenced = given;
      unfenced.failure.reset();
    }
    const ReplicaReport& rep = fenced ? unfenced : given;
    const int attempt = attempt_of(*j);
    ExitTrack& track = run_entry(txn.state().exits, j->id.index(), attempt);
    const std::string name = j->spec.name;
    const int world = world_size(*j);
    if (rep.failure && rep.failure->log_rule) {
      // A rule on the job's output fired on this replica: the rule decides (a retry, or Failed without one), charged
      // to the job, never to the node; the record keeps which rule and the line.
      LogRuleFiring firing = *rep.failure->log_rule;
      firing.rank = rep.rank;
      if (log_rule_pattern(j->spec.log_rules, firing.kind, firing.index)) {
        txn.state().exits.erase(j->id.index());
        (void)txn.apply(store::LogRuleFired{name, attempt, std::move(firing)});
        continue;
      }
      // A rule the job does not declare (an agent out of step with it): an ordinary failure of the replica.
    }
    if (rep.failure || rep.state == ReplicaState::kLost || rep.exit_code != 0) {
      const std::string reason = failure_reason_text(rep);
      // One fault, one restart: a peer of a multi-node job dies of its partner's node first. Hold the exit
      // until a failing peer node would have shown itself (node_lifecycle.h settles it). A failure the agent
      // names is the job's whatever the peers do (an image that cannot be pulled): it fails the run at once,
      // charged to the job's retries, never to a node.
      if (!rep.failure && hold_exit(txn, *j, node_name, reason)) continue;
      txn.state().exits.erase(j->id.index());
      (void)txn.apply(store::Finish{name, false, reason});
    } else if (track.succeeded.insert(rep.rank).second && static_cast<int>(track.succeeded.size()) == world) {
      txn.state().exits.erase(j->id.index());
      (void)txn.apply(store::Finish{name, true, "all " + std::to_string(world) + " replicas exited with code 0"});
    }
  }
}

void note_pulls(Txn& txn, const std::string& node_name, const std::vector<ReplicaReport>& reports) {
  const Node* node = txn.cluster().find_node(node_name);
  if (!node) return;
  for (const ReplicaReport& rep : reports) {
    const Job* j = reported_job(txn, *node, rep);
    if (!j) continue;
    const int attempt = attempt_of(*j);
    if (rep.state != ReplicaState::kPulling) {
      // Started, ended or lost: no longer pulling.
      if (auto it = txn.state().pulls.find(j->id.index()); it != txn.state().pulls.end() && it->second.attempt == attempt)
        it->second.pulling.erase({node_name, rep.rank});
      continue;
    }
    ImagePulls& p = run_entry(txn.state().pulls, j->id.index(), attempt);
    p.pulling.insert({node_name, rep.rank});
    if (!p.noted) {
      p.noted = true;
      txn.note("pulling", node_name, "pulling image " + j->spec.container.image + " on node " + node_name + " (attempt " +
                                         std::to_string(attempt_shown(*j)) + ")", j->spec.name);
    }
  }
}

std::vector<std::string> pulling_nodes(const ServerState& st, const Job& j) {
  std::vector<std::string> out;
  const ImagePulls* p = find_run(st.pulls, j.id.index(), attempt_of(j));
  if (j.state != JobState::kRunning || !p) return out;
  for (const auto& [node, rank] : p->pulling)
    if (out.empty() || out.back() != node) out.push_back(node);
  return out;
}

void note_starts(Txn& txn, const std::string& node_name, const std::vector<ReplicaReport>& reports) {
  if (txn.cluster().policy.start_timeout_s <= 0) return;
  const Node* node = txn.cluster().find_node(node_name);
  if (!node) return;
  for (const ReplicaReport& rep : reports) {
    if (rep.state == ReplicaState::kPulling || rep.state == ReplicaState::kNotStarted) continue;
    const Job* j = reported_job(txn, *node, rep);
    if (!j) continue;
    run_entry(txn.state().starts, j->id.index(), attempt_of(*j)).ranks.insert(rep.rank);
  }
}

void note_replica_cpus(Txn& txn, const std::string& node_name, const std::vector<ReplicaReport>& reports) {
  const Node* node = txn.cluster().find_node(node_name);
  if (!node) return;
  for (const ReplicaReport& rep : reports) {
    if (rep.state != ReplicaState::kRunning || rep.cpus.empty()) continue;
    const Job* j = reported_job(txn, *node, rep);
    if (!j) continue;
    run_entry(txn.state().replica_cpus, j->id.index(), attempt_of(*j)).by_rank[rep.rank] = rep.cpus;
  }
}

}  // namespace allot::server
