// Goodput under node failures (issue 27: "goodput on a replay with failures at a realistic node MTBF, goal >= 0.95"):
// the bundled ITP cluster04 trace on the 640-GPU example cluster, as `allot sim replay` runs it, at each node MTBF
// given, with full restarts from checkpoints every 3600, 1800 and 600 s and with every multi-node job recovering in
// place (`--in-place-share 1`, checkpoints every 3600 s for the fallback), each over several seeds (the seed draws
// the teams and the failures). GPU-time lost to failures is counted by the replay where it is lost
// (ReplayOutcome::failure_lost_gpu_seconds: the work since the last checkpoint of each run a failure ended and the
// restart overhead it then pays, or a recovery in place's pause); "GPU-h lost" is all GPU-time held and not
// useful, preemptions' losses included. The replays are deterministic: the figures are means over the seeds, not
// timings.
//
// Run: build/bench/failure_goodput_bench [--seeds N] [--mtbf-hours H]... [--restart-overhead-s S]
//      [--in-place-overhead-s S]...
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "sim/replay_metrics.h"
#include "sim/scenario.h"
#include "sim/scenario_run.h"
#include "sim/trace.h"
#include "sim/trace_replay.h"
#include "sim/trace_teams.h"

namespace {

using namespace allot;

struct Setting {
  std::string name;
  int64_t checkpoint_s = 3600;
  double in_place_share = 0;
  int64_t in_place_overhead_s = 0;
};

// What one replay measured, summed over seeds by the caller.
struct Figures {
  double goodput = 0;
  int64_t failures = 0;
  double avg_jct_s = 0;
  double lost_gpu_h = 0;             // held and not useful, every job
  double failure_lost_gpu_h = 0;     // of that, lost to node failures
  double failure_lost_multi_node_gpu_h = 0;  // the same, jobs of more than one node
  int64_t recoveries = 0, fallbacks = 0;
  int runs = 0;

  void add(const Figures& f) {
    goodput += f.goodput;
    failures += f.failures;
    avg_jct_s += f.avg_jct_s;
    lost_gpu_h += f.lost_gpu_h;
    failure_lost_gpu_h += f.failure_lost_gpu_h;
    failure_lost_multi_node_gpu_h += f.failure_lost_multi_node_gpu_h;
    recoveries += f.recoveries;
    fallbacks += f.fallbacks;
    runs += f.runs;
  }
};

Figures replay(const sim::Scenario& cluster, const sim::Trace& trace, const sim::ReplayOptions& o) {
  auto out = sim::run_replay(cluster, trace, o);
  if (!out) {
    std::cerr << "failure_goodput_bench: " << out.error().message << "\n";
    std::exit(1);
  }
  const sim::ReplayMetrics m = sim::compute_metrics(out->jobs, out->cluster, out->samples);
  Figures f;
  f.goodput = m.goodput;
  f.failures = out->node_failures;
  f.avg_jct_s = m.all.jct.avg_s;
  for (const sim::JobRecord& r : out->jobs)
    f.lost_gpu_h += static_cast<double>(r.total_gpu_seconds_held - r.useful_gpu_seconds) / 3600.0;
  f.failure_lost_gpu_h = static_cast<double>(out->failure_lost_gpu_seconds) / 3600.0;
  f.failure_lost_multi_node_gpu_h = static_cast<double>(out->failure_lost_multi_node_gpu_seconds) / 3600.0;
  f.recoveries = out->in_place_recoveries;
  f.fallbacks = out->in_place_fallbacks;
  f.runs = 1;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 5;
  std::vector<double> mtbfs;
  int64_t restart_overhead_s = 300;
  std::vector<int64_t> in_place_overheads;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "failure_goodput_bench: " << a << " needs a value\n";
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--seeds") seeds = std::atoi(v.c_str());
    else if (a == "--mtbf-hours") mtbfs.push_back(std::atof(v.c_str()));
    else if (a == "--restart-overhead-s") restart_overhead_s = std::atoll(v.c_str());
    else if (a == "--in-place-overhead-s") in_place_overheads.push_back(std::atoll(v.c_str()));
    else {
      std::cerr << "failure_goodput_bench: unknown option " << a
                << " (--seeds N, --mtbf-hours H, --restart-overhead-s S, --in-place-overhead-s S)\n";
      return 2;
    }
  }
  if (seeds < 1) seeds = 1;
  if (mtbfs.empty()) mtbfs = {6335, 3167};  // Llama 3's interruption rate per 8-GPU server, and twice it (RESULTS.md)
  if (in_place_overheads.empty()) in_place_overheads = {restart_overhead_s, restart_overhead_s / 5};

