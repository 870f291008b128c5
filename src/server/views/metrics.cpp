#include "server/views/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <map>
#include <tuple>

#include "core/quota/quota.h"
#include "server/outside/admission_checks.h"
#include "server/options.h"
#include "server/version.h"
#include "server/views/views.h"
#include "view/state_json.h"

namespace allot::server {

namespace {

// Label values escape backslash, double quote and newline (Prometheus text format 0.0.4).
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

double in_units(const Resources& r, Resource res) {
  switch (res) {
    case Resource::kAccelerators: return static_cast<double>(r.accelerators);
    case Resource::kVcpu: return static_cast<double>(r.vcpu_milli) / 1000.0;
    case Resource::kMemory: return static_cast<double>(r.memory_mib) / 1024.0;
  }
  return 0;
}

// Whether a team holds quota of or uses an instance type: the pairs the per-team, per-type series list.
bool team_has_type(const ClusterState& s, const Team& t, size_t type) {
  return (type < t.nominal.size() && !t.nominal[type].is_zero()) || !s.usage[t.id.index()][type].is_zero();
}

// The instance_type label of a job that names no type: it may run on any type its team may use.
constexpr const char* kAnyInstanceType = "any";

// The instance types a job counts under in the per-team series (docs/api.md, "Metrics"): while it holds a
// placement, the types its replicas are on; otherwise the types its pod sets ask for, and "any" for a pod set that
// names none (it may run on any type its team may use). A job of several types counts once under each.
std::vector<std::string> metric_types(const ClusterState& s, const Job& j) {
  std::vector<std::string> out;
  const auto add = [&out](const std::string& type) {
    if (std::find(out.begin(), out.end(), type) == out.end()) out.push_back(type);
  };
  if (!j.placement.pod_sets.empty()) {
    for (TypeId type : placement_types(j.placement)) add(s.catalog.at(type).name);
    return out;
  }
  for (const PodSetSpec& ps : j.spec.pod_sets) add(ps.instance_type.empty() ? std::string(kAnyInstanceType) : ps.instance_type);
  return out;
}

// Every (team, instance type) pair a team holds quota of or uses, so that its series exist from 0.
std::vector<std::pair<std::string, std::string>> team_type_pairs(const ServerState& st) {
  const ClusterState& s = st.cluster;
  std::vector<std::pair<std::string, std::string>> out;
  for (const Team& t : s.teams) {
    if (st.removed_teams.count(t.spec.name)) continue;
    for (size_t type = 0; type < s.catalog.size(); ++type)
      if (team_has_type(s, t, type)) out.emplace_back(t.spec.name, s.catalog.at(TypeId(static_cast<uint32_t>(type))).name);
  }
  return out;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

// One histogram's series; `labels` is empty or ends with a comma ("team=\"a\",").
void histogram(std::string& out, const char* name, const std::string& labels, const Histogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    out += fmt::format("{}_bucket{{{}le=\"{}\"}} {}\n", name, labels, h.bounds()[i], cumulative);
  }
  out += fmt::format("{}_bucket{{{}le=\"+Inf\"}} {}\n", name, labels, h.count());
  const std::string plain = labels.empty() ? "" : "{" + labels.substr(0, labels.size() - 1) + "}";
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, plain, h.sum(), name, plain, h.count());
}

// One by-rule counter (observed.h, RuleKey): every pair of a team and an instance type it holds quota of or
// uses, under each of `rules`, from 0 (so that a rate has a series before the first decision), and every
// series counted so far, whatever the team holds now. Removed teams are left out, as everywhere.
void render_by_rule(std::string& out, const ServerState& st, const char* name, const char* help,
                    std::initializer_list<const char*> rules, const std::map<RuleKey, uint64_t>& counts) {
  std::map<RuleKey, uint64_t> series = counts;
  for (const auto& [team, type] : team_type_pairs(st))
    for (const char* rule : rules) series.try_emplace(RuleKey{rule, team, type}, 0);
  header(out, name, "counter", help);
  for (const auto& [key, n] : series)
    if (!st.removed_teams.count(key.team))
      out += fmt::format("{}{{rule=\"{}\",team=\"{}\",instance_type=\"{}\"}} {}\n", name, label(key.rule), label(key.team),
                         label(key.instance_type), n);
}

// The queue per team and priority class, the waits of admitted jobs, decisions by rule, pass durations.
void render_scheduling(std::string& out, const ServerState& st) {
  const ClusterState& s = st.cluster;
  header(out, "allot_queue_length", "gauge",
         "Jobs waiting (Pending or Suspended) per team, priority class and instance type asked for (any: none named).");
  std::map<std::tuple<std::string, std::string, std::string>, int> queue;
  for (JobId id : s.waiting_jobs) {
    const Job& j = s.jobs[id.index()];
    for (const std::string& type : metric_types(s, j))
      ++queue[{s.teams[j.team.index()].spec.name, j.spec.priority.empty() ? "none" : j.spec.priority, type}];
  }
  for (const auto& [key, n] : queue)
    out += fmt::format("allot_queue_length{{team=\"{}\",priority=\"{}\",instance_type=\"{}\"}} {}\n", label(std::get<0>(key)),
                       label(std::get<1>(key)), label(std::get<2>(key)), n);

  header(out, "allot_waiting_jobs", "gauge",
         "Jobs waiting per team, state (Pending or Suspended), reason code (docs/states.md: what blocks them now) and "
         "instance type asked for (any: none named).");
  std::map<std::tuple<std::string, JobState, ReasonCode, std::string>, int> waiting;
  for (JobId id : s.waiting_jobs) {
    const Job& j = s.jobs[id.index()];
    for (const std::string& type : metric_types(s, j)) ++waiting[{s.teams[j.team.index()].spec.name, j.state, j.reason_code, type}];
  }
  for (const auto& [key, n] : waiting)
    out += fmt::format("allot_waiting_jobs{{team=\"{}\",state=\"{}\",reason=\"{}\",instance_type=\"{}\"}} {}\n",
                       label(std::get<0>(key)), job_state_name(std::get<1>(key)), reason_code_name(std::get<2>(key)),
                       label(std::get<3>(key)), n);

  header(out, "allot_queue_wait_seconds", "histogram",
         "From becoming Pending or Suspended to admission, per team, priority class and instance type placed on.");
  for (const auto& [key, h] : st.observed.queue_wait)
    histogram(out, "allot_queue_wait_seconds",
              fmt::format("team=\"{}\",priority=\"{}\",instance_type=\"{}\",", label(key.team), label(key.priority), label(key.instance_type)), h);

  render_by_rule(out, st, "allot_admissions_by_rule_total", "Admissions per rule (within-nominal or borrowing), team and instance type.",
                 {"within-nominal", "borrowing"}, st.observed.admissions_by_rule);
  render_by_rule(out, st, "allot_preemptions_by_rule_total",
                 "Preemptions per rule (reclaim: lent quota taken back; priority: within a team; fair_share; unrecorded: journaled "
                 "before rules were), the victim's team and the instance types its run held.",
                 {"reclaim", "priority", "fair_share"}, st.observed.preemptions_by_rule);
  header(out, "allot_scheduler_pass_seconds", "histogram", "Duration of one scheduler pass (since the server started).");
  histogram(out, "allot_scheduler_pass_seconds", "", st.observed.pass_seconds);
}

// Accelerators per instance type by what they are doing, and nodes per instance type and health.
void render_capacity(std::string& out, const ServerState& st) {
  const ClusterState& s = st.cluster;
  struct Count {
    int64_t in_use = 0, free = 0, unavailable = 0;
  };
  std::vector<Count> acc(s.catalog.size());
  std::map<std::pair<std::string, std::string>, int> nodes;
  std::map<std::string, int> cordoned;  // every type with a node, 0 when none is cordoned
  for (const Node& n : s.nodes) {
    if (n.removed) continue;
    cordoned[s.catalog.at(n.type).name] += n.cordoned;
    const int64_t total = s.catalog.at(n.type).capacity().accelerators;
    const int64_t free = s.room[n.id.index()].free.accelerators;
    Count& c = acc[n.type.index()];
    c.in_use += total - free;
    if (n.schedulable()) c.free += free;
    else c.unavailable += free;  // unhealthy or cordoned: nothing new lands there
    ++nodes[{s.catalog.at(n.type).name, node_health_name(n.health)}];
  }
  header(out, "allot_accelerators", "gauge",
         "Accelerators per instance type: in_use by replicas, free on schedulable nodes, unavailable (free on unhealthy or cordoned nodes).");
  for (size_t t = 0; t < s.catalog.size(); ++t) {
    const std::string type = label(s.catalog.at(TypeId(static_cast<uint32_t>(t))).name);
    if (s.type_capacity(TypeId(static_cast<uint32_t>(t))).is_zero()) continue;
    out += fmt::format("allot_accelerators{{instance_type=\"{}\",state=\"in_use\"}} {}\n", type, acc[t].in_use);
    out += fmt::format("allot_accelerators{{instance_type=\"{}\",state=\"free\"}} {}\n", type, acc[t].free);
    out += fmt::format("allot_accelerators{{instance_type=\"{}\",state=\"unavailable\"}} {}\n", type, acc[t].unavailable);
  }
  header(out, "allot_nodes_by_type", "gauge", "Nodes per instance type and health state.");
  for (const auto& [key, n] : nodes)
    out += fmt::format("allot_nodes_by_type{{instance_type=\"{}\",health=\"{}\"}} {}\n", label(key.first), key.second, n);
  header(out, "allot_nodes_cordoned_by_type", "gauge", "Nodes cordoned (no new replicas) per instance type.");
  for (const auto& [type, n] : cordoned)
    out += fmt::format("allot_nodes_cordoned_by_type{{instance_type=\"{}\"}} {}\n", label(type), n);
}

}  // namespace

