#include "server/views/dashboard_views.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>

#include "core/admission/admission.h"
#include "core/quota/cohort_share.h"
#include "core/quota/quota.h"
#include "server/views/lending_flows.h"
#include "server/views/views.h"
#include "server/views/wait_category.h"
#include "view/job_refs.h"
#include "view/state_json.h"
#include "view/times.h"

namespace allot::server {
using nlohmann::json;

namespace {

TypeId type_id(size_t t) { return TypeId(static_cast<uint32_t>(t)); }

Resources clamp_zero(Resources r) {
  r.accelerators = std::max<int64_t>(0, r.accelerators);
  r.vcpu_milli = std::max<int64_t>(0, r.vcpu_milli);
  r.memory_mib = std::max<int64_t>(0, r.memory_mib);
  return r;
}

const NodeHealth kHealthStates[] = {NodeHealth::kSchedulable, NodeHealth::kUnschedulablePendingReboot,
                                    NodeHealth::kUnschedulablePendingReplacement, NodeHealth::kUnschedulable};

std::string priority_of(const Job& j) { return j.spec.priority.empty() ? "none" : j.spec.priority; }

// Why a node needs attention, in a line: its last health change's reason when unhealthy, else why it is suspect.
std::string attention_reason(const ServerState& st, const Node& n) {
  auto info = st.nodes.find(n.name);
  if (info == st.nodes.end()) return "";
  if (n.health != NodeHealth::kSchedulable) return info->second.reason;
  if (n.suspect) return !info->second.exit_judging_reason.empty() ? info->second.exit_judging_reason : info->second.suspect_reason;
  return "";
}

// The job counts of the Cluster page and its recent failures (newest first): the active jobs from their indexes,
// the finished ones kept (retention bounds them) one by one.
constexpr Time kHour = 3600, kDay = 86400;
constexpr size_t kRecentFailures = 10;

json job_counts_and_failures(const ServerState& st, Time now, const auth::Caller& who) {
  const ClusterState& s = st.cluster;
  constexpr JobState kStates[] = {JobState::kPending, JobState::kRunning, JobState::kSuspended,
                                   JobState::kSucceeded, JobState::kFailed, JobState::kCancelled};
  std::array<int, std::size(kStates)> counts{};  // by JobState's value
  static_assert(static_cast<size_t>(JobState::kCancelled) + 1 == std::size(kStates));
  int kept = 0, failed_hour = 0, failed_day = 0;
  std::vector<const Job*> failed;  // the failed jobs the caller may read
  const view::SeesTeamJobs sees = job_names_for(who);
  // The active jobs from their indexes; the finished ones from theirs once retention keeps it (a server with
  // retention on, the default), else from a walk over every job. Either way no more jobs are touched than kept.
  counts[static_cast<size_t>(JobState::kRunning)] = static_cast<int>(s.running_jobs.size());
  for (JobId id : s.waiting_jobs) ++counts[static_cast<size_t>(s.jobs[id.index()].state)];
  kept = static_cast<int>(s.running_jobs.size() + s.waiting_jobs.size());
  auto finished = [&](const Job& j) {
    if (j.deleted || !j.team.valid() || is_active(j.state)) return;
    ++kept;
    ++counts[static_cast<size_t>(j.state)];
    if (j.state != JobState::kFailed) return;
    const Time at = finished_at(j);
    failed_hour += now - at <= kHour;
    failed_day += now - at <= kDay;
    if (who.role == auth::Role::kMember && !who.in_team(s.teams[j.team.index()].spec.name)) return;
    failed.push_back(&j);
  };
  if (s.finished_indexed) {
    for (const auto& [at, index] : s.finished_jobs) finished(s.jobs[index]);
  } else {
    for (const Job& j : s.jobs) finished(j);
  }
  const size_t shown = std::min(failed.size(), kRecentFailures);
  std::partial_sort(failed.begin(), failed.begin() + static_cast<std::ptrdiff_t>(shown), failed.end(), [](const Job* a, const Job* b) {
    return finished_at(*a) != finished_at(*b) ? finished_at(*a) > finished_at(*b) : a->id > b->id;
  });
  json recent = json::array();
  for (size_t i = 0; i < shown; ++i) {
    const Job& j = *failed[i];
    recent.push_back({{"name", j.spec.name}, {"team", s.teams[j.team.index()].spec.name}, {"failed_at", view::rfc3339(finished_at(j))},
                      {"reason_code", reason_code_name(j.reason_code)}, {"reason", view::hide_job_refs(j.reason, sees)}});
  }
  json jobs = json::object();
  for (JobState js : kStates) jobs[job_state_name(js)] = counts[static_cast<size_t>(js)];
  jobs["total"] = kept;  // the jobs kept: finished jobs leave after the retention (--retain-finished)
  return {{"jobs", jobs}, {"failed", {{"last_hour", failed_hour}, {"last_day", failed_day}}}, {"recent_failures", recent}};
}

}  // namespace

json cluster_summary(const ServerState& st, Time now, const auth::Caller& who) {
  const ClusterState& s = st.cluster;
  // Per type: what replicas hold, what is free where new work may land, and what is idle on nodes that take none.
  struct Split {
    int64_t total = 0, in_use = 0, free = 0, unhealthy = 0, cordoned = 0;
    json to_json() const {
      return {{"total", total}, {"in_use", in_use}, {"free", free}, {"unhealthy", unhealthy}, {"cordoned", cordoned}};
    }
    void add(int64_t cap, int64_t idle, const Node& n) {
      total += cap;
      in_use += cap - idle;
      if (n.health != NodeHealth::kSchedulable) unhealthy += idle;
      else if (n.cordoned) cordoned += idle;
      else free += idle;
    }
  };
  std::vector<Split> acc(s.catalog.size()), vcpu(s.catalog.size());
  std::vector<int> node_count(s.catalog.size(), 0);
  std::map<std::string, int> by_health;
  for (NodeHealth h : kHealthStates) by_health[node_health_name(h)] = 0;
  int cordoned = 0, suspect = 0, nodes = 0, attention_total = 0;
  const view::SeesTeamJobs sees = job_names_for(who);
  json attention = json::array();
  for (const Node& n : s.nodes) {
    if (n.removed) continue;
    ++nodes;
    const Resources cap = s.catalog.at(n.type).capacity();
    const Resources& free = s.room[n.id.index()].free;
    acc[n.type.index()].add(cap.accelerators, free.accelerators, n);
    vcpu[n.type.index()].add(cap.vcpu_milli / 1000, free.vcpu_milli / 1000, n);
    ++node_count[n.type.index()];
    ++by_health[node_health_name(n.health)];
    cordoned += n.cordoned;
    suspect += n.suspect;
    if (n.health != NodeHealth::kSchedulable || n.cordoned || n.suspect) {
      if (++attention_total <= 100)
        attention.push_back({{"name", n.name}, {"instance_type", s.catalog.at(n.type).name},
                             {"health", node_health_name(n.health)}, {"cordoned", n.cordoned}, {"suspect", n.suspect},
                             {"reason", view::scan_job_refs(attention_reason(st, n), sees)}});
    }
  }
  json types = json::array();
  std::vector<size_t> listed;
  for (size_t t = 0; t < s.catalog.size(); ++t) {
    if (node_count[t] == 0) continue;
    listed.push_back(t);
    types.push_back({{"instance_type", s.catalog.at(type_id(t)).name}, {"nodes", node_count[t]},
                     {"accelerators", acc[t].to_json()}, {"vcpu", vcpu[t].to_json()}});
  }
  // The chart's series: one per listed type, from the samples and a last point for now.
  json samples = json::array();
  auto add_sample = [&](const UtilisationSample& u) {
    json in_use = json::array(), total = json::array();
    for (size_t t : listed) {
      const auto v = t < u.in_use_of_total.size() ? u.in_use_of_total[t] : std::pair<int64_t, int64_t>{0, 0};
      in_use.push_back(v.first);
      total.push_back(v.second);
    }
    samples.push_back({{"at", view::rfc3339(u.at)}, {"in_use", in_use}, {"total", total}});
  };
  for (const auto& u : st.observed.utilisation) add_sample(u);
  add_sample(utilisation_now(s, now));
  json type_names = json::array();
  for (size_t t : listed) type_names.push_back(s.catalog.at(type_id(t)).name);
  json out = {{"now", view::rfc3339(now)},
              {"instance_types", types},
              {"nodes", nodes},
              {"nodes_by_health", by_health},
              {"cordoned", cordoned},
              {"suspect", suspect},
              {"attention", attention},
              {"attention_total", attention_total},
              {"utilisation", {{"instance_types", type_names}, {"every_s", Observed::kSampleEvery}, {"samples", samples}}}};
  out.update(job_counts_and_failures(st, now, who));
  return out;
}

json teams_summary(const ServerState& st) {
  const ClusterState& s = st.cluster;
  std::vector<std::array<int, 3>> counts(s.teams.size(), {0, 0, 0});  // pending, running, suspended
  for (JobId id : s.waiting_jobs) {
    const Job& j = s.jobs[id.index()];
    ++counts[j.team.index()][j.state == JobState::kPending ? 0 : 2];
  }
  for (JobId id : s.running_jobs) ++counts[s.jobs[id.index()].team.index()][1];
  std::vector<std::vector<Resources>> lent(s.catalog.size());
  for (size_t t = 0; t < s.catalog.size(); ++t) lent[t] = lent_by_team(s, s.usage, type_id(t));

  std::vector<const Team*> teams;
  for (const Team& t : s.teams)
    if (!st.removed_teams.count(t.spec.name)) teams.push_back(&t);
  std::sort(teams.begin(), teams.end(), [](const Team* a, const Team* b) { return a->spec.name < b->spec.name; });
  json out = json::array();
  for (const Team* t : teams) {
    json types = json::array();
    for (size_t ty = 0; ty < s.catalog.size(); ++ty) {
      const Resources nominal = ty < t->nominal.size() ? t->nominal[ty] : Resources{};
      const Resources& usage = s.usage[t->id.index()][ty];
      if (nominal.is_zero() && usage.is_zero()) continue;
      types.push_back({{"instance_type", s.catalog.at(type_id(ty)).name},
                       {"nominal", view::resources_json(nominal)},
                       {"max", view::resources_json(team_max(*t, type_id(ty)))},
                       {"usage", view::resources_json(usage)},
                       {"borrowed", view::resources_json(borrowed(s, s.usage, t->id, type_id(ty)))},
                       {"lent", view::resources_json(lent[ty][t->id.index()])}});
    }
    const Share share = fair_share_value(s, s.usage, t->id);
    const auto& c = counts[t->id.index()];
    out.push_back({{"name", t->spec.name},
                   {"fair_share_weight", t->spec.fair_share_weight},
                   // borrowed dominant share / weight (quota.h); null when the weight is 0 (infinite)
                   {"share", share.den == 0 ? json(nullptr) : json(static_cast<double>(share.num) / static_cast<double>(share.den))},
                   {"strategy", sharing_strategy_name(t->spec.strategy)},
                   {"borrow_limit", t->spec.borrow_limit},
                   {"borrowing", team_borrowing(s, s.usage, t->id)},
                   {"jobs", {{"pending", c[0]}, {"running", c[1]}, {"suspended", c[2]}}},
                   {"instance_types", types}});
    if (!t->spec.group.empty()) out.back()["group"] = t->spec.group;
  }
  // The cohort tree (docs/scheduling.md, "Cohort trees"): every group with its parent, weight and share, in the
  // policy's order, for the page to draw the teams as the tree; empty in a cluster without groups.
  json groups = json::array();
  const std::vector<GroupShare> shares = group_shares(s, s.usage);
  for (size_t g = 0; g < s.cohorts.groups.size(); ++g) {
    const GroupSpec& spec = s.cohorts.groups[g].spec;
    const Share& sh = shares[g].share;
    groups.push_back({{"name", spec.name},
                      {"parent", spec.parent.empty() ? json(nullptr) : json(spec.parent)},
                      {"fair_share_weight", spec.fair_share_weight},
                      {"share", sh.den == 0 ? json(nullptr) : json(static_cast<double>(sh.num) / static_cast<double>(sh.den))}});
  }
  json cohort = json::array();
  for (size_t ty = 0; ty < s.catalog.size(); ++ty) {
    const Resources capacity = s.type_capacity(type_id(ty));
    Resources nominal;
    for (const Team* t : teams)
      if (ty < t->nominal.size()) nominal += t->nominal[ty];
    if (capacity.is_zero() && nominal.is_zero()) continue;
    const Resources pool = pool_capacity(s, type_id(ty));
    const Resources used = pool_used(s, s.usage, type_id(ty));
    json lending = json::array();
    for (const LendingFlow& f : lending_flows(s, type_id(ty)))
      lending.push_back({{"from", f.lender ? json(s.teams[f.lender->index()].spec.name) : json(nullptr)},
                         {"to", s.teams[f.borrower.index()].spec.name},
                         {"amount", view::resources_json(f.amount)}});
    cohort.push_back({{"instance_type", s.catalog.at(type_id(ty)).name},
                      {"capacity", view::resources_json(capacity)},
                      {"nominal", view::resources_json(nominal)},
                      {"pool", view::resources_json(pool)},
                      {"pool_used", view::resources_json(used)},
                      {"idle", view::resources_json(clamp_zero(pool - used))},
                      {"lending", lending}});
  }
  return {{"teams", out}, {"groups", groups}, {"cohort", cohort}};
}

void refresh_queue(QueueCache& cache, const ServerState& st, Time now) {
  // Expected ends pass with time alone: an unchanged state still gets fresh estimates now and then.
  if (cache.version == st.version && now - cache.computed_at < QueueCache::kEstimatesFor) return;
  const ClusterState& s = st.cluster;
  cache.version = st.version;
  cache.computed_at = now;
  // The scheduler's queue order (core/pass/scheduler.cpp): priority weight first under task-ranking, then arrival.
  const bool by_priority = s.policy.task_prioritization == TaskPrioritization::kTaskRanking;
  struct Key {
    int priority;
    uint64_t arrival;
    JobId id;
  };
  std::vector<Key> keys;
  keys.reserve(s.waiting_jobs.size());
  for (JobId id : s.waiting_jobs) {
    const Job& j = s.jobs[id.index()];
    keys.push_back({by_priority ? j.priority : 0, j.arrival, id});
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.arrival < b.arrival;
  });
  cache.order.clear();
  for (const Key& k : keys) cache.order.push_back(k.id);

