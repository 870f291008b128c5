#include "server/views/views.h"

#include <algorithm>
#include <functional>

#include "config/policy_json.h"
#include "core/placement/topology_levels.h"
#include "view/state_json.h"
#include "view/times.h"
#include "store/record.h"

namespace allot::server {
using nlohmann::json;

json policy_json(const PolicySpec& p) { return config::policy_json(p); }

json node_view(const ServerState& st, const Node& n) {
  json j = view::node_json(st.cluster, n);
  auto it = st.nodes.find(n.name);
  if (it != st.nodes.end()) {
    const NodeInfo& info = it->second;
    j["agent"] = info.agent;
    j["address"] = info.address;
    if (info.agent) j["last_heartbeat"] = view::rfc3339_ms(info.last_heartbeat_ms);
    // The lifecycle (docs/resiliency.md): why the node is in its state, its checks, its history.
    j["health_reason"] = info.reason;
    j["health_cause"] = store::health_cause_name(info.cause);
    if (info.suspect) j["suspect"] = info.suspect_reason;
    json checks = json::array();
    for (const NodeCheck& c : *info.checks)
      checks.push_back({{"name", c.name}, {"status", c.status}, {"detail", c.detail}, {"on_failure", c.on_failure}, {"at", view::rfc3339_ms(c.at_ms)}});
    j["checks"] = checks;
    j["deep_check"] = {{"status", info.deep_status}, {"detail", info.deep_detail}};
    j["boot"] = info.boot;
    if (info.limits) j["limits_enforced"] = {{"memory", info.limits->memory}, {"cpu", info.limits->cpu}};
    if (!info.replaces.empty()) j["replaces"] = info.replaces;
    // Runs requeued because a replica here did not start within the policy's start_timeout (resiliency.md).
    if (info.start_timeouts > 0) j["start_timeouts"] = info.start_timeouts;
    json history = json::array();
    for (const NodeChange& c : *info.history)
      history.push_back({{"at", view::rfc3339(c.at)}, {"from", c.from}, {"to", c.to}, {"cause", c.cause}, {"reason", c.reason}});
    j["health_history"] = history;
  }
  return j;
}

double job_goodput(const ServerState& st, const Job& j, Time now, int64_t* held_out, int64_t* lost_out) {
  int64_t held = 0, lost = 0;
  if (const JobAccount* acc = st.accounts.find(j.id.index())) {
    held = acc->held_s;
    lost = acc->lost_s;
    if (j.state == JobState::kRunning) held += std::max<int64_t>(0, now - j.started_at) * acc->slots;
  }
  if (held_out) *held_out = held;
  if (lost_out) *lost_out = lost;
  return held > 0 ? static_cast<double>(held - lost) / static_cast<double>(held) : 1.0;
}

view::SeesTeamJobs job_names_for(const auth::Caller& who) {
  if (who.role != auth::Role::kMember) return {};
  return [who](const std::string& team) { return who.in_team(team); };
}

void add_preemption_records(const ServerState& st, const Job& j, const auth::Caller& who, json& view) {
  json out = json::array();
  if (auto it = st.preemptions_of.find(j.id.index()); it != st.preemptions_of.end()) {
    const view::SeesTeamJobs sees = job_names_for(who);
    for (const PreemptionSeen& p : it->second) {
      json r = view::preemption_json(*p.group, sees);
      r["at"] = view::rfc3339(p.at);
      r["as"] = p.group->preemptor == j.spec.name ? "preemptor" : "victim";
      out.push_back(std::move(r));
    }
  }
  view["preemption_records"] = std::move(out);
}

void add_resilience(const ServerState& st, const Job& j, Time now, json& view) {
  json restarts = json::array();
  int64_t lost_s = 0;
  if (const JobAccount* acc = st.accounts.find(j.id.index())) {
    for (const RestartInfo& r : acc->restarts) {
      restarts.push_back({{"at", view::rfc3339(r.at)}, {"attempt", r.attempt}, {"cause", r.cause}, {"node", r.node}, {"run_s", r.run_s}, {"work_lost_s", r.lost_s}});
      lost_s += r.lost_s;
    }
  }
  view["restart_history"] = restarts;
  view["work_lost_s"] = lost_s;
  view["goodput"] = job_goodput(st, j, now);
}

void add_bound_cpus(const ServerState& st, const Job& j, json& view) {
  auto it = st.replica_cpus.find(j.id.index());
  if (j.state != JobState::kRunning || it == st.replica_cpus.end() || it->second.attempt != attempt_of(j)) return;
  if (!view.contains("placement") || !view["placement"].is_array()) return;
  int rank = 0;  // agents number replicas across pod sets, in placement order
  for (auto& ps : view["placement"])
    for (auto& r : ps["replicas"]) {
      if (auto c = it->second.by_rank.find(rank); c != it->second.by_rank.end()) r["cpus_bound"] = c->second;
      ++rank;
    }
}

json topology_json(const ClusterState& s) {
  json levels = json::array();
  for (const auto& l : s.levels) levels.push_back(short_level(l));
  // Levels a node has no label for (an empty name) are left out: their children hang from the level above.
  // Recursion depth is the number of levels.
  std::function<void(int, json&)> add = [&](int d, json& into) {
    const auto& dom = s.tree.domains[d];
    if (dom.node.valid() && dom.children.empty()) {
      into.push_back({{"node", s.nodes[dom.node.index()].name}});
      return;
    }
    json children = json::array();
    for (int c : dom.children) add(c, children);
    if (dom.name.empty()) {
      for (auto& c : children) into.push_back(std::move(c));
      return;
    }
    into.push_back({{"level", short_level(s.levels[dom.level])}, {"name", dom.name}, {"children", children}});
  };
  json roots = json::array();
  for (size_t d = 0; d < s.tree.domains.size(); ++d)
    if (s.tree.domains[d].parent < 0) add(static_cast<int>(d), roots);
  return {{"levels", levels}, {"domains", roots}};
}

json teams_json(const ServerState& st) {
  std::vector<const Team*> teams;
  for (const Team& t : st.cluster.teams)
    if (!st.removed_teams.count(t.spec.name)) teams.push_back(&t);
  std::sort(teams.begin(), teams.end(), [](const Team* a, const Team* b) { return a->spec.name < b->spec.name; });
  json out = json::array();
  for (const Team* t : teams) out.push_back(view::team_json(st.cluster, *t));
  return out;
}

}  // namespace allot::server
