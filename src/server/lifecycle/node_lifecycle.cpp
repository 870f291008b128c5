#include "server/lifecycle/node_lifecycle.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "auth/token.h"
#include "server/api/api.h"
#include "server/lifecycle/in_place_recovery.h"
#include "server/lifecycle/node_silence.h"

namespace allot::server {
namespace {

using nlohmann::json;
using store::HealthCause;

// How long an abnormal exit waits at most for its node's checks (an agent whose checks hang): then it is judged
// with what is known.
constexpr int64_t kExitJudgingLimitMs = 120'000;

void change(Txn& txn, const std::string& node, NodeHealth health, HealthCause cause, const std::string& reason,
            const std::string& replaces = "") {
  AsServer as(txn);  // health changes it decides and tokens for replacements name the server
  // Jobs with recovery: in_place move their replicas off the node first (in_place_recovery.h).
  if (health != NodeHealth::kSchedulable) recover_in_place_from(txn, node);
  spdlog::info("node {}: {} ({})", node, node_health_name(health), reason);
  auto st = txn.apply(store::NodeHealthChange{node, health, cause, "", reason, replaces});
  if (!st) spdlog::error("node {}: {}", node, st.error().message);
}

std::string failed_checks(const std::vector<NodeCheck>& checks, bool* replace) {
  std::string out;
  for (const NodeCheck& c : checks) {
    if (c.status != "failed") continue;
    out += (out.empty() ? "" : "; ") + std::string("check ") + c.name + " failed: " + c.detail;
    if (replace && c.on_failure == "replace") *replace = true;
  }
  return out;
}

// Every configured check has a result of this boot and none failed.
bool all_passed(const NodeInfo& info) {
  if (info.checks->size() < info.checks_configured) return false;
  return std::none_of(info.checks->begin(), info.checks->end(), [](const NodeCheck& c) { return c.status == "failed"; });
}

void set_suspect(Txn& txn, const std::string& node, NodeInfo& info, bool suspect, const std::string& why, bool& changed) {
  if (info.suspect == suspect) return;
  info.suspect = suspect;
  txn.state().round_nodes_changed = true;
  info.suspect_reason = suspect ? why : "";
  (void)set_node_suspect(txn.state().cluster, node, suspect);
  ++txn.state().version;
  changed = true;
}

}  // namespace

Result<HealthReport> parse_health_report(const json& h) {
  if (!h.is_object()) return Error::invalid("heartbeat: health must be an object");
  if (auto st = only_keys(h, {"checks", "configured", "boot", "deep_check", "exit_checks_running", "limits_enforced"}, "heartbeat: health"); !st)
    return st.error();
  HealthReport out;
  auto text = [](const json& o, const char* k) { return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string(); };
  if (h.contains("checks")) {
    if (!h["checks"].is_array() || h["checks"].size() > 64) return Error::invalid("heartbeat: health.checks must be a list of at most 64 results");
    for (size_t i = 0; i < h["checks"].size(); ++i) {
      const json& c = h["checks"][i];
      const std::string where = "heartbeat: health.checks[" + std::to_string(i) + "]";
      if (!c.is_object()) return Error::invalid(where + " must be an object");
      if (auto st = only_keys(c, {"name", "status", "detail", "on_failure", "at_ms"}, where); !st) return st.error();
      NodeCheck nc{text(c, "name"), text(c, "status"), text(c, "detail"), text(c, "on_failure"), 0};
      if (nc.name.empty() || nc.name.size() > 63) return Error::invalid(where + ": name must be 1..63 characters");
      if (nc.status != "passed" && nc.status != "failed" && nc.status != "skipped")
        return Error::invalid(where + ": status must be passed, failed or skipped");
      if (nc.on_failure != "reboot" && nc.on_failure != "replace") return Error::invalid(where + ": on_failure must be reboot or replace");
      if (nc.detail.size() > 1024) nc.detail.resize(1024);
      if (c.contains("at_ms") && c["at_ms"].is_number_integer()) nc.at_ms = c["at_ms"].get<int64_t>();
      out.checks.push_back(std::move(nc));
    }
  }
  if (h.contains("configured")) {
    if (!h["configured"].is_number_unsigned() || h["configured"].get<uint64_t>() > 64)
      return Error::invalid("heartbeat: health.configured must be an integer 0..64");
    out.configured = h["configured"].get<size_t>();
  }
  if (h.contains("boot")) {
    if (!h["boot"].is_number_integer() || h["boot"].get<int64_t>() < 0 || h["boot"].get<int64_t>() > 1'000'000'000)
      return Error::invalid("heartbeat: health.boot must be a non-negative integer");
    out.boot = h["boot"].get<int>();
  }
  if (h.contains("exit_checks_running")) {
    if (!h["exit_checks_running"].is_boolean()) return Error::invalid("heartbeat: health.exit_checks_running must be true or false");
    out.exit_checks_running = h["exit_checks_running"].get<bool>();
  }
  if (h.contains("limits_enforced")) {
    const json& l = h["limits_enforced"];
    const char* shape = "heartbeat: health.limits_enforced must be {\"memory\": true|false, \"cpu\": true|false}";
    if (!l.is_object() || !only_keys(l, {"memory", "cpu"}, "heartbeat: health.limits_enforced").ok() || !l.contains("memory") ||
        !l["memory"].is_boolean() || !l.contains("cpu") || !l["cpu"].is_boolean())
      return Error::invalid(shape);
    out.limits = LimitsEnforced{.memory = l["memory"].get<bool>(), .cpu = l["cpu"].get<bool>()};
  }
  if (h.contains("deep_check")) {
    const json& d = h["deep_check"];
    if (!d.is_object()) return Error::invalid("heartbeat: health.deep_check must be an object");
    out.deep_status = text(d, "status");
    out.deep_detail = text(d, "detail");
    if (out.deep_detail.size() > 1024) out.deep_detail.resize(1024);
    if (out.deep_status != "none" && out.deep_status != "running" && out.deep_status != "passed" && out.deep_status != "failed")
      return Error::invalid("heartbeat: health.deep_check.status must be none, running, passed or failed");
  }
  return out;
}

std::string replacement_name(const ClusterState& s, const std::string& node) {
  std::string base = node;
  int k = 0;
  if (auto pos = node.rfind("-r"); pos != std::string::npos && pos + 2 < node.size() &&
                                    std::all_of(node.begin() + static_cast<long>(pos) + 2, node.end(), ::isdigit) &&
                                    node.size() - pos - 2 <= 6) {
    base = node.substr(0, pos);
    k = std::stoi(node.substr(pos + 2));
  }
  for (;;) {
    std::string name = base + "-r" + std::to_string(++k);
    if (!s.find_node(name)) return name;
  }
}

void request_replacement(Txn& txn, const ServerOptions& options, const std::string& node, HealthCause cause,
                         const std::string& reason) {
  const Node* n = txn.cluster().find_node(node);
  if (!n) return;
  const bool provision = !options.provisioner.empty();
  change(txn, node, NodeHealth::kUnschedulablePendingReplacement, cause,
         reason + (provision ? "; the provisioner is asked for a replacement"
                             : "; no provisioner is configured (allot server --provisioner): an administrator replaces it"));
  if (!provision) return;
  n = txn.cluster().find_node(node);
  ProvisionRequest req{node, txn.cluster().catalog.at(n->type).name, n->labels, replacement_name(txn.cluster(), node), reason, "", ""};
  // The replacement joins with a join token of its own, made for it and valid for an hour.
  auth::IssuedToken t = auth::issue_token();
  {
    AsServer as(txn);
    store::TokenRecord rec{t.id, t.secret_hash, auth::Role::kAgentJoin, {}, "", txn.now() + 3600, "replacement of node " + node,
                           /*max_nodes=*/1};
    if (auto st = txn.apply(store::CreateToken{std::move(rec)}); !st) {
      spdlog::error("node {}: cannot make a join token for its replacement: {}", node, st.error().message);
      return;
    }
  }
  req.join_token = t.bearer;
  txn.state().provision_queue.push_back(std::move(req));
}

void on_health_report(Txn& txn, const ServerOptions& options, const std::string& name, const HealthReport& report) {
  const Node* n = txn.cluster().find_node(name);
  if (!n) return;
  NodeInfo& info = txn.state().nodes[name];
  // An unchanged report keeps sharing the checks with the views (cow_value.h).
  if (*info.checks != report.checks) info.checks.edit() = report.checks;
  info.checks_configured = report.configured;
  info.boot = report.boot;
  info.deep_status = report.deep_status;
  info.deep_detail = report.deep_detail;
  info.exit_checks_running = report.exit_checks_running;
  info.limits = report.limits;
  // The checks after an abnormal exit have run: the node's health is known again (a failed check is a fault below;
  // a clean report lets the tick lift the suspicion, and the held exit is the job's).
  if (!report.exit_checks_running) info.exit_judging_since_ms = 0;
  bool replace = false;
  const std::string failed = failed_checks(report.checks, &replace);
  const NodeHealth h = n->health;
  if (h == NodeHealth::kSchedulable) {
    if (!failed.empty() && info.fault_since_ms == 0) {
      // Acted on when the window ends (lifecycle_tick); suspect at once, so nothing new lands here.
      info.fault_since_ms = txn.now_ms();
      txn.state().round_nodes_changed = true;
      info.fault_reason = failed;
      info.fault_replace = replace;
      bool changed = false;
      set_suspect(txn, name, info, true, failed, changed);
    } else if (failed.empty() && info.fault_since_ms != 0) {
      info.fault_since_ms = 0;  // gone before the window ended: the tick lifts the suspicion
    }
    return;
  }
  if (h == NodeHealth::kUnschedulablePendingReboot && info.cause == HealthCause::kHealthCheck) {
    if (info.boot_at_reboot_order < 0) info.boot_at_reboot_order = report.boot;  // ordered before a server restart
    if (report.boot <= info.boot_at_reboot_order) return;  // not rebooted yet
    if (!failed.empty()) {
      request_replacement(txn, options, name, HealthCause::kHealthCheck, "the fault survived a reboot: " + failed);
    } else if (all_passed(info)) {
      change(txn, name, NodeHealth::kSchedulable, HealthCause::kHealthCheck,
             "the reboot cleared the fault; all " + std::to_string(info.checks->size()) + " checks pass or are skipped");
    }
    return;
  }
  if (h == NodeHealth::kUnschedulable && info.cause == HealthCause::kDeepCheck) {
    if (report.deep_status == "passed") {
      if (!failed.empty()) request_replacement(txn, options, name, HealthCause::kDeepCheck, "the deep check passed but " + failed);
      else change(txn, name, NodeHealth::kSchedulable, HealthCause::kDeepCheck, "deep health check passed: " + report.deep_detail);
    } else if (report.deep_status == "failed") {
      request_replacement(txn, options, name, HealthCause::kDeepCheck, "deep health check failed: " + report.deep_detail);
    }
  }
}

bool same_health_changes_nothing(const ServerState& st, const std::string& name) {
  const Node* n = st.cluster.find_node(name);
  auto it = st.nodes.find(name);
  if (!n || it == st.nodes.end()) return false;
  const NodeInfo& info = it->second;
  // A report from after an abnormal exit ends its judging.
  if (info.exit_judging_since_ms != 0 && !info.exit_checks_running) return false;
  // on_health_report with report == what info holds: it copies the same values back, then per health:
  switch (n->health) {
    case NodeHealth::kSchedulable:
      // A failed check starts a fault window, a clean report ends one: nothing when the two already agree.
      return failed_checks(*info.checks, nullptr).empty() == (info.fault_since_ms == 0);
    case NodeHealth::kUnschedulablePendingReboot:
      // Waiting for the reboot: nothing until the boot number moves past the one of the order.
      if (info.cause != HealthCause::kHealthCheck) return true;
      return info.boot_at_reboot_order >= 0 && info.boot <= info.boot_at_reboot_order;
    case NodeHealth::kUnschedulable:
      if (info.cause != HealthCause::kDeepCheck) return true;
      return info.deep_status != "passed" && info.deep_status != "failed";
    default:
      return true;
  }
}

NodeOrders orders_for(const ServerState& st, const std::string& name) {
  NodeOrders o;
  const Node* n = st.cluster.find_node(name);
  auto it = st.nodes.find(name);
  if (!n || it == st.nodes.end()) return o;
  const NodeInfo& info = it->second;
  o.reboot = n->health == NodeHealth::kUnschedulablePendingReboot && info.cause == HealthCause::kHealthCheck &&
             info.boot_at_reboot_order >= 0 && info.boot <= info.boot_at_reboot_order;
  o.deep_check = n->health == NodeHealth::kUnschedulable && info.cause == HealthCause::kDeepCheck && info.deep_status == "none";
  return o;
}

Status on_register(Txn& txn, const ServerOptions& options, const std::string& node, bool is_new, const std::string& replaces) {
  if (!replaces.empty()) {
    if (!is_new) return Error::precondition("register: node " + node + " is already in the cluster; a replacement registers under a new name");
    const Node* old = txn.cluster().find_node(replaces);
    if (!old || old->health != NodeHealth::kUnschedulablePendingReplacement)
      return Error::precondition("register: node " + replaces + " is not waiting for a replacement (it is " +
                                 (old ? node_health_name(old->health) : "not in the cluster") + ")");
    AsServer as(txn);
    // The failed node is retired: it leaves, and its agent's credential stops working.
    std::vector<std::string> revoke;
    for (const auto& [id, t] : *txn.state().tokens)
      if (!t.revoked && t.token.role == auth::Role::kAgent && t.token.node == replaces) revoke.push_back(id);
    for (const auto& id : revoke) (void)txn.apply(store::RevokeToken{id});
    if (auto st = txn.apply(store::RemoveNode{replaces}); !st) return st;
    spdlog::info("node {} retired: {} replaces it", replaces, node);
    change(txn, node, NodeHealth::kUnschedulable, HealthCause::kDeepCheck,
           "replacement of node " + replaces + ": deep health check running", replaces);
    return ok_status();
  }
  if (is_new && options.deep_check_new_nodes)
    change(txn, node, NodeHealth::kUnschedulable, HealthCause::kDeepCheck, "new node: deep health check running");
  return ok_status();
}

bool hold_exit(Txn& txn, const Job& j, const std::string& node, const std::string& reason) {
  auto& held = txn.state().deferred_exits;
  const int attempt = attempt_of(j);
  // The node whose replica died: while its agent's checks run, its health is unknown, so nothing new is placed on it
  // (a GPU that fell off the bus kills the process before any check has seen it).
  NodeInfo* own = nullptr;
  if (auto it = txn.state().nodes.find(node); it != txn.state().nodes.end()) own = &it->second;
  if (own && own->exit_checks_running && own->exit_judging_since_ms == 0) {
    own->exit_judging_since_ms = txn.now_ms();
    txn.state().round_nodes_changed = true;
    own->exit_judging_reason = reason + " of job " + j.spec.name + "; waiting for the node's health checks";
    bool changed = false;
    set_suspect(txn, node, *own, true, own->exit_judging_reason, changed);
  }
  if (auto it = held.find(j.id.index()); it != held.end() && it->second.attempt == attempt) return true;  // one is held already
  int64_t slowest = 0;
  bool other_nodes = false;
  for (NodeId id : j.placement.nodes()) {
    const Node& peer = txn.cluster().nodes[id.index()];
    if (peer.name == node) continue;
    other_nodes = true;
    if (auto it = txn.state().nodes.find(peer.name); it != txn.state().nodes.end())
      slowest = std::max(slowest, it->second.heartbeat_interval_ms);
  }
  const bool own_unknown_or_failing = own && (own->exit_judging_since_ms != 0 || own->fault_since_ms != 0);
  if (!other_nodes && !own_unknown_or_failing) return false;
  // Long enough for a dead peer to miss its heartbeat and be suspected (lifecycle_tick), and a little more.
  const int64_t hold = other_nodes ? 3 * slowest + 300 : 0;
  held[j.id.index()] = DeferredExit{attempt, node, reason, txn.now_ms() + hold};
  return true;
}

bool lifecycle_tick(Txn& txn, const ServerOptions& options, const std::vector<RoundNodes::Entry>& nodes) {
  bool changed = false;
  const int64_t now = txn.now_ms();
  std::vector<std::pair<std::string, NodeInfo*>> faults;
  std::vector<std::pair<std::string, std::string>> replace;  // node, reason
  for (const auto& [name_of, info_of] : nodes) {
    const std::string& name = *name_of;
    NodeInfo& info = *info_of;
    const int64_t silent = silent_for(txn.view(), info, now);
    const int64_t threshold = missed_heartbeat_after(info);
    // Nothing here can change for a node it may not act on, so its node is not looked up (10,000 look-ups a round
    // were most of the round's cost); most such nodes are not even in `nodes` (round_nodes.h).
    if (!lifecycle_may_act_on(info, silent)) continue;
    const Node* n = node_of(txn.cluster(), name, info);
    if (!n) continue;
    if (info.exit_judging_since_ms != 0 && now - info.exit_judging_since_ms > kExitJudgingLimitMs) {
      spdlog::warn("node {}: its health checks after an abnormal exit did not finish within {} s; the exit is judged "
                   "without them", name, kExitJudgingLimitMs / 1000);
      info.exit_judging_since_ms = 0;
    }
    std::string why;
    if (info.fault_since_ms != 0) why = info.fault_reason;
    else if (silent > threshold) why = "no heartbeat for " + std::to_string(silent) + " ms (interval " + std::to_string(info.heartbeat_interval_ms) + " ms)";
    else if (info.exit_judging_since_ms != 0) why = info.exit_judging_reason;
    set_suspect(txn, name, info, n->health == NodeHealth::kSchedulable && !why.empty(), why, changed);
    if (n->health == NodeHealth::kSchedulable && info.fault_since_ms != 0 && now - info.fault_since_ms >= options.fault_window.count())
      faults.push_back({name, &info});
    const int64_t in_phase = now - info.phase_since_ms;
    if (n->health == NodeHealth::kUnschedulablePendingReboot && info.cause == HealthCause::kHealthCheck &&
        in_phase > options.reboot_timeout.count())
      replace.push_back({name, "not healthy within " + std::to_string(options.reboot_timeout.count() / 1000) + " s of the reboot order"});
    if (n->health == NodeHealth::kUnschedulablePendingReboot && info.cause == HealthCause::kTimeout &&
        silent > options.replace_silent_after.count())
      replace.push_back({name, "its agent has been silent for " + std::to_string(silent / 1000) + " s"});
    if (n->health == NodeHealth::kUnschedulable && info.cause == HealthCause::kDeepCheck && in_phase > options.deep_check_timeout.count())
      replace.push_back({name, "the deep health check did not finish within " + std::to_string(options.deep_check_timeout.count() / 1000) + " s"});
  }
  // All faults whose window ended, in one go: a job on several of these nodes restarts once.
  for (auto& [name, info] : faults) {
    const std::string reason = info->fault_reason;
    const int boot = info->boot;
    bool unused = false;
    set_suspect(txn, name, *info, false, "", unused);
    changed = true;
    if (info->fault_replace) {
      request_replacement(txn, options, name, HealthCause::kHealthCheck, reason);
    } else {
      change(txn, name, NodeHealth::kUnschedulablePendingReboot, HealthCause::kHealthCheck, reason + "; rebooting it");
      txn.state().nodes[name].boot_at_reboot_order = boot;
    }
  }
  for (const auto& [name, reason] : replace) request_replacement(txn, options, name, txn.state().nodes[name].cause, reason);

  // Held exits: charged to a failing peer node when there is one, else to the job once the hold ends.
  std::vector<uint32_t> done;
  for (auto& [index, d] : txn.state().deferred_exits) {
    const Job& j = txn.cluster().jobs[index];
    if (j.state != JobState::kRunning || attempt_of(j) != d.attempt) {
      done.push_back(index);
      continue;
    }
    // Every node of the run, the reporting one included: a node whose checks found a fault, or still run after an
    // abnormal exit, holds the exit (the fault's window then fails the node, which restarts the job once, charged to
    // the node); a node that is down or silent takes the exit at once.
    std::string culprit, culprit_node;
    bool wait = false;
    for (NodeId id : j.placement.nodes()) {
      const Node& peer = txn.cluster().nodes[id.index()];
      auto it = txn.state().nodes.find(peer.name);
      if (it == txn.state().nodes.end()) continue;
      const NodeInfo& info = it->second;
      if (peer.health != NodeHealth::kSchedulable || (info.suspect && info.fault_since_ms == 0 && info.exit_judging_since_ms == 0)) {
        culprit = "node " + peer.name + " is failing (" + (info.suspect && !info.suspect_reason.empty() ? info.suspect_reason
                                                                                                       : node_health_name(peer.health)) + ")";
        culprit_node = peer.name;
        break;
      }
      wait |= peer.health == NodeHealth::kSchedulable && (info.fault_since_ms != 0 || info.exit_judging_since_ms != 0);
    }
    if (culprit.empty() && wait) continue;
    if (culprit.empty() && now < d.until_ms) continue;
    done.push_back(index);
    txn.state().exits.erase(index);
    AsServer as(txn);
    const std::string reason = culprit.empty() ? d.reason : culprit + "; " + d.reason + " on " + d.node + " after it";
    (void)txn.apply(store::Finish{j.spec.name, false, reason, culprit_node});
  }
  for (uint32_t i : done) txn.state().deferred_exits.erase(i);
  return changed;
}

}  // namespace allot::server