  // Estimated start, from capacity alone: per instance type, the accelerators free on schedulable nodes now plus
  // those the running jobs with a known duration give back at their expected ends. A job's estimate is the first
  // time enough have come free for it and every job ahead of it on that type; quota or topology may delay it
  // further. Jobs that would fit in what is free now are blocked by something else, and get no estimate.
  std::vector<int64_t> free(s.catalog.size(), 0);
  for (const Node& n : s.nodes)
    if (n.schedulable()) free[n.type.index()] += s.room[n.id.index()].free.accelerators;
  std::vector<std::vector<std::pair<Time, int64_t>>> ends(s.catalog.size());
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (!j.spec.duration_s) continue;
    const Time end = std::max(now, j.started_at + *j.spec.duration_s - j.work_done_s);
    for (const auto& ps : j.placement.pod_sets)
      ends[ps.type.index()].push_back({end, ps.per_replica.accelerators * static_cast<int64_t>(ps.replicas.size())});
  }
  for (auto& e : ends) std::sort(e.begin(), e.end());
  std::vector<int64_t> demand(s.catalog.size(), 0);
  cache.estimated_start.assign(cache.order.size(), std::nullopt);
  cache.estimate_from_reservation.reset();
  for (size_t i = 0; i < cache.order.size(); ++i) {
    const Job& j = s.jobs[cache.order[i].index()];
    auto types = candidate_types(s, j);
    if (types.empty()) continue;
    auto request = job_request(s, j, types[0], nullptr);
    if (request.size() != 1 || request[0].second.accelerators <= 0) continue;
    const size_t t = request[0].first.index();
    demand[t] += request[0].second.accelerators;
    if (demand[t] <= free[t]) continue;
    int64_t have = free[t];
    for (const auto& [at, n] : ends[t]) {
      have += n;
      if (have >= demand[t]) {
        cache.estimated_start[i] = at;
        break;
      }
    }
  }
  // The backfill reservation's holder starts by its reserved time (docs/scheduling.md, "Backfill"), whatever the
  // declared durations say; it still counts in the demand above for the jobs behind it.
  if (st.reservation)
    for (size_t i = 0; i < cache.order.size(); ++i)
      if (cache.order[i] == st.reservation->holder) {
        cache.estimated_start[i] = std::max(now, st.reservation->at);
        cache.estimate_from_reservation = i;
        break;
      }
}

