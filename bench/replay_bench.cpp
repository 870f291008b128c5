// The simulator's figure of DESIGN.md ("a full ITP cluster trace replays in under 5 seconds"): the bundled ITP
// cluster04 trace (15,802 jobs) on the 640-GPU example cluster, as the README's replay example runs it
// (teams by allocation, random rule, seed 1, no baselines). Run: build/bench/replay_bench
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>

#include "sim/scenario.h"
#include "sim/scenario_run.h"
#include "sim/trace.h"
#include "sim/trace_replay.h"
#include "sim/trace_teams.h"

namespace {

using namespace allot;

void BM_ReplayItpCluster04(benchmark::State& st) {
  auto cluster = sim::load_scenario_file(ALLOT_SOURCE_DIR "/examples/cluster-640gpu.yaml");
  auto trace = sim::load_trace_file(ALLOT_SOURCE_DIR "/traces/itp/cluster04.csv");
  auto state = cluster ? sim::cluster_from_scenario(*cluster) : Result<ClusterState>(cluster.error());
  if (!cluster || !trace || !state) {
    st.SkipWithError("cannot load the bundled cluster or trace");
    return;
  }
  if (auto n = sim::assign_teams(*trace, sim::assignment_by_allocation(*state, sim::TeamRule::kRandom, 1)); !n) {
    st.SkipWithError(n.error().message.c_str());
    return;
  }
  int64_t jobs = 0, passes = 0;
  for (auto _ : st) {
    auto r = sim::run_replay(*cluster, *trace, sim::ReplayOptions{});
    if (!r) {
      st.SkipWithError(r.error().message.c_str());
      return;
    }
    jobs = static_cast<int64_t>(r->jobs.size());
    passes = r->schedule_calls;
  }
  st.counters["jobs"] = static_cast<double>(jobs);
  st.counters["scheduler_passes"] = static_cast<double>(passes);
}
BENCHMARK(BM_ReplayItpCluster04)->Unit(benchmark::kSecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