  std::vector<Setting> settings = {{"restart, checkpoint 3600 s", 3600, 0, 0},
                                   {"restart, checkpoint 1800 s", 1800, 0, 0},
                                   {"restart, checkpoint 600 s", 600, 0, 0}};
  for (int64_t ov : in_place_overheads)
    settings.push_back({"in place, checkpoint 3600 s, pause " + std::to_string(ov) + " s", 3600, 1, ov});

  auto cluster = sim::load_scenario_file(ALLOT_SOURCE_DIR "/examples/cluster-640gpu.yaml");
  auto original = sim::load_trace_file(ALLOT_SOURCE_DIR "/traces/itp/cluster04.csv");
  auto state = cluster ? sim::cluster_from_scenario(*cluster) : Result<ClusterState>(cluster.error());
  if (!cluster || !original || !state) {
    std::cerr << "failure_goodput_bench: cannot load the bundled cluster or trace\n";
    return 1;
  }

  // [mtbf][setting] and the no-failure baseline per checkpoint interval, summed over seeds.
  std::map<std::pair<double, size_t>, Figures> rows;
  std::map<int64_t, Figures> calm;
  for (int seed = 1; seed <= seeds; ++seed) {
    sim::Trace trace = *original;
    if (auto n = sim::assign_teams(trace, sim::assignment_by_allocation(*state, sim::TeamRule::kRandom, seed)); !n) {
      std::cerr << "failure_goodput_bench: " << n.error().message << "\n";
      return 1;
    }
    sim::ReplayOptions base;
    base.seed = static_cast<uint64_t>(seed);
    base.failures.restart_overhead_s = restart_overhead_s;
    for (int64_t ck : {3600, 1800, 600}) {
      sim::ReplayOptions o = base;
      o.failures.checkpoint_s = ck;
      calm[ck].add(replay(*cluster, trace, o));
    }
    for (double mtbf : mtbfs)
      for (size_t k = 0; k < settings.size(); ++k) {
        sim::ReplayOptions o = base;
        o.failures.mtbf_hours = mtbf;
        o.failures.checkpoint_s = settings[k].checkpoint_s;
        o.in_place_share = settings[k].in_place_share;
        o.failures.in_place_overhead_s = settings[k].in_place_overhead_s;
        rows[{mtbf, k}].add(replay(*cluster, trace, o));
      }
    std::cerr << "seed " << seed << " done\n";
  }

  std::cout << std::fixed;
  std::cout << "ITP cluster04 on examples/cluster-640gpu.yaml, seeds 1-" << seeds << ", restart overhead "
            << restart_overhead_s << " s; means per seed (failures, lost GPU-hours: per seed too)\n\n";
  std::cout << "| node MTBF | recovery | failures | goodput | avg JCT | GPU-h lost | GPU-h lost to failures (x restart "
               "3600 s) | of which multi-node jobs | in place: recovered / restarted |\n";
  std::cout << "|---|---|---|---|---|---|---|---|---|\n";
  const double n = seeds;
  for (const auto& [ck, f] : calm)
    std::cout << "| none | checkpoint " << ck << " s | 0 | " << std::setprecision(4) << f.goodput / n << " | "
              << std::setprecision(0) << f.avg_jct_s / n << " s | " << std::setprecision(1) << f.lost_gpu_h / n
              << " | - | - | - |\n";
  for (double mtbf : mtbfs) {
    double restart_lost = 0, restart_multi = 0;
    for (size_t k = 0; k < settings.size(); ++k) {
      const Figures& f = rows[{mtbf, k}];
      const double to_failures = f.failure_lost_gpu_h / n;
      const double multi = f.failure_lost_multi_node_gpu_h / n;
      if (k == 0) restart_lost = to_failures, restart_multi = multi;
      std::cout << "| " << std::setprecision(0) << mtbf << " h | " << settings[k].name << " | " << std::setprecision(1)
                << static_cast<double>(f.failures) / n << " | " << std::setprecision(4) << f.goodput / n << " | "
                << std::setprecision(0) << f.avg_jct_s / n << " s | " << std::setprecision(1) << f.lost_gpu_h / n
                << " | " << to_failures;
      if (k > 0 && restart_lost > 0) std::cout << " (" << std::setprecision(2) << to_failures / restart_lost << "x)";
      std::cout << " | " << std::setprecision(1) << multi;
      if (k > 0 && restart_multi > 0) std::cout << " (" << std::setprecision(2) << multi / restart_multi << "x)";
      std::cout << " | ";
      if (settings[k].in_place_share > 0)
        std::cout << std::setprecision(1) << static_cast<double>(f.recoveries) / n << " / "
                  << static_cast<double>(f.fallbacks) / n;
      else
        std::cout << "-";
      std::cout << " |\n";
    }
  }
  return 0;
}