json queue_page(const QueueCache& cache, const ServerState& st, const QueueQuery& q, const auth::Caller& who, Time now) {
  const ClusterState& s = st.cluster;
  const bool own_only = who.role == auth::Role::kMember;
  const view::SeesTeamJobs sees = job_names_for(who);
  json items = json::array();
  size_t matched = 0, hidden = 0;
  for (size_t i = 0; i < cache.order.size(); ++i) {
    const Job& j = s.jobs[cache.order[i].index()];
    const std::string& team = s.teams[j.team.index()].spec.name;
    if (!q.team.empty() && team != q.team) continue;
    if (!q.priority.empty() && priority_of(j) != q.priority) continue;
    if (q.state && j.state != *q.state) continue;
    if (own_only && !who.in_team(team)) {
      ++hidden;  // whatever `job` names: the count must not tell a member whether another team's job of a name waits
      continue;
    }
    if (!q.job.empty() && j.spec.name != q.job) continue;
    if (matched++ < q.offset || items.size() >= q.limit) continue;
    int64_t accelerators = 0;
    for (const auto& ps : j.spec.pod_sets) accelerators += ps.replicas * ps.per_replica.accelerators.value_or(0);
    // The types it may run on: those its pod sets name, or every type its team may use for those that name none.
    json types = json::array();
    for (TypeId t : candidate_types(s, j)) types.push_back(s.catalog.at(t).name);
    const WaitCategory category = wait_category(j.reason_code, j.feasible);
    json item = {{"position", i + 1},     {"name", j.spec.name}, {"team", team},
                 {"priority", priority_of(j)}, {"state", job_state_name(j.state)}, {"reason", view::hide_job_refs(j.reason, sees)},
                 {"reason_code", reason_code_name(j.reason_code)},
                 {"wait", {{"category", wait_category_name(category)}, {"label", wait_category_label(category)}}},
                 {"never_fits", category == WaitCategory::kNeverFits}, {"instance_types", types},
                 {"submitted_at", view::rfc3339(j.submitted_at)}, {"waited_s", std::max<Time>(0, now - j.waiting_since)},
                 {"accelerators", accelerators}, {"preemptions", j.preemptions}, {"restarts", j.restarts}};
    if (cache.estimated_start[i]) {
      item["estimated_start"] = view::rfc3339(*cache.estimated_start[i]);
      item["estimate_from"] = cache.estimate_from_reservation == i ? "reservation" : "durations";
    }
    items.push_back(std::move(item));
  }
  json out = {{"total", cache.order.size()}, {"matched", matched}, {"offset", q.offset}, {"items", items},
              {"estimates_at", view::rfc3339(cache.computed_at)}};
  if (own_only) out["hidden"] = hidden;
  return out;
}

json topology_summary(const ServerState& st) {
  const ClusterState& s = st.cluster;
  json tree = topology_json(s);
  // Leaves name nodes; each gets what the page colours it by.
  std::function<void(json&)> enrich = [&](json& list) {
    for (json& d : list) {
      if (d.contains("children")) {
        enrich(d["children"]);
        continue;
      }
      const Node* n = s.find_node(d["node"].get<std::string>());
      if (!n) continue;
      const int64_t cap = s.catalog.at(n->type).capacity().accelerators;
      d["instance_type"] = s.catalog.at(n->type).name;
      d["health"] = node_health_name(n->health);
      d["cordoned"] = n->cordoned;
      d["suspect"] = n->suspect;
      d["accelerators"] = cap;
      d["in_use"] = cap - s.room[n->id.index()].free.accelerators;
      d["replicas"] = s.room[n->id.index()].replicas;
    }
  };
  enrich(tree["domains"]);
  return tree;
}

}  // namespace allot::server