// Per-user series (core/quota/user_limits.h): the running and waiting jobs of each user of each team, and the
// accelerators the running ones hold per instance type, for the users jobs carry (jobs without a user are in the
// per-team series only). Written only when some active job has a user, so servers without users show none.
static void render_user_series(std::string& out, const ServerState& st) {
  const ClusterState& s = st.cluster;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> jobs, accelerators;
  auto team_of = [&](const Job& j) -> const std::string& { return s.teams[j.team.index()].spec.name; };
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (j.spec.user.empty() || st.removed_teams.count(team_of(j))) continue;
    ++jobs[{team_of(j), j.spec.user, "running"}];
    for (const auto& ps : j.placement.pod_sets)
      accelerators[{team_of(j), j.spec.user, s.catalog.at(ps.type).name}] +=
          ps.per_replica.accelerators * static_cast<int64_t>(ps.replicas.size());
  }
  for (JobId id : s.waiting_jobs) {
    const Job& j = s.jobs[id.index()];
    if (!j.spec.user.empty() && !st.removed_teams.count(team_of(j))) ++jobs[{team_of(j), j.spec.user, "waiting"}];
  }
  if (jobs.empty()) return;
  header(out, "allot_user_jobs", "gauge", "Jobs per team, user and state (running, or waiting: Pending or Suspended).");
  for (const auto& [key, n] : jobs)
    out += fmt::format("allot_user_jobs{{team=\"{}\",user=\"{}\",state=\"{}\"}} {}\n", label(std::get<0>(key)),
                       label(std::get<1>(key)), std::get<2>(key), n);
  header(out, "allot_user_accelerators", "gauge", "Accelerators each user's running jobs hold, per team and instance type.");
  for (const auto& [key, n] : accelerators)
    out += fmt::format("allot_user_accelerators{{team=\"{}\",user=\"{}\",instance_type=\"{}\"}} {}\n", label(std::get<0>(key)),
                       label(std::get<1>(key)), label(std::get<2>(key)), n);
}

