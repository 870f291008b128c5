// `allot sim replay --trace FILE --cluster FILE [...]`: replays a job trace through the core on a virtual clock
// and reports utilisation, queueing, JCT, borrowing, preemptions, fairness, locality and goodput, for allot and
// for the baselines asked for. Exit codes: 0 done, 2 invalid input (what was wrong, where, what is allowed).
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "config/spec_yaml.h"
#include "sim/replay_baselines.h"
#include "sim/scenario_run.h"
#include "sim/svg_chart.h"
#include "sim/trace_replay.h"
#include "sim/trace_teams.h"

namespace allot::cli {
namespace {

struct ReplayArgs {
  std::string trace, format = "auto", cluster, svg, team_rule = "random";
  std::string plans;  // --plans FILE: capacity plans added to the cluster's (virtual seconds)
  uint64_t seed = 1;
  bool json = false;
  std::vector<std::string> baselines;
  sim::FailureOptions failures;
  double elastic_share = 0;
  double in_place_share = 0;             // --in-place-share
  std::optional<int64_t> locality_wait;  // --locality-wait: replaces the cluster file's policy.locality_wait
  bool backfill = false;                 // --backfill: sets the cluster file's policy.backfill
  double time_limit_factor = 0;          // --time-limit-factor
  double time_limit_factor_max = 0;      // --time-limit-factor-max: a per-job factor drawn up to it
};

struct Run {
  std::string name;
  sim::ReplayOutcome outcome;
  sim::ReplayMetrics metrics;
  double wall_s = 0;
};

Result<Run> replay_once(const std::string& name, const sim::Scenario& cluster, const sim::Trace& trace,
                        const sim::ReplayOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto out = sim::run_replay(cluster, trace, options);
  if (!out) return out.error();
  for (const auto& w : out->warnings) std::cerr << "allot sim replay: " << name << ": warning: " << w << "\n";
  Run r;
  r.name = name;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.metrics = sim::compute_metrics(out->jobs, out->cluster, out->samples);
  r.outcome = std::move(*out);
  return r;
}

std::string comparison(const std::vector<Run>& runs) {
  std::ostringstream s;
  s << std::fixed;
  s << "\n" << std::left << std::setw(20) << "run" << std::right << std::setw(8) << "util" << std::setw(11) << "avg queue"
    << std::setw(11) << "p99 queue" << std::setw(10) << "avg JCT" << std::setw(9) << "preempt" << std::setw(10)
    << "borrow h" << std::setw(10) << "locality" << std::setw(9) << "goodput" << "\n";
  for (const Run& r : runs) {
    const auto& m = r.metrics;
    s << std::left << std::setw(20) << r.name << std::right << std::setprecision(3) << std::setw(8) << m.utilization
      << std::setprecision(0) << std::setw(10) << m.all.queue.avg_s << "s" << std::setw(10) << m.all.queue.p99_s << "s"
      << std::setw(9) << m.all.jct.avg_s << "s" << std::setw(9) << m.all.preemptions << std::setw(10)
      << m.all.borrowed_gpu_hours << std::setprecision(3) << std::setw(10) << m.locality_one_domain_share
      << std::setw(9) << m.goodput << "\n";
  }
  return s.str();
}

int sim_replay(const ReplayArgs& a) {
  auto fail = [](const std::string& msg) {
    std::cerr << "allot sim replay: " << msg << "\n";
    return 2;
  };
  auto format = sim::parse_trace_format(a.format);
  if (!format) return fail(format.error().message);
  auto rule = sim::parse_team_rule(a.team_rule);
  if (!rule) return fail(rule.error().message);
  auto baselines = sim::parse_baselines(a.baselines);
  if (!baselines) return fail(baselines.error().message);
  const auto& f = a.failures;
  if (f.mtbf_hours < 0 || f.reboot_s < 0 || f.replace_s < 0 || f.checkpoint_s < 0 || f.restart_overhead_s < 0)
    return fail("--mtbf-hours, --reboot-s, --replace-s, --checkpoint-s and --restart-overhead-s must not be negative");
  if (!(a.elastic_share >= 0 && a.elastic_share <= 1))
    return fail("--elastic-share must be a share between 0 and 1 (0.3: 30% of multi-node jobs), got " +
                std::to_string(a.elastic_share));
  if (!(a.in_place_share >= 0 && a.in_place_share <= 1))
    return fail("--in-place-share must be a share between 0 and 1 (0.3: 30% of multi-node jobs recover in place), got " +
                std::to_string(a.in_place_share));
  if (f.in_place_overhead_s && *f.in_place_overhead_s < 0)
    return fail("--in-place-overhead-s must be a number of seconds, 0 or more (default: --restart-overhead-s), got " +
                std::to_string(*f.in_place_overhead_s));
  if (f.replace_share < 0 || f.replace_share > 1) return fail("--replace-share must be between 0 and 1");
  if (a.locality_wait && *a.locality_wait < 0)
    return fail("--locality-wait must be a number of seconds, 0 or more, got " + std::to_string(*a.locality_wait));
  auto cluster = sim::load_scenario_file(a.cluster);
  if (!cluster) return fail("--cluster: " + cluster.error().message);
  if (a.locality_wait) cluster->policy.locality_wait_s = *a.locality_wait;
  if (!(a.time_limit_factor == 0 || a.time_limit_factor >= 1))
    return fail("--time-limit-factor must be 1 or more (a job's limit is its trace duration times it), or 0 for none; got " +
                std::to_string(a.time_limit_factor));
  if (a.time_limit_factor_max != 0 && (a.time_limit_factor == 0 || a.time_limit_factor_max < a.time_limit_factor))
    return fail("--time-limit-factor-max needs --time-limit-factor F and must be F or more (each job's factor is drawn "
                "between them); got " + std::to_string(a.time_limit_factor_max));
  if (a.backfill) cluster->policy.backfill = true;
  if (!a.plans.empty()) {
    Catalog catalog = Catalog::builtin();
    for (const auto& t : cluster->instance_types) (void)catalog.put(t);
    auto plans = load_plans_file(a.plans, catalog);
    if (!plans) return fail("--plans: " + plans.error().message);
    cluster->plans.insert(cluster->plans.end(), plans->begin(), plans->end());
  }
  auto trace = sim::load_trace_file(a.trace, *format);
  if (!trace) return fail("--trace: " + trace.error().message);
  if (trace->jobs.empty()) return fail("--trace: " + a.trace + " has no job to replay");
  if (cluster->teams.empty()) return fail("--cluster: " + a.cluster + " has no teams to assign the trace's jobs to");
  if (!trace->issues.summary().empty()) std::cerr << "allot sim replay: " << a.trace << ": " << trace->issues.summary() << "\n";

  auto state = sim::cluster_from_scenario(*cluster);
  if (!state) return fail("--cluster: " + a.cluster + ": " + state.error().message);
  if (auto n = sim::assign_teams(*trace, sim::assignment_by_allocation(*state, *rule, a.seed)); !n)
    return fail(n.error().message);

  sim::ReplayOptions options;
  options.seed = a.seed;
  options.failures = a.failures;
  options.elastic_share = a.elastic_share;
  options.in_place_share = a.in_place_share;
  options.time_limit_factor = a.time_limit_factor;
  options.time_limit_factor_max = a.time_limit_factor_max;
  std::vector<Run> runs;
  auto first = replay_once("allot", *cluster, *trace, options);
  if (!first) return fail(first.error().message);
  runs.push_back(std::move(*first));
  for (sim::Baseline b : *baselines) {
    sim::Scenario c = *cluster;
    sim::ReplayOptions o = options;
    sim::apply_baseline(b, c, o, a.seed);
    auto r = replay_once(sim::baseline_name(b), c, *trace, o);
    if (!r) return fail(std::string(sim::baseline_name(b)) + ": " + r.error().message);
    runs.push_back(std::move(*r));
  }

  if (!a.svg.empty()) {
    const Run& r = runs.front();
    auto files = sim::write_replay_charts(a.svg, r.outcome.samples, r.outcome.end_s, r.outcome.cluster,
                                          "allot replay of " + a.trace);
    if (!files) return fail("--svg: " + files.error().message);
    if (!a.json)
      for (const auto& file : *files) std::cout << "wrote " << file << "\n";
  }

  if (a.json) {
    nlohmann::json out = sim::to_json(runs.front().metrics);
    out["trace"] = a.trace;
    out["format"] = trace->format;
    out["cluster"] = a.cluster;
    out["seed"] = a.seed;
    out["team_rule"] = sim::team_rule_name(*rule);
    out["node_failures"] = runs.front().outcome.node_failures;
    if (a.elastic_share > 0) out["elastic_share"] = a.elastic_share;
    if (a.in_place_share > 0) {
      out["in_place_share"] = a.in_place_share;
      out["in_place_overhead_s"] = f.in_place_overhead();
      out["in_place_recoveries"] = runs.front().outcome.in_place_recoveries;
      out["in_place_fallbacks"] = runs.front().outcome.in_place_fallbacks;
    }
    if (cluster->policy.locality_wait_s > 0) out["locality_wait"] = cluster->policy.locality_wait_s;
    if (cluster->policy.backfill) out["backfill"] = true;
    if (a.time_limit_factor > 0) out["time_limit_factor"] = a.time_limit_factor;
    if (a.time_limit_factor_max > 0) out["time_limit_factor_max"] = a.time_limit_factor_max;
    if (const sim::TraceLimits l = sim::trace_limits(*trace); l.jobs > 0)
      out["trace_time_limits"] = {{"jobs", l.jobs}, {"below_duration", l.below_duration}};
    out["baselines"] = nlohmann::json::object();
    for (size_t i = 1; i < runs.size(); ++i) {
      nlohmann::json b = sim::to_json(runs[i].metrics);
      b["node_failures"] = runs[i].outcome.node_failures;
      out["baselines"][runs[i].name] = std::move(b);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  const Run& r = runs.front();
  std::cout << "replay of " << a.trace << " (" << trace->jobs.size() << " jobs, " << std::fixed << std::setprecision(0)
            << sim::trace_gpu_hours(*trace) << " GPU-hours) on " << a.cluster << " (" << r.outcome.cluster.total_gpus
            << " GPUs, " << r.outcome.cluster.teams.size() << " teams); teams by " << sim::team_rule_name(*rule)
            << ", seed " << a.seed;
  if (f.mtbf_hours > 0)
    std::cout << "; node MTBF " << f.mtbf_hours << " h, " << r.outcome.node_failures << " node failures";
  if (a.elastic_share > 0) std::cout << "; " << std::setprecision(0) << a.elastic_share * 100 << "% of multi-node jobs elastic";
  if (a.in_place_share > 0)
    std::cout << "; " << std::setprecision(0) << a.in_place_share * 100 << "% of multi-node jobs recover in place ("
              << r.outcome.in_place_recoveries << " recoveries, " << r.outcome.in_place_fallbacks << " full restarts, "
              << f.in_place_overhead() << " s pause each)";
  if (cluster->policy.locality_wait_s > 0) std::cout << "; locality wait " << cluster->policy.locality_wait_s << " s";
  if (cluster->policy.backfill) std::cout << "; backfill";
  const sim::TraceLimits limits = sim::trace_limits(*trace);
  if (limits.jobs > 0) std::cout << "; time limits from the trace for " << limits.jobs << " jobs";
  if (a.time_limit_factor > 0) {
    std::cout << (limits.jobs > 0 ? ", the others " : "; time limits ") << std::setprecision(1) << a.time_limit_factor;
    if (a.time_limit_factor_max > 0) std::cout << " to " << a.time_limit_factor_max;
    std::cout << " x duration";
  }
  std::cout << "\n\n" << sim::format_summary(r.metrics);
  if (runs.size() > 1) std::cout << comparison(runs);
  std::cout << "\n" << std::setprecision(2);
  for (const Run& x : runs)
    std::cout << x.name << ": replayed in " << x.wall_s << " s (" << x.outcome.schedule_calls << " scheduler passes)\n";
  return 0;
}

}  // namespace

void add_replay_command(CLI::App& sim, Context& ctx) {
  auto a = std::make_shared<ReplayArgs>();
  auto* c = sim.add_subcommand("replay", "Replay a job trace through the scheduler and report what it measured");
  c->add_option("--trace", a->trace, "Trace file (CSV)")->required();
  c->add_option("--format", a->format, "Trace format: itp, philly, allot, slurm or auto (from the header)");
  c->add_option("--cluster", a->cluster, "Scenario-format file: policy, nodes, teams (events optional)")->required();
  c->add_option("--plans", a->plans, "Capacity plans YAML (a list, or {plans: [...]}; start and end in trace seconds)");
  c->add_option("--seed", a->seed, "Seed for team assignment, failures and the topology-oblivious baseline");
  c->add_flag("--json", a->json, "Print the metrics as one JSON object");
  c->add_option("--svg", a->svg, "Write SVG charts (queue and utilisation; usage per team) into this directory");
  c->add_option("--baseline", a->baselines, "Also run: static-quota, fifo, topology-oblivious, backfill-top-class, or all (the first three; repeatable)");
  c->add_option("--team-rule", a->team_rule,
                "How trace jobs get teams: random (default; by allocation), round-robin or by-size");
  c->add_option("--mtbf-hours", a->failures.mtbf_hours, "Inject node failures: mean time between failures per node");
  c->add_option("--reboot-s", a->failures.reboot_s, "A rebooted node is back after this long (default 600)");
  c->add_option("--replace-s", a->failures.replace_s, "A replaced node's successor joins after this long (default 3600)");
  c->add_option("--replace-share", a->failures.replace_share, "Share of failures that need a replacement (default 0.2)");
  c->add_option("--checkpoint-s", a->failures.checkpoint_s,
                "Jobs checkpoint this often; a restart loses the work since (default 3600; 0: nothing is lost)");
  c->add_option("--restart-overhead-s", a->failures.restart_overhead_s, "Extra run time of every restart (default 0)");
  c->add_option("--in-place-overhead-s", a->failures.in_place_overhead_s,
                "Extra run time of every recovery in place, the whole job waiting for its new rank (default: --restart-overhead-s)");
  c->add_option("--locality-wait", a->locality_wait,
                "Seconds a job with a preferred topology request may wait for one domain (policy.locality_wait; default: "
                "the cluster file's, 0: spread at once)");
  c->add_flag("--backfill", a->backfill, "Turn on backfill with a reservation (policy.backfill; docs/scheduling.md)");
  c->add_option("--time-limit-factor", a->time_limit_factor,
                "Give every trace job without a limit of its own a time limit of its duration times this (1 or more; 0: none, the default)");
  c->add_option("--time-limit-factor-max", a->time_limit_factor_max,
                "With --time-limit-factor F: each job's factor is drawn between F and this, log-uniformly by --seed, as "
                "users overestimate by different amounts");
  c->add_option("--elastic-share", a->elastic_share,
                "Make this share of multi-node jobs elastic (0..1, chosen by --seed): n replicas become ceil(n/2)..n");
  c->add_option("--in-place-share", a->in_place_share,
                "Give this share of multi-node jobs recovery: in_place (0..1, chosen by --seed): on a node failure only "
                "its replicas move, to a free node");
  c->callback([a, &ctx] { ctx.exit_code = sim_replay(*a); });
}

}  // namespace allot::cli
