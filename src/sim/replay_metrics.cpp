// Replay metrics; every definition is written out in replay_metrics.h beside the declarations.
#include "sim/replay_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

namespace allot::sim {
namespace {

constexpr const char* kNoTeam = "(none)";

// Raw material of one group (all jobs, one team, one size bucket) before the statistics are taken.
struct Acc {
  int64_t jobs = 0, preemptions = 0, held_s = 0, borrowed_s = 0;
  std::vector<int64_t> queue, jct;

  void add(const JobRecord& j) {
    ++jobs;
    preemptions += j.preemptions;
    held_s += j.total_gpu_seconds_held;
    borrowed_s += j.borrowed_gpu_seconds;
    if (j.first_start_s >= 0) queue.push_back(j.first_start_s - j.submit_s);
    if (j.end_s >= 0) jct.push_back(j.end_s - j.submit_s);
  }
};

DelayStats stats_of(const std::vector<int64_t>& v) {
  DelayStats s;
  s.count = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  s.avg_s = static_cast<double>(std::accumulate(v.begin(), v.end(), int64_t{0})) / static_cast<double>(v.size());
  s.p50_s = percentile_nearest_rank(v, 50);
  s.p99_s = percentile_nearest_rank(v, 99);
  return s;
}

GroupMetrics finish(const Acc& a) {
  return {.jobs = a.jobs,
          .queue = stats_of(a.queue),
          .jct = stats_of(a.jct),
          .preemptions = a.preemptions,
          .gpu_hours = static_cast<double>(a.held_s) / 3600.0,
          .borrowed_gpu_hours = static_cast<double>(a.borrowed_s) / 3600.0};
}

double ratio(double num, double den, double if_empty) { return den > 0 ? num / den : if_empty; }

// JSON carries 6 decimals: enough for every figure here, and diffs between runs stay readable.
double r6(double x) { return std::round(x * 1e6) / 1e6; }

nlohmann::json group_json(const GroupMetrics& g) {
  return {{"jobs", g.jobs},
          {"avg_queue_s", r6(g.queue.avg_s)},
          {"p50_queue_s", g.queue.p50_s},
          {"p99_queue_s", g.queue.p99_s},
          {"avg_jct_s", r6(g.jct.avg_s)},
          {"p50_jct_s", g.jct.p50_s},
          {"p99_jct_s", g.jct.p99_s},
          {"preemptions", g.preemptions},
          {"gpu_hours", r6(g.gpu_hours)},
          {"borrowed_gpu_hours", r6(g.borrowed_gpu_hours)}};
}

std::string printf_string(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

int64_t percentile_nearest_rank(std::vector<int64_t> values, double p) {
  if (values.empty()) return 0;
  const auto n = static_cast<int64_t>(values.size());
  // p x n is exact for whole p and any realistic n, so a whole rank (p = 50, n = 4 -> 2) is not pushed up.
  auto rank = static_cast<int64_t>(std::ceil(p * static_cast<double>(n) / 100.0));
  rank = std::clamp<int64_t>(rank, 1, n);
  std::nth_element(values.begin(), values.begin() + (rank - 1), values.end());
  return values[rank - 1];
}

const char* size_bucket(int gpus) {
  if (gpus <= 1) return "1";
  if (gpus <= 8) return "2-8";
  if (gpus <= 64) return "9-64";
  return "65+";
}

ReplayMetrics compute_metrics(const std::vector<JobRecord>& jobs, const ClusterInfo& cluster,
                              const std::vector<Sample>& samples) {
  ReplayMetrics m;
  m.total_gpus = cluster.total_gpus;

  Acc all;
  std::map<std::string, Acc> team_acc, size_acc;
  for (const TeamEntitlement& t : cluster.teams) team_acc[t.name.empty() ? kNoTeam : t.name];
  int64_t useful_s = 0, multi_started = 0, multi_one_domain = 0, multi_domains = 0, fit_started = 0, fit_one_domain = 0;
  int64_t first_submit = jobs.empty() ? 0 : jobs.front().submit_s, last_event = first_submit;
  for (const JobRecord& j : jobs) {
    all.add(j);
    team_acc[j.team.empty() ? kNoTeam : j.team].add(j);
    size_acc[size_bucket(j.gpus)].add(j);
    useful_s += j.useful_gpu_seconds;
    m.restarts += j.restarts;
    if (j.first_start_s < 0) ++m.unstarted_jobs;
    if (j.end_s >= 0) ++m.finished_jobs;
    if (j.multi_node && j.first_start_s >= 0) {
      ++multi_started;
      multi_domains += j.domains_used;
      if (j.domains_used == 1) ++multi_one_domain;
      if (j.fits_one_domain) {
        ++fit_started;
        if (j.domains_used == 1) ++fit_one_domain;
      }
    }
    first_submit = std::min(first_submit, j.submit_s);
    last_event = std::max({last_event, j.submit_s, j.first_start_s, j.end_s});
  }
  m.unfinished_jobs = all.jobs - m.finished_jobs;
  for (const Sample& s : samples) last_event = std::max(last_event, s.t);
  if (jobs.empty() && !samples.empty()) {
    first_submit = std::min_element(samples.begin(), samples.end(), [](auto& a, auto& b) { return a.t < b.t; })->t;
  }
  m.start_s = first_submit;
  m.makespan_s = std::max<int64_t>(0, last_event - first_submit);

  m.all = finish(all);
  m.utilization =
      ratio(static_cast<double>(all.held_s), static_cast<double>(m.total_gpus) * static_cast<double>(m.makespan_s), 0);
  m.goodput = ratio(static_cast<double>(useful_s), static_cast<double>(all.held_s), 1);
  m.multi_node_jobs = multi_started;
  m.locality_one_domain_share = ratio(static_cast<double>(multi_one_domain), static_cast<double>(multi_started), 1);
  m.avg_domains_per_job = ratio(static_cast<double>(multi_domains), static_cast<double>(multi_started), 0);
  m.fit_one_domain_jobs = fit_started;
  m.locality_fit_one_domain_share = ratio(static_cast<double>(fit_one_domain), static_cast<double>(fit_started), 1);

  // Step-function integrals over the samples, in time order; the last sample lasts until the makespan ends.
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return samples[a].t < samples[b].t; });
  const size_t n_teams = cluster.teams.size();
  double busy_all = 0, busy_contended = 0;
  std::vector<double> team_all(n_teams, 0), team_contended(n_teams, 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const Sample& s = samples[order[k]];
    const int64_t next = k + 1 < order.size() ? samples[order[k + 1]].t : first_submit + m.makespan_s;
    const auto dt = static_cast<double>(std::max<int64_t>(0, next - s.t));
    const bool contended = s.queued_jobs > 0;
    if (contended) m.contended_s += static_cast<int64_t>(dt);
    busy_all += static_cast<double>(s.busy_gpus) * dt;
    if (contended) busy_contended += static_cast<double>(s.busy_gpus) * dt;
    for (size_t i = 0; i < n_teams && i < s.team_busy_gpus.size(); ++i) {
      const double used = static_cast<double>(s.team_busy_gpus[i]) * dt;
      team_all[i] += used;
      if (contended) team_contended[i] += used;
    }
  }