std::string render_metrics(const ServerState& st) {
  const ClusterState& s = st.cluster;
  std::string out;
  out.reserve(4096);

  header(out, "allot_jobs", "gauge", "Jobs per team, state and instance type (held, or asked for while none is held; any: none named).");
  const auto team_types = team_type_pairs(st);
  std::map<std::pair<std::string, std::string>, std::array<uint64_t, 6>> jobs;
  for (const auto& pair : team_types) jobs[pair] = {};
  // Jobs compacted by retention have left (core/model/state.h, compact_finished): counted apart, below.
  for (const Job& j : s.jobs) {
    if (j.compacted || st.removed_teams.count(s.teams[j.team.index()].spec.name)) continue;
    for (const std::string& type : metric_types(s, j)) ++jobs[{s.teams[j.team.index()].spec.name, type}][static_cast<int>(j.state)];
  }
  for (const auto& [key, counts] : jobs)
    for (int k = 0; k < 6; ++k)
      out += fmt::format("allot_jobs{{team=\"{}\",instance_type=\"{}\",state=\"{}\"}} {}\n", label(key.first), label(key.second),
                         job_state_name(static_cast<JobState>(k)), counts[k]);
  render_user_series(out, st);
  header(out, "allot_jobs_compacted_total", "counter", "Finished jobs that left the server by retention (--retain-finished).");
  out += fmt::format("allot_jobs_compacted_total {}\n", s.compacted_jobs);

  // Quota, usage, borrowed and lent per team, instance type and resource: an H100 and an A10G are never added
  // together. Types a team neither holds quota of nor uses are left out.
  struct Family {
    const char* name;
    const char* help;
    Resources (*of)(const ClusterState&, const std::vector<std::vector<Resources>>&, TeamId, TypeId);
  };
  std::vector<std::vector<Resources>> lent(s.catalog.size());
  for (size_t t = 0; t < s.catalog.size(); ++t) lent[t] = lent_by_team(s, s.usage, TypeId(static_cast<uint32_t>(t)));
  const Family families[] = {
      {"allot_quota", "Nominal quota per team, instance type and resource.",
       [](const ClusterState& s, const auto&, TeamId team, TypeId type) { return s.teams[team.index()].nominal[type.index()]; }},
      {"allot_usage", "What each team's running jobs hold, per instance type.",
       [](const ClusterState& s, const auto&, TeamId team, TypeId type) { return s.usage[team.index()][type.index()]; }},
      {"allot_borrowed", "What each team holds above its nominal quota, per instance type.",
       [](const ClusterState& s, const auto&, TeamId team, TypeId type) { return borrowed(s, s.usage, team, type); }},
      {"allot_lent", "What each team's idle quota lends to others, per instance type.",
       [](const ClusterState&, const auto& lent, TeamId team, TypeId type) { return lent[type.index()][team.index()]; }},
  };
  for (const Family& f : families) {
    header(out, f.name, "gauge", f.help);
    for (const Team& t : s.teams) {
      if (st.removed_teams.count(t.spec.name)) continue;
      for (size_t type = 0; type < s.catalog.size(); ++type) {
        if (!team_has_type(s, t, type)) continue;
        Resources r = f.of(s, lent, t.id, TypeId(static_cast<uint32_t>(type)));
        for (Resource res : kAllResources)
          out += fmt::format("{}{{team=\"{}\",instance_type=\"{}\",resource=\"{}\"}} {}\n", f.name, label(t.spec.name),
                             label(s.catalog.at(TypeId(static_cast<uint32_t>(type))).name), resource_name(res), in_units(r, res));
      }
    }
  }

  header(out, "allot_admissions_total", "counter", "Admissions decided by the scheduler.");
  out += fmt::format("allot_admissions_total {}\n", st.admissions_total);
  header(out, "allot_preemptions_total", "counter", "Preemptions decided by the scheduler.");
  out += fmt::format("allot_preemptions_total {}\n", st.preemptions_total);

  header(out, "allot_scheduling_latency_seconds", "histogram",
         "From submission to first admission, per team and instance type (a job admitted onto several types counts under each).");
  for (const auto& [key, h] : st.scheduling_latency) {
    if (st.removed_teams.count(key.first)) continue;
    const std::string labels = fmt::format("team=\"{}\",instance_type=\"{}\"", label(key.first), label(key.second));
    uint64_t cumulative = 0;
    for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
      cumulative += h.counts[i];
      out += fmt::format("allot_scheduling_latency_seconds_bucket{{{},le=\"{}\"}} {}\n", labels, LatencyHistogram::kBounds[i], cumulative);
    }
    out += fmt::format("allot_scheduling_latency_seconds_bucket{{{},le=\"+Inf\"}} {}\n", labels, h.count);
    out += fmt::format("allot_scheduling_latency_seconds_sum{{{}}} {}\n", labels, h.sum);
    out += fmt::format("allot_scheduling_latency_seconds_count{{{}}} {}\n", labels, h.count);
  }

  header(out, "allot_nodes", "gauge", "Nodes in the cluster per health state.");
  std::map<std::string, int> health;
  for (NodeHealth hs : {NodeHealth::kSchedulable, NodeHealth::kUnschedulable, NodeHealth::kUnschedulablePendingReboot,
                        NodeHealth::kUnschedulablePendingReplacement})
    health[node_health_name(hs)] = 0;
  int cordoned = 0;
  for (const Node& n : s.nodes) {
    if (n.removed) continue;
    ++health[node_health_name(n.health)];
    cordoned += n.cordoned;
  }
  for (const auto& [name, count] : health) out += fmt::format("allot_nodes{{health=\"{}\"}} {}\n", name, count);
  header(out, "allot_nodes_cordoned", "gauge", "Nodes cordoned (no new replicas).");
  out += fmt::format("allot_nodes_cordoned {}\n", cordoned);
  render_scheduling(out, st);
  render_capacity(out, st);

  // Resiliency (docs/resiliency.md): each node's health checks, and restarts, work lost and goodput per team.
  std::vector<std::pair<std::string, const NodeInfo*>> agents;
  for (const auto& [name, info] : st.nodes)
    if (info.agent && s.find_node(name)) agents.push_back({name, &info});
  std::sort(agents.begin(), agents.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  header(out, "allot_node_check_failed", "gauge", "1 when the node's health check failed at its last run, else 0 (skipped checks are left out).");
  for (const auto& [name, info] : agents)
    for (const NodeCheck& c : *info->checks)
      if (c.status != "skipped")
        out += fmt::format("allot_node_check_failed{{node=\"{}\",check=\"{}\"}} {}\n", label(name), label(c.name), c.status == "failed" ? 1 : 0);
  // The status is a state set of its own (one series per status, 1 for the current one), so that a check
  // changing from passed to failed does not end one timestamp series and start another.
  // The new series carry the node's instance type, so that a board can follow its instance-type selector.
  const auto type_of = [&s](const std::string& node) { return label(s.catalog.at(s.find_node(node)->type).name); };
  header(out, "allot_node_check_last_run_timestamp_seconds", "gauge", "When the node's health check last ran (Unix seconds).");
  for (const auto& [name, info] : agents)
    for (const NodeCheck& c : *info->checks)
      out += fmt::format("allot_node_check_last_run_timestamp_seconds{{node=\"{}\",instance_type=\"{}\",check=\"{}\"}} {}\n", label(name),
                         type_of(name), label(c.name), c.at_ms / 1000);
  header(out, "allot_node_check_status", "gauge", "The node's health check's status at its last run: 1 for the status it had, 0 for the others.");
  for (const auto& [name, info] : agents)
    for (const NodeCheck& c : *info->checks)
      for (const char* status : {"passed", "failed", "skipped"})
        out += fmt::format("allot_node_check_status{{node=\"{}\",instance_type=\"{}\",check=\"{}\",status=\"{}\"}} {}\n", label(name),
                           type_of(name), label(c.name), status, c.status == status ? 1 : 0);
  header(out, "allot_node_check_timestamp_seconds", "gauge",
         "Deprecated (removed in the next release): allot_node_check_last_run_timestamp_seconds and allot_node_check_status.");
  for (const auto& [name, info] : agents)
    for (const NodeCheck& c : *info->checks)
      out += fmt::format("allot_node_check_timestamp_seconds{{node=\"{}\",check=\"{}\",status=\"{}\"}} {}\n", label(name),
                         label(c.name), label(c.status), c.at_ms / 1000);
  const Time now = static_cast<Time>(system_clock_ms() / 1000);
  struct TeamFigures {
    int64_t restarts = 0, held = 0, lost = 0;
  };
  std::vector<TeamFigures> teams(s.teams.size());
  std::map<std::pair<std::string, std::string>, TeamFigures> by_type;  // by (team, instance type): the jobs' types
  for (const auto& pair : team_types) by_type[pair] = {};
  for (const Job& j : s.jobs) {
    if (j.compacted) continue;  // its figures left with it
    int64_t held = 0, lost = 0;
    (void)job_goodput(st, j, now, &held, &lost);
    TeamFigures& team = teams[j.team.index()];  // for the deprecated per-team series
    team.restarts += j.restarts;
    team.held += held;
    team.lost += lost;
    if (st.removed_teams.count(s.teams[j.team.index()].spec.name)) continue;
    for (const std::string& type : metric_types(s, j)) {
      TeamFigures& f = by_type[{s.teams[j.team.index()].spec.name, type}];
      f.restarts += j.restarts;
      f.held += held;
      f.lost += lost;
    }
  }
  header(out, "allot_job_restarts_total", "counter",
         "Restarts of jobs after failures (node or process), per team and instance type of the jobs (allot_jobs).");
  for (const auto& [key, f] : by_type)
    out += fmt::format("allot_job_restarts_total{{team=\"{}\",instance_type=\"{}\"}} {}\n", label(key.first), label(key.second), f.restarts);
  // Work lost counts accelerator-seconds (replica-seconds for CPU jobs), as its name says; goodput is a ratio.
  // The names before these stay one release, deprecated (docs/api.md, "Metrics").
  const auto goodput = [](const TeamFigures& f) {
    return f.held > 0 ? static_cast<double>(f.held - f.lost) / static_cast<double>(f.held) : 1.0;
  };
  header(out, "allot_work_lost_accelerator_seconds_total", "counter",
         "Accelerator-seconds (replica-seconds for CPU jobs) of work lost since the last checkpoint when runs ended, per team "
         "and instance type of the jobs.");
  for (const auto& [key, f] : by_type)
    out += fmt::format("allot_work_lost_accelerator_seconds_total{{team=\"{}\",instance_type=\"{}\"}} {}\n", label(key.first),
                       label(key.second), f.lost);
  header(out, "allot_goodput_ratio", "gauge",
         "Useful over held accelerator-seconds of the team's jobs of the instance type, 0 to 1 (1 when none ran).");
  for (const auto& [key, f] : by_type)
    out += fmt::format("allot_goodput_ratio{{team=\"{}\",instance_type=\"{}\"}} {}\n", label(key.first), label(key.second), goodput(f));
  header(out, "allot_work_lost_seconds_total", "counter", "Deprecated (removed in the next release): allot_work_lost_accelerator_seconds_total.");
  for (const Team& t : s.teams)
    if (!st.removed_teams.count(t.spec.name))
      out += fmt::format("allot_work_lost_seconds_total{{team=\"{}\"}} {}\n", label(t.spec.name), teams[t.id.index()].lost);
  header(out, "allot_goodput", "gauge", "Deprecated (removed in the next release): allot_goodput_ratio.");
  for (const Team& t : s.teams)
    if (!st.removed_teams.count(t.spec.name))
      out += fmt::format("allot_goodput{{team=\"{}\"}} {}\n", label(t.spec.name), goodput(teams[t.id.index()]));

  // Every check has its series from 0; a run counts once, under the first check (by name) it still waits for, as
  // its description names it.
  header(out, "allot_admission_check_waiting_runs", "gauge",
         "Running jobs whose replicas wait for an admission check to answer ready, by the first check they wait for");
  std::map<std::string, int> waiting;
  for (const auto& [name, c] : st.admission_checks) waiting[name] = 0;
  for (const Job& j : s.jobs)
    if (j.state == JobState::kRunning)
      if (const AdmissionCheckInfo* c = check_waited_for(st, j)) ++waiting[c->check.name];
  for (const auto& [name, n] : waiting) out += fmt::format("allot_admission_check_waiting_runs{{check=\"{}\"}} {}\n", label(name), n);

  header(out, "allot_build_info", "gauge", "The server's version, as a label; always 1.");
  out += fmt::format("allot_build_info{{version=\"{}\"}} 1\n", label(kVersion));
  return out;
}

