// `allot sim bench [--gpus N] [--teams N] [--pending N] [--seed N] [--probes N] [--users N] [--json]`: the core at scale
// (DESIGN.md, "Performance targets"). Builds the scale model of sim/scale_cluster.h, submits every job, then
// measures on one core:
//   admissions_per_second     jobs admitted by the first scheduler pass over the whole queue / its wall time
//                             (placement, quota, ordering and the reason for every job left waiting included);
//   refill_admissions_per_second  after a tenth of the running jobs finish, the same for the pass that refills;
//   preemption_p50/p99_ms     the preemption decision (victim choice with trial placements) for probe jobs of
//                             teams below their quota on the full cluster: half single nodes, half 4 nodes with a
//                             required layer-3 domain; each probe is cancelled after, so all see the same state;
//   peak_rss_mib              the process's peak resident memory.
// --reserved-nodes N reserves the first N nodes for the first team (an Active reservation, core/model/reservations.h)
// before anything is submitted: every other team's placements then see those nodes closed.
// Wall-clock figures vary with the machine: quote medians of several runs.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/preemption/preemption.h"
#include "core/pass/scheduler.h"
#include "sim/scale_cluster.h"

namespace allot::cli {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct BenchArgs {
  sim::ScaleConfig config;
  int probes = 200;
  int reserved_nodes = 0;
  bool json = false;
};

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

double percentile_ms(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

int64_t admissions(const ScheduleResult& r) {
  return std::count_if(r.decisions.begin(), r.decisions.end(),
                       [](const Decision& d) { return std::holds_alternative<AdmitDecision>(d); });
}

int sim_bench(const BenchArgs& a) {
  const auto& c = a.config;
  if (c.gpus < 8 || c.gpus > 1000000 || c.teams < 1 || c.teams > 10000 || c.pending < 0 || c.pending > 2000000 ||
      a.probes < 0 || a.probes > 100000 || c.users_per_team < 0 || c.users_per_team > 1000) {
    std::cerr << "allot sim bench: --gpus must be 8..1000000, --teams 1..10000, --pending 0..2000000, --probes 0..100000, "
                 "--users 0..1000\n";
    return 2;
  }
  sim::ScaleModel model = sim::make_scale_model(c);
  ClusterState s = sim::scale_state(model);
  if (a.reserved_nodes < 0 || static_cast<size_t>(a.reserved_nodes) > s.nodes.size()) {
    std::cerr << "allot sim bench: --reserved-nodes must be 0.." << s.nodes.size() << " (the nodes of the cluster)\n";
    return 2;
  }
  if (a.reserved_nodes > 0) {
    ReservationSpec r{.name = "bench", .team = s.teams.front().spec.name, .start = 0, .end = 1'000'000'000};
    for (int i = 0; i < a.reserved_nodes; ++i) r.nodes.push_back(s.nodes[static_cast<size_t>(i)].name);
    if (auto st = add_reservation(s, r); !st) {
      std::cerr << "allot sim bench: " << st.error().message << "\n";
      return 3;
    }
    if (auto st = apply_reservation_step(s, "bench", ReservationState::kActive, 0); !st) {
      std::cerr << "allot sim bench: " << st.error().message << "\n";
      return 3;
    }
  }

  auto t0 = Clock::now();
  for (const auto& j : model.jobs)
    if (auto id = submit_job(s, j, 0); !id) {
      std::cerr << "allot sim bench: " << id.error().message << "\n";
      return 3;
    }
  double submit_s = seconds_since(t0);

  t0 = Clock::now();
  FitCache fits;  // as the server and the simulator keep one across passes (core/placement/fit_cache.h)
  ScheduleResult first = schedule(s, 0, ScheduleOptions{.fit_cache = &fits});
  double first_s = seconds_since(t0);
  int64_t admitted = admissions(first);
  int64_t running = static_cast<int64_t>(s.running_jobs.size());

  // A tenth of the running jobs finish; the next pass refills the room they leave.
  std::vector<JobId> done = s.running_jobs.sorted();
  done.resize(done.size() / 10);
  for (JobId id : done) (void)finish_job(s, s.jobs[id.index()].spec.name, 60, true);
  t0 = Clock::now();
  ScheduleResult refill = schedule(s, 60, ScheduleOptions{.fit_cache = &fits});
  double refill_s = seconds_since(t0);

  // Preemption decisions for probes of teams below their nominal quota.
  std::vector<std::string> under;
  for (const Team& t : s.teams) {
    int64_t used = 0, nominal = 0;
    for (size_t k = 0; k < t.nominal.size(); ++k) {
      used += s.usage[t.id.index()][k].accelerators;
      nominal += t.nominal[k].accelerators;
    }
    if (used + 32 <= nominal) under.push_back(t.spec.name);
  }
  std::vector<double> decision_ms;
  int64_t found = 0;
  const PreemptionHints hints = preemption_hints(s);
  TrialTables tables;  // kept between probes, as a scheduler pass keeps them between its plans
  for (int i = 0; i < a.probes && !under.empty(); ++i) {
    JobSpec p;
    p.name = "probe-" + std::to_string(i);
    p.team = under[static_cast<size_t>(i) % under.size()];
    p.priority = "high";
    PodSetSpec ps;
    ps.instance_type = "ml.p5.48xlarge";
    ps.per_replica.whole_node = true;
    if (i % 2 == 1) {
      ps.replicas = 4;
      ps.topology.required = "network-node-layer-3";
    }
    p.pod_sets = {ps};
    auto id = submit_job(s, p, 120);
    if (!id) continue;
    Explanation why;
    auto t1 = Clock::now();
    auto plan = plan_preemption(s, s.jobs[id->index()], PreemptionQuery{.allow_reclaim = true, .now = 120, .hints = &hints, .tables = &tables}, why);
    decision_ms.push_back(seconds_since(t1) * 1000.0);
    found += plan.has_value();
    (void)cancel_job(s, p.name, 120);
  }

  nlohmann::json out = {
      {"gpus", c.gpus},
      {"nodes", model.nodes.size()},
      {"teams", c.teams},
      {"pending", c.pending},
      {"seed", c.seed},
      {"reserved_nodes", a.reserved_nodes},
      {"submit_seconds", submit_s},
      {"first_pass_seconds", first_s},
      {"first_pass_steps", first.steps},
      {"admitted", admitted},
      {"first_pass_preemptions", static_cast<int64_t>(first.decisions.size()) - admitted},
      {"running_after_first_pass", running},
      {"admissions_per_second", first_s > 0 ? static_cast<double>(admitted) / first_s : 0.0},
      {"refill_pass_seconds", refill_s},
      {"refill_admitted", admissions(refill)},
      {"refill_admissions_per_second", refill_s > 0 ? static_cast<double>(admissions(refill)) / refill_s : 0.0},
      {"preemption_probes", decision_ms.size()},
      {"preemption_plans_found", found},
      {"preemption_p50_ms", percentile_ms(decision_ms, 50)},
      {"preemption_p99_ms", percentile_ms(decision_ms, 99)},
      {"peak_rss_mib", peak_rss_mib()},
  };
  if (a.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << std::fixed << std::setprecision(1);
  std::cout << "allot sim bench: " << c.gpus << " GPUs (" << model.nodes.size() << " nodes), " << c.teams << " teams, "
            << c.pending << " pending jobs, seed " << c.seed << "\n"
            << "  first pass     " << admitted << " admitted in " << first_s << " s: "
            << out["admissions_per_second"].get<double>() << " admissions/s (target >= 20000); "
            << out["first_pass_preemptions"].get<int64_t>() << " preemptions, " << first.steps << " steps\n"
            << "  refill pass    " << admissions(refill) << " admitted in " << refill_s << " s: "
            << out["refill_admissions_per_second"].get<double>() << " admissions/s\n"
            << std::setprecision(3) << "  preemption     p50 " << out["preemption_p50_ms"].get<double>() << " ms, p99 "
            << out["preemption_p99_ms"].get<double>() << " ms over " << decision_ms.size() << " probes, " << found
            << " with victims (target p99 < 5 ms)\n"
            << std::setprecision(0) << "  memory         peak RSS " << out["peak_rss_mib"].get<double>()
            << " MiB (target < 1024)\n";
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& sim, Context& ctx) {
  auto a = std::make_shared<BenchArgs>();
  auto* c = sim.add_subcommand("bench", "Measure the scheduling core at scale: admissions/s, preemption time, memory");
  c->add_option("--gpus", a->config.gpus, "GPUs in the cluster (8 per node; default 25000)");
  c->add_option("--teams", a->config.teams, "Teams sharing it (default 100)");
  c->add_option("--pending", a->config.pending, "Pending jobs to schedule (default 50000)");
  c->add_option("--seed", a->config.seed, "Seed of the generated jobs");
  c->add_option("--probes", a->probes, "Preemption decisions to time (default 200)");
  c->add_option("--users", a->config.users_per_team,
                "Users per team, each limited to 4 running jobs and 64 accelerators (per-user limits; default 0: none)");
  c->add_option("--reserved-nodes", a->reserved_nodes, "Reserve the first N nodes for the first team, Active (default 0)");
  c->add_flag("--json", a->json, "Print the figures as one JSON object");
  c->callback([a, &ctx] { ctx.exit_code = sim_bench(*a); });
}

}  // namespace allot::cli
