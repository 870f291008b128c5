#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "server/options.h"
#include "server/views.h"
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

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string render_metrics(const ServerState& st) {
  const ClusterState& s = st.cluster;
  std::string out;
  out.reserve(4096);

  header(out, "allot_jobs", "gauge", "Jobs per team and state.");
  std::vector<std::array<uint64_t, 6>> jobs(s.teams.size());
  for (const Job& j : s.jobs) ++jobs[j.team.index()][static_cast<int>(j.state)];
  for (const Team& t : s.teams) {
    if (st.removed_teams.count(t.spec.name)) continue;
    for (int k = 0; k < 6; ++k)
      out += fmt::format("allot_jobs{{team=\"{}\",state=\"{}\"}} {}\n", label(t.spec.name),
                         job_state_name(static_cast<JobState>(k)), jobs[t.id.index()][k]);
  }

  struct Family {
    const char* name;
    const char* help;
    Resources (*total)(const ClusterState&, TeamId);
  };
  const Family families[] = {
      {"allot_quota", "Nominal quota per team and resource, over all instance types.", view::team_nominal_total},
      {"allot_usage", "What each team's running jobs hold.", view::team_usage_total},
      {"allot_borrowed", "What each team holds above its nominal quota.", view::team_borrowed_total},
      {"allot_lent", "What each team's idle quota lends to others.", view::team_lent_total},
  };
  for (const Family& f : families) {
    header(out, f.name, "gauge", f.help);
    for (const Team& t : s.teams) {
      if (st.removed_teams.count(t.spec.name)) continue;
      Resources r = f.total(s, t.id);
      for (Resource res : kAllResources)
        out += fmt::format("{}{{team=\"{}\",resource=\"{}\"}} {}\n", f.name, label(t.spec.name), resource_name(res),
                           in_units(r, res));
    }
  }

  header(out, "allot_admissions_total", "counter", "Admissions decided by the scheduler.");
  out += fmt::format("allot_admissions_total {}\n", st.admissions_total);
  header(out, "allot_preemptions_total", "counter", "Preemptions decided by the scheduler.");
  out += fmt::format("allot_preemptions_total {}\n", st.preemptions_total);

  header(out, "allot_scheduling_latency_seconds", "histogram", "From submission to first admission.");
  const LatencyHistogram& h = st.scheduling_latency;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
    cumulative += h.counts[i];
    out += fmt::format("allot_scheduling_latency_seconds_bucket{{le=\"{}\"}} {}\n", LatencyHistogram::kBounds[i], cumulative);
  }
  out += fmt::format("allot_scheduling_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", h.count);
  out += fmt::format("allot_scheduling_latency_seconds_sum {}\n", h.sum);
  out += fmt::format("allot_scheduling_latency_seconds_count {}\n", h.count);

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

  // Resiliency (docs/resiliency.md): each node's health checks, and restarts, work lost and goodput per team.
  std::vector<std::pair<std::string, const NodeInfo*>> agents;
  for (const auto& [name, info] : st.nodes)
    if (info.agent && s.find_node(name)) agents.push_back({name, &info});
  std::sort(agents.begin(), agents.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  header(out, "allot_node_check_failed", "gauge", "1 when the node's health check failed at its last run, else 0 (skipped checks are left out).");
  for (const auto& [name, info] : agents)
    for (const NodeCheck& c : info->checks)
      if (c.status != "skipped")
        out += fmt::format("allot_node_check_failed{{node=\"{}\",check=\"{}\"}} {}\n", label(name), label(c.name), c.status == "failed" ? 1 : 0);
  header(out, "allot_node_check_timestamp_seconds", "gauge", "When the node's health check last ran (Unix seconds).");
  for (const auto& [name, info] : agents)
    for (const NodeCheck& c : info->checks)
      out += fmt::format("allot_node_check_timestamp_seconds{{node=\"{}\",check=\"{}\",status=\"{}\"}} {}\n", label(name),
                         label(c.name), c.status, c.at_ms / 1000);
  const Time now = static_cast<Time>(system_clock_ms() / 1000);
  struct TeamFigures {
    int64_t restarts = 0, held = 0, lost = 0;
  };
  std::vector<TeamFigures> teams(s.teams.size());
  for (const Job& j : s.jobs) {
    int64_t held = 0, lost = 0;
    (void)job_goodput(st, j, now, &held, &lost);
    TeamFigures& f = teams[j.team.index()];
    f.restarts += j.restarts;
    f.held += held;
    f.lost += lost;
  }
  header(out, "allot_job_restarts_total", "counter", "Restarts of jobs after failures (node or process), per team.");
  for (const Team& t : s.teams)
    if (!st.removed_teams.count(t.spec.name))
      out += fmt::format("allot_job_restarts_total{{team=\"{}\"}} {}\n", label(t.spec.name), teams[t.id.index()].restarts);
  header(out, "allot_work_lost_seconds_total", "counter", "Accelerator-seconds (replica-seconds for CPU jobs) of work lost since the last checkpoint when runs ended, per team.");
  for (const Team& t : s.teams)
    if (!st.removed_teams.count(t.spec.name))
      out += fmt::format("allot_work_lost_seconds_total{{team=\"{}\"}} {}\n", label(t.spec.name), teams[t.id.index()].lost);
  header(out, "allot_goodput", "gauge", "Useful over held accelerator-seconds of the team's jobs (1 when none ran).");
  for (const Team& t : s.teams) {
    if (st.removed_teams.count(t.spec.name)) continue;
    const TeamFigures& f = teams[t.id.index()];
    out += fmt::format("allot_goodput{{team=\"{}\"}} {}\n", label(t.spec.name), f.held > 0 ? static_cast<double>(f.held - f.lost) / static_cast<double>(f.held) : 1.0);
  }
  return out;
}

}  // namespace allot::server