std::string render_webhook_metrics(const WebhookSender::Counters& c) {
  std::string out;
  header(out, "allot_webhook_deliveries_total", "counter",
         "Webhook deliveries since this server started, by result: delivered (answered 2xx), failed (every try failed), "
         "dropped (the queue was full)");
  out += fmt::format("allot_webhook_deliveries_total{{result=\"delivered\"}} {}\n", c.delivered);
  out += fmt::format("allot_webhook_deliveries_total{{result=\"failed\"}} {}\n", c.failed);
  out += fmt::format("allot_webhook_deliveries_total{{result=\"dropped\"}} {}\n", c.dropped);
  header(out, "allot_webhook_retries_total", "counter", "Webhook tries after a delivery's first, since this server started");
  out += fmt::format("allot_webhook_retries_total {}\n", c.retries);
  header(out, "allot_webhook_queue_length", "gauge", "Webhook deliveries waiting, new and retrying");
  out += fmt::format("allot_webhook_queue_length {}\n", c.queued);
  return out;
}

std::string render_admission_checker_metrics(const AdmissionChecker::Counters& c) {
  std::string out;
  header(out, "allot_admission_check_tries_total", "counter",
         "Tries of HTTP admission checks since this server started, by result: answered (a usable answer, journaled) "
         "or failed (no connection, a timeout, a status other than 2xx, a body that is no answer)");
  out += fmt::format("allot_admission_check_tries_total{{result=\"answered\"}} {}\n", c.answers);
  out += fmt::format("allot_admission_check_tries_total{{result=\"failed\"}} {}\n", c.failures);
  header(out, "allot_admission_check_asks", "gauge", "HTTP admission checks that runs wait for now, each a (run, check) asked until it answers");
  out += fmt::format("allot_admission_check_asks {}\n", c.waiting);
  return out;
}

}  // namespace allot::server