  int64_t entitled_sum = 0;
  for (const TeamEntitlement& t : cluster.teams) entitled_sum += t.entitled_gpus;
  for (auto& [name, acc] : team_acc) m.teams[name].group = finish(acc);
  for (size_t i = 0; i < n_teams; ++i) {
    TeamMetrics& t = m.teams[cluster.teams[i].name.empty() ? kNoTeam : cluster.teams[i].name];
    t.entitled_gpus = cluster.teams[i].entitled_gpus;
    t.entitled_share = ratio(static_cast<double>(t.entitled_gpus), static_cast<double>(entitled_sum), 0);
    t.received_share = busy_contended > 0 ? team_contended[i] / busy_contended : ratio(team_all[i], busy_all, 0);
  }
  std::vector<double> served;  // received / entitled, per team that is entitled to something and had jobs
  for (const auto& [name, t] : m.teams)
    if (t.entitled_share > 0 && t.group.jobs > 0) served.push_back(t.received_share / t.entitled_share);
  m.fairness_jain = jain_index(served);
  for (auto& [name, acc] : size_acc) m.sizes[name] = finish(acc);
  if (cluster.backfill) {
    BackfillMetrics b;
    int64_t started = 0;
    std::vector<int64_t> delays;
    for (const JobRecord& j : jobs) {
      if (j.first_start_s < 0) continue;
      ++started;
      b.backfilled_jobs += j.backfilled;
      if (j.held_start_s >= 0) {
        ++b.held_to_start_jobs;
        b.held_to_start_late_jobs += j.first_start_s > j.held_start_s;
      }
      if (j.reserved_start_s < 0) continue;
      delays.push_back(j.first_start_s - j.reserved_start_s);
      b.late_jobs += j.first_start_s > j.reserved_start_s;
    }
    b.backfilled_share = ratio(static_cast<double>(b.backfilled_jobs), static_cast<double>(started), 0);
    b.reserved_jobs = static_cast<int64_t>(delays.size());
    b.reservation_delay = stats_of(delays);
    m.backfill = b;
  }
  return m;
}

double jain_index(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  return squares > 0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 1;
}

nlohmann::json to_json(const ReplayMetrics& m) {
  nlohmann::json j = {
      {"jobs", m.all.jobs},
      {"finished_jobs", m.finished_jobs},
      {"unstarted_jobs", m.unstarted_jobs},
      {"unfinished_jobs", m.unfinished_jobs},
      {"total_gpus", m.total_gpus},
      {"makespan_s", m.makespan_s},
      {"utilization", r6(m.utilization)},
      {"avg_queue_s", r6(m.all.queue.avg_s)},
      {"p50_queue_s", m.all.queue.p50_s},
      {"p99_queue_s", m.all.queue.p99_s},
      {"avg_jct_s", r6(m.all.jct.avg_s)},
      {"p50_jct_s", m.all.jct.p50_s},
      {"p99_jct_s", m.all.jct.p99_s},
      {"preemptions", m.all.preemptions},
      {"restarts", m.restarts},
      {"gpu_hours", r6(m.all.gpu_hours)},
      {"borrowed_gpu_hours", r6(m.all.borrowed_gpu_hours)},
      {"multi_node_jobs", m.multi_node_jobs},
      {"locality_one_domain_share", r6(m.locality_one_domain_share)},
      {"avg_domains_per_job", r6(m.avg_domains_per_job)},
      {"fit_one_domain_jobs", m.fit_one_domain_jobs},
      {"locality_fit_one_domain_share", r6(m.locality_fit_one_domain_share)},
      {"goodput", r6(m.goodput)},
      {"fairness_jain", r6(m.fairness_jain)},
      {"contended_s", m.contended_s},
  };
  nlohmann::json teams = nlohmann::json::object();
  for (const auto& [name, t] : m.teams) {
    nlohmann::json tj = group_json(t.group);
    tj["entitled_gpus"] = t.entitled_gpus;
    tj["entitled_share"] = r6(t.entitled_share);
    tj["received_share"] = r6(t.received_share);
    teams[name] = std::move(tj);
  }
  j["teams"] = std::move(teams);
  nlohmann::json sizes = nlohmann::json::object();
  for (const auto& [name, g] : m.sizes) sizes[name] = group_json(g);
  j["sizes"] = std::move(sizes);
  if (m.backfill)
    j["backfill_figures"] = {{"backfilled_jobs", m.backfill->backfilled_jobs},
                     {"backfilled_share", r6(m.backfill->backfilled_share)},
                     {"reserved_jobs", m.backfill->reserved_jobs},
                     {"avg_reservation_delay_s", r6(m.backfill->reservation_delay.avg_s)},
                     {"p50_reservation_delay_s", m.backfill->reservation_delay.p50_s},
                     {"p99_reservation_delay_s", m.backfill->reservation_delay.p99_s},
                     {"late_jobs", m.backfill->late_jobs},
                     {"held_to_start_jobs", m.backfill->held_to_start_jobs},
                     {"held_to_start_late_jobs", m.backfill->held_to_start_late_jobs}};
  return j;
}

std::string format_summary(const ReplayMetrics& m) {
  std::string out;
  auto line = [&](const char* label, const std::string& value) {
    out += printf_string("%-16s%s\n", label, value.c_str());
  };
  line("jobs", printf_string("%lld (%lld finished, %lld never started)", (long long)m.all.jobs,
                             (long long)m.finished_jobs, (long long)m.unstarted_jobs));
  line("makespan", printf_string("%lld s (%.1f h)", (long long)m.makespan_s, m.makespan_s / 3600.0));
  line("utilization", printf_string("%.3f of %lld GPUs", m.utilization, (long long)m.total_gpus));
  line("queueing delay", printf_string("avg %.0f s, p50 %lld s, p99 %lld s", m.all.queue.avg_s,
                                       (long long)m.all.queue.p50_s, (long long)m.all.queue.p99_s));
  line("JCT", printf_string("avg %.0f s, p50 %lld s, p99 %lld s", m.all.jct.avg_s, (long long)m.all.jct.p50_s,
                            (long long)m.all.jct.p99_s));
  line("preemptions", printf_string("%lld (restarts %lld)", (long long)m.all.preemptions, (long long)m.restarts));
  line("borrowed", printf_string("%.1f GPU-hours of %.1f", m.all.borrowed_gpu_hours, m.all.gpu_hours));
  line("locality", printf_string("%.3f of %lld multi-node jobs in one domain (avg %.2f domains); %.3f of the %lld that "
                                 "fit one", m.locality_one_domain_share, (long long)m.multi_node_jobs,
                                 m.avg_domains_per_job, m.locality_fit_one_domain_share, (long long)m.fit_one_domain_jobs));
  line("goodput", printf_string("%.3f", m.goodput));
  line("fairness (Jain)", printf_string("%.3f over teams' received / entitled shares", m.fairness_jain));
  if (m.backfill) {
    const BackfillMetrics& b = *m.backfill;
    line("backfill", printf_string("%lld jobs backfilled (%.3f of those that started); %lld held a reservation: start - "
                                   "planned avg %.0f s, p50 %lld s, p99 %lld s, %lld later than planned; %lld held it "
                                   "until they started, %lld of them late",
                                   (long long)b.backfilled_jobs, b.backfilled_share, (long long)b.reserved_jobs,
                                   b.reservation_delay.avg_s, (long long)b.reservation_delay.p50_s,
                                   (long long)b.reservation_delay.p99_s, (long long)b.late_jobs,
                                   (long long)b.held_to_start_jobs, (long long)b.held_to_start_late_jobs));
  }

  size_t w = 4;
  for (const auto& [name, t] : m.teams) w = std::max(w, name.size());
  const int wi = static_cast<int>(w);
  out += printf_string("\n%-*s %7s %11s %9s %9s %11s %11s\n", wi, "team", "jobs", "gpu_hours", "entitled", "received",
                       "avg_queue_s", "p99_queue_s");
  for (const auto& [name, t] : m.teams) {
    out += printf_string("%-*s %7lld %11.1f %9.3f %9.3f %11.0f %11lld\n", wi, name.c_str(), (long long)t.group.jobs,
                         t.group.gpu_hours, t.entitled_share, t.received_share, t.group.queue.avg_s,
                         (long long)t.group.queue.p99_s);
  }
  out += printf_string("\n%-*s %7s %11s %11s %11s %11s\n", wi, "size", "jobs", "gpu_hours", "avg_queue_s",
                       "p99_queue_s", "avg_jct_s");
  for (const char* bucket : {"1", "2-8", "9-64", "65+"}) {
    auto it = m.sizes.find(bucket);
    if (it == m.sizes.end()) continue;
    const GroupMetrics& g = it->second;
    out += printf_string("%-*s %7lld %11.1f %11.0f %11lld %11.0f\n", wi, bucket, (long long)g.jobs, g.gpu_hours,
                         g.queue.avg_s, (long long)g.queue.p99_s, g.jct.avg_s);
  }
  return out;
}

}  // namespace allot::sim
