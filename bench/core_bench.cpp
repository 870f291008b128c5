// Google Benchmark programs for the scheduling core on the scale model of sim/scale_cluster.h (3,125 p5 nodes
// in a 3-layer tree, 100 teams): one placement, one quota check, one preemption decision, and a whole scheduler
// pass at several queue lengths. Run: build/bench/core_bench [--benchmark_repetitions=3]
// (`allot sim bench` prints the DESIGN.md figures; these isolate the pieces.)
#include <benchmark/benchmark.h>

#include "core/admission/admission.h"
#include "core/preemption/preemption.h"
#include "core/quota/quota.h"
#include "core/pass/scheduler.h"
#include "sim/scale_cluster.h"

namespace {

using namespace allot;

// The model's cluster with `pending` jobs submitted and, when `fill`, one scheduler pass run.
ClusterState make_state(int64_t pending, bool fill) {
  sim::ScaleConfig c;
  c.pending = pending;
  sim::ScaleModel m = sim::make_scale_model(c);
  ClusterState s = sim::scale_state(m);
  for (const auto& j : m.jobs) (void)submit_job(s, j, 0);
  if (fill) (void)schedule(s, 0);
  return s;
}

JobSpec probe(const std::string& team, int nodes, bool required) {
  JobSpec p;
  p.name = "probe";
  p.team = team;
  p.priority = "high";
  PodSetSpec ps;
  ps.instance_type = "ml.p5.48xlarge";
  ps.replicas = nodes;
  ps.per_replica.whole_node = true;
  if (required) ps.topology.required = "network-node-layer-3";
  p.pod_sets = {ps};
  return p;
}

// Placement of a 4-node job needing one layer-3 domain on the empty cluster.
void BM_PlaceRequired4Nodes(benchmark::State& st) {
  ClusterState s = make_state(0, false);
  auto id = submit_job(s, probe("team-1", 4, true), 0);
  const Job& j = s.jobs[id->index()];
  TypeId type = *s.catalog.find("ml.p5.48xlarge");
  for (auto _ : st) benchmark::DoNotOptimize(place_job(s, s.room, j, type));
}
BENCHMARK(BM_PlaceRequired4Nodes)->Unit(benchmark::kMicrosecond);

// A quota check of one job against its team's nominal quota, the pool and the borrow limit.
void BM_QuotaCheck(benchmark::State& st) {
  ClusterState s = make_state(0, false);
  TypeId type = *s.catalog.find("ml.p5.48xlarge");
  TeamId team = s.find_team("team-7")->id;
  Resources r = s.catalog.at(type).capacity() * 2;
  for (auto _ : st) benchmark::DoNotOptimize(check_quota(s, s.usage, team, type, r));
}
BENCHMARK(BM_QuotaCheck);

// The preemption decision for a job of a lending team on the full cluster (reclaim with trial placements).
void BM_PlanPreemption(benchmark::State& st) {
  ClusterState s = make_state(50000, true);
  auto id = submit_job(s, probe("team-100", static_cast<int>(st.range(0)), st.range(0) > 1), 1);
  const PreemptionHints hints = preemption_hints(s);
  for (auto _ : st) {
    Explanation why;
    benchmark::DoNotOptimize(
        plan_preemption(s, s.jobs[id->index()], PreemptionQuery{.allow_reclaim = true, .now = 1, .hints = &hints}, why));
  }
}
BENCHMARK(BM_PlanPreemption)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

// A whole scheduler pass from an empty cluster over `pending` queued jobs (state copies are not timed).
void BM_SchedulePass(benchmark::State& st) {
  const ClusterState base = make_state(st.range(0), false);
  int64_t admitted = 0;
  for (auto _ : st) {
    st.PauseTiming();
    ClusterState s = base;
    st.ResumeTiming();
    ScheduleResult r = schedule(s, 0);
    admitted = static_cast<int64_t>(r.decisions.size());
  }
  st.counters["admitted"] = static_cast<double>(admitted);
  st.counters["admissions_per_s"] = benchmark::Counter(static_cast<double>(admitted) * static_cast<double>(st.iterations()),
                                                       benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SchedulePass)->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond)->Iterations(3);

// A pass over a filled cluster with `dependents` more jobs waiting for a dependency (core/model/dependency.h): each names a
// job still waiting, so every pass judges them all and passes them over (the cost a dependency adds to a pass).
void BM_PassWithDependents(benchmark::State& st) {
  ClusterState base = make_state(10000, true);
  std::string waiting_name;
  for (JobId id : base.waiting_jobs) {
    waiting_name = base.jobs[id.index()].spec.name;
    break;
  }
  const Job& model = *base.find_job(waiting_name);
  for (int64_t i = 0; i < st.range(0); ++i) {
    JobSpec d = model.spec;
    d.name = "dependent-" + std::to_string(i);
    d.after = {{waiting_name, DependencyCondition::kSucceeded}};
    (void)submit_job(base, d, 0);
  }
  for (auto _ : st) {
    st.PauseTiming();
    ClusterState s = base;
    st.ResumeTiming();
    benchmark::DoNotOptimize(schedule(s, 1));
  }
  st.counters["waiting"] = static_cast<double>(base.waiting_jobs.size());
}
BENCHMARK(BM_PassWithDependents)->Arg(0)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
