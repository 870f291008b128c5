// The trace replay driver end to end: tiny traces whose outcome is worked out by hand, the mapping of trace
// jobs to job specs, determinism for a seed, failure injection with auto-resume, and what each baseline
// takes away.
#include "sim/trace_replay.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/replay_baselines.h"
#include "sim/scenario_run.h"
#include "sim/trace_jobs.h"
#include "sim/trace_teams.h"

namespace allot::sim::trace_replay_test {
namespace {

Scenario cluster(const std::string& yaml) {
  auto sc = parse_scenario(yaml, "cluster.yaml");
  EXPECT_TRUE(sc.ok()) << (sc.ok() ? "" : sc.error().message);
  return sc.ok() ? *sc : Scenario{};
}

Trace trace(const std::string& csv) {
  auto t = parse_trace(csv, TraceFormat::kAllot, "trace.csv");
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? *t : Trace{};
}

ReplayMetrics replay(const Scenario& sc, const Trace& tr, ReplayOptions o = {}) {
  auto out = run_replay(sc, tr, o);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  if (!out.ok()) return {};
  return compute_metrics(out->jobs, out->cluster, out->samples);
}

// Two 8-GPU nodes and one team entitled to both, under `policy` (a YAML flow map).
std::string two_p4d_nodes(const std::string& policy) {
  return "policy: " + policy + R"(
cluster:
  nodes: [{name: p-[1-2], instance_type: ml.p4d.24xlarge}]
teams:
  - name: ml
    allocation: [{instance_type: ml.p4d.24xlarge, instances: 2}]
)";
}

const char* kOneNode = R"(
cluster:
  nodes: [{name: p-1, instance_type: ml.p4d.24xlarge}]
teams:
  - name: ml
    allocation: [{instance_type: ml.p4d.24xlarge, instances: 1}]
)";

// One 8-GPU node, one team, fcfs:
//   j1  8 GPUs  submit 0   runs 0..100
//   j2  8 GPUs  submit 0   waits for j1, runs 100..150
//   j3  4 GPUs  submit 10  behind j2 in the queue and no room before 150: runs 150..170
// Queueing 0, 100, 140 (avg 80); JCT 100, 150, 160 (avg 136.67); makespan 170;
// utilisation (8x100 + 8x50 + 4x20) / (8 x 170) = 1280 / 1360 = 0.941176.
TEST(TraceReplay, TinyTraceByHand) {
  auto m = replay(cluster(kOneNode), trace("id,submit_s,duration_s,gpus,team\n"
                                           "j1,0,100,8,ml\nj2,0,50,8,ml\nj3,10,20,4,ml\n"));
  EXPECT_EQ(m.all.jobs, 3);
  EXPECT_EQ(m.finished_jobs, 3);
  EXPECT_EQ(m.makespan_s, 170);
  EXPECT_DOUBLE_EQ(m.all.queue.avg_s, 80.0);
  EXPECT_EQ(m.all.queue.p99_s, 140);
  EXPECT_NEAR(m.all.jct.avg_s, 410.0 / 3.0, 1e-9);
  EXPECT_NEAR(m.utilization, 1280.0 / 1360.0, 1e-9);
  EXPECT_EQ(m.all.preemptions, 0);
  EXPECT_DOUBLE_EQ(m.goodput, 1.0);
}

TEST(TraceReplay, TraceJobsBecomeReplicasOrWholeNodes) {
  auto sc = cluster(R"(
cluster:
  nodes:
    - {name: "p-[1-4]", instance_type: ml.p4d.24xlarge, labels: {network-node-layer-3: nn-a}}
    - {name: "g-[1-4]", instance_type: ml.g5.12xlarge, labels: {network-node-layer-3: nn-b}}
teams:
  - name: ml
    allocation: [{instance_type: ml.p4d.24xlarge, instances: 4}]
)");
  auto s = cluster_from_scenario(sc);
  ASSERT_TRUE(s.ok());
  auto shape = trace_job_shape(*s);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(shape->instance_type, "ml.p4d.24xlarge") << "the type with the most accelerators per node";
  EXPECT_EQ(shape->accelerators_per_node, 8);
  EXPECT_EQ(shape->preferred_level, "topology.k8s.aws/network-node-layer-3");

  JobSpec small = job_from_trace(TraceJob{"s", 0, 60, 4, "ml"}, *shape, 0, 0);
  ASSERT_EQ(small.pod_sets.size(), 1u);
  EXPECT_EQ(small.pod_sets[0].replicas, 1);
  EXPECT_EQ(small.pod_sets[0].per_replica.accelerators, 4);
  EXPECT_FALSE(small.pod_sets[0].per_replica.whole_node);
  EXPECT_TRUE(small.pod_sets[0].topology.empty());
  EXPECT_EQ(held_gpus(*shape, 4), 4);

  JobSpec big = job_from_trace(TraceJob{"b", 0, 60, 12, "ml"}, *shape, 3, 600);
  EXPECT_EQ(big.pod_sets[0].replicas, 2) << "12 GPUs on 8-GPU nodes: two whole nodes";
  EXPECT_TRUE(big.pod_sets[0].per_replica.whole_node);
  EXPECT_EQ(big.pod_sets[0].topology.preferred, "topology.k8s.aws/network-node-layer-3");
  EXPECT_EQ(big.max_retries, 3);
  EXPECT_EQ(big.checkpoint_interval_s, 600);
  EXPECT_EQ(held_gpus(*shape, 12), 16);
}

TEST(TraceReplay, JobsWithoutAClusterTeamAreRejected) {
  auto out = run_replay(cluster(kOneNode), trace("id,submit_s,duration_s,gpus,team\nj1,0,10,1,nobody\n"), {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().message.find("nobody"), std::string::npos) << out.error().message;
}

const char* kTwoTeams = R"(
cluster:
  nodes:
    - {name: "p-[1-4]", instance_type: ml.p4d.24xlarge, labels: {network-node-layer-3: nn-a}}
    - {name: "p-[5-8]", instance_type: ml.p4d.24xlarge, labels: {network-node-layer-3: nn-b}}
teams:
  - name: a
    allocation: [{instance_type: ml.p4d.24xlarge, instances: 4}]
    sharing: {strategy: LendAndBorrow, borrow_limit: 100}
  - name: b
    allocation: [{instance_type: ml.p4d.24xlarge, instances: 4}]
    sharing: {strategy: LendAndBorrow, borrow_limit: 100}
)";

// A seeded synthetic trace: sizes 1..32 GPUs, durations up to two hours, teams dealt at random.
Trace synthetic(uint64_t seed, int jobs) {
  std::mt19937_64 rng(seed);
  std::string csv = "id,submit_s,duration_s,gpus\n";
  const int sizes[] = {1, 2, 4, 8, 8, 16, 32};
  int64_t t = 0;
  for (int i = 0; i < jobs; ++i) {
    t += static_cast<int64_t>(bounded_draw(rng, 600));
    csv += "j" + std::to_string(i) + "," + std::to_string(t) + "," + std::to_string(60 + bounded_draw(rng, 7200)) + "," +
           std::to_string(sizes[bounded_draw(rng, 7)]) + "\n";
  }
  Trace tr = trace(csv);
  TeamAssignment as;
  as.rule = TeamRule::kRandom;
  as.teams = {{"a", 1}, {"b", 1}};
  as.seed = seed;
  EXPECT_TRUE(assign_teams(tr, as).ok());
  return tr;
}

TEST(TraceReplay, DeterministicForASeed) {
  Scenario sc = cluster(kTwoTeams);
  ReplayOptions o;
  o.seed = 7;
  o.failures.mtbf_hours = 24;
  o.failures.checkpoint_s = 900;
  auto run = [&](uint64_t seed) {
    ReplayOptions x = o;
    x.seed = seed;
    return to_json(replay(sc, synthetic(seed, 300), x)).dump();
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(TraceReplay, FailuresLowerGoodputAndJobsStillFinish) {
  Scenario sc = cluster(kTwoTeams);
  Trace tr = synthetic(3, 300);
  ReplayOptions keep_all;
  keep_all.failures.checkpoint_s = 0;  // preempted jobs keep all their work
  ReplayMetrics calm = replay(sc, tr, keep_all);
  ReplayOptions o;
  o.seed = 3;
  o.failures.mtbf_hours = 12;  // per node: with 8 nodes, a failure every 1.5 h on average
  o.failures.checkpoint_s = 1800;
  o.failures.restart_overhead_s = 120;
  auto out = run_replay(sc, tr, o);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ReplayMetrics stormy = compute_metrics(out->jobs, out->cluster, out->samples);
  EXPECT_GT(out->node_failures, 0);
  EXPECT_GT(stormy.restarts, 0);
  EXPECT_DOUBLE_EQ(calm.goodput, 1.0) << "without failures, and with every moment kept, no work is lost";
  EXPECT_LT(stormy.goodput, 1.0);
  EXPECT_GT(stormy.goodput, 0.5);
  EXPECT_EQ(stormy.finished_jobs, 300) << "auto-resume brings every job to its end";
  EXPECT_GE(stormy.all.jct.avg_s, calm.all.jct.avg_s);
}

TEST(TraceReplay, StaticQuotaNeverBorrows) {
  Scenario sc = cluster(kTwoTeams);
  // Team a alone is busy: with lending it borrows b's idle nodes; with static quotas it may not.
  Trace tr = trace("id,submit_s,duration_s,gpus,team\n"
                   "a1,0,1000,32,a\na2,0,1000,24,a\na3,0,1000,8,a\n");
  ReplayMetrics shared = replay(sc, tr);
  Scenario st = sc;
  ReplayOptions o;
  apply_baseline(Baseline::kStaticQuota, st, o, 1);
  ReplayMetrics fixed = replay(st, tr, o);
  EXPECT_GT(shared.all.borrowed_gpu_hours, 0);
  EXPECT_EQ(fixed.all.borrowed_gpu_hours, 0);
  EXPECT_EQ(shared.makespan_s, 1000) << "all three run at once on borrowed nodes";
  EXPECT_EQ(fixed.makespan_s, 2000) << "a1 alone fills team a's 32 GPUs; a2 and a3 follow it";
}

TEST(TraceReplay, FifoBlocksBehindTheHeadAndNeverPreempts) {
  Scenario sc = cluster(kTwoTeams);
  // big needs all 8 nodes and waits for first; under allot the small job behind it runs at once on the free
  // nodes; under strict FIFO it waits behind big.
  Trace tr = trace("id,submit_s,duration_s,gpus,team\n"
                   "first,0,100,8,a\nbig,1,100,64,a\nsmall,2,10,8,b\n");
  ReplayMetrics allot = replay(sc, tr);
  Scenario fs = sc;
  ReplayOptions o;
  apply_baseline(Baseline::kFifo, fs, o, 1);
  auto out = run_replay(fs, tr, o);
  ASSERT_TRUE(out.ok());
  ReplayMetrics fifo = compute_metrics(out->jobs, out->cluster, out->samples);
  EXPECT_EQ(fifo.all.preemptions, 0);
  EXPECT_EQ(out->jobs[2].first_start_s, 200) << "small waits for big (100..200)";
  EXPECT_LT(allot.all.queue.avg_s, fifo.all.queue.avg_s);
}

TEST(TraceReplay, TopologyObliviousPlacementLosesLocality) {
  Scenario sc = cluster(R"(
cluster:
  nodes:
    - {name: "p-[1-4]", instance_type: ml.p4d.24xlarge, labels: {network-node-layer-3: nn-a}}
    - {name: "p-[5-8]", instance_type: ml.p4d.24xlarge, labels: {network-node-layer-3: nn-b}}
    - {name: "p-[9-12]", instance_type: ml.p4d.24xlarge, labels: {network-node-layer-3: nn-c}}
    - {name: "p-[13-16]", instance_type: ml.p4d.24xlarge, labels: {network-node-layer-3: nn-d}}
teams:
  - name: ml
    allocation: [{instance_type: ml.p4d.24xlarge, instances: 16}]
)");
  // Eight 2-node jobs that all run at once: each fits one layer-3 domain.
  std::string csv = "id,submit_s,duration_s,gpus,team\n";
  for (int i = 0; i < 8; ++i) csv += "j" + std::to_string(i) + "," + std::to_string(i) + ",1000,16,ml\n";
  Trace tr = trace(csv);
  ReplayMetrics aware = replay(sc, tr);
  Scenario ob = sc;
  ReplayOptions o;
  apply_baseline(Baseline::kTopologyOblivious, ob, o, 5);
  ReplayMetrics oblivious = replay(ob, tr, o);
  EXPECT_EQ(aware.multi_node_jobs, 8);
  EXPECT_DOUBLE_EQ(aware.locality_one_domain_share, 1.0);
  EXPECT_DOUBLE_EQ(aware.avg_domains_per_job, 1.0);
  EXPECT_EQ(oblivious.multi_node_jobs, 8);
  EXPECT_LT(oblivious.locality_one_domain_share, 1.0) << "node order no longer follows the network";
  EXPECT_GT(oblivious.avg_domains_per_job, 1.0);
}

TEST(TraceReplay, BaselineNamesAreChecked) {
  EXPECT_TRUE(parse_baselines({"fifo", "static-quota"}).ok());
  EXPECT_EQ(parse_baselines({"all"})->size(), 3u);
  auto top = parse_baselines({"all", "backfill-top-class"});
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->size(), 4u);
  Scenario sc = cluster(kOneNode);
  sc.policy.priority_classes = {{.name = "high", .weight = 90}, {.name = "low", .weight = 10}};
  ReplayOptions o;
  apply_baseline(Baseline::kBackfillTopClass, sc, o, 1);
  EXPECT_TRUE(sc.policy.backfill);
  EXPECT_EQ(sc.policy.backfill_min_priority, 90) << "only the highest class reserves";
  auto bad = parse_baselines({"lifo"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("static-quota, fifo, topology-oblivious"), std::string::npos);
}

// Backfill with limits of exactly the trace durations (--backfill --time-limit-factor 1), two 8-GPU nodes:
//   j1  8 GPUs   submit 0   runs 0..100 on one node
//   j2  16 GPUs  submit 0   waits: the holder, reserved from 100 (j1's limit) on both nodes; runs 100..150
//   j3  8 GPUs   submit 10  ends by 60, before the reservation: backfilled onto the free node, runs 10..60
//   j4  8 GPUs   submit 20  would run past 100: waits; once j2 runs it holds the next reservation, from 150
//                           (j2's limit), and runs 150..350
// Backfilled 1 of 4; two held reservations and both started as planned (delay 0, none late).
TEST(TraceReplay, BackfillFiguresByHand) {
  const std::string two_nodes = two_p4d_nodes("{backfill: true}");
  const Trace tr = trace("id,submit_s,duration_s,gpus,team\nj1,0,100,8,ml\nj2,0,50,16,ml\nj3,10,50,8,ml\nj4,20,200,8,ml\n");
  ReplayOptions o;
  o.time_limit_factor = 1;
  auto out = run_replay(cluster(two_nodes), tr, o);
  ASSERT_TRUE(out.ok()) << out.error().message;
  std::map<std::string, JobRecord> by_id;
  for (const JobRecord& j : out->jobs) by_id[j.id] = j;
  EXPECT_EQ(by_id["j3"].first_start_s, 10);
  EXPECT_TRUE(by_id["j3"].backfilled);
  EXPECT_FALSE(by_id["j1"].backfilled);
  EXPECT_EQ(by_id["j2"].reserved_start_s, 100);
  EXPECT_EQ(by_id["j2"].first_start_s, 100);
  EXPECT_EQ(by_id["j4"].reserved_start_s, 150);
  EXPECT_EQ(by_id["j4"].first_start_s, 150);
  EXPECT_EQ(by_id["j3"].reserved_start_s, -1);
  const ReplayMetrics m = compute_metrics(out->jobs, out->cluster, out->samples);
  ASSERT_TRUE(m.backfill);
  EXPECT_EQ(m.backfill->backfilled_jobs, 1);
  EXPECT_EQ(m.backfill->reserved_jobs, 2);
  EXPECT_EQ(m.backfill->reservation_delay.p99_s, 0);
  EXPECT_EQ(m.backfill->late_jobs, 0);
  // A factor drawn per job between 1 and 1 is the fixed factor.
  o.time_limit_factor_max = 1;
  auto same = run_replay(cluster(two_nodes), tr, o);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(compute_metrics(same->jobs, same->cluster, same->samples).backfill->backfilled_jobs, 1);
}

// The same cluster with the limits taken from the trace (time_limit_s), no factor: j1 declares 300 s for its 100:
//   t=0   j1 runs on one node; j2 holds the reservation from 300 (j1's declared limit) on both nodes
//   t=10  j3 (limit 50: ends by 60) is backfilled onto the free node
//   t=60  j3 ends; j4 (limit 200: ends by 260, before 300) is backfilled onto it
//   t=100 j1 ends early; j2 now waits for j4's limit: reserved from 260, runs 260..310
// A job without a cell (j5) gets no limit, and with the factor 1 it gets its duration.
TEST(TraceReplay, LimitsFromTheTrace) {
  const std::string two_nodes = two_p4d_nodes("{backfill: true}");
  const Trace tr = trace("id,submit_s,duration_s,gpus,team,time_limit_s\n"
                         "j1,0,100,8,ml,300\nj2,0,50,16,ml,50\nj3,10,50,8,ml,50\nj4,20,200,8,ml,200\n");
  auto out = run_replay(cluster(two_nodes), tr, ReplayOptions{});
  ASSERT_TRUE(out.ok()) << out.error().message;
  std::map<std::string, JobRecord> by_id;
  for (const JobRecord& j : out->jobs) by_id[j.id] = j;
  EXPECT_EQ(by_id["j2"].reserved_start_s, 300);
  EXPECT_EQ(by_id["j3"].first_start_s, 10);
  EXPECT_TRUE(by_id["j3"].backfilled);
  EXPECT_EQ(by_id["j4"].first_start_s, 60);
  EXPECT_TRUE(by_id["j4"].backfilled);
  EXPECT_EQ(by_id["j2"].first_start_s, 260);
  EXPECT_EQ(by_id["j2"].end_s, 310);

  // A limit below the duration is raised to it: j1 declares 50 for its 100 and still runs its 100 s.
  const Trace low = trace("id,submit_s,duration_s,gpus,team,time_limit_s\nj1,0,100,8,ml,50\nj2,0,50,16,ml,\n");
  EXPECT_EQ(trace_limits(low).jobs, 1);
  EXPECT_EQ(trace_limits(low).below_duration, 1);
  auto raised = run_replay(cluster(two_nodes), low, ReplayOptions{});
  ASSERT_TRUE(raised.ok()) << raised.error().message;
  by_id.clear();
  for (const JobRecord& j : raised->jobs) by_id[j.id] = j;
  EXPECT_EQ(by_id["j1"].end_s, 100);
  EXPECT_EQ(by_id["j2"].reserved_start_s, 100);  // planned from the raised limit, not from 50
  EXPECT_EQ(by_id["j2"].first_start_s, 100);
}

}  // namespace
}  // namespace allot::sim::trace_replay_test

namespace allot::sim::trace_replay_test {
namespace {

// Two 8-GPU nodes, elastic_grow_delay 50, every multi-node job elastic (--elastic-share 1):
//   j1  8 GPUs   submit 0  runs 0..100 on one node
//   j2  16 GPUs  submit 0  elastic 1..2 nodes: starts at 1 node at 0; j1's node idle from 100, so it grows at
//                          150 having done 150 * 1/2 = 75 s of its 200 s (checkpointed: nothing is lost); the
//                          other 125 s at full size: ends at 275
// Without elastic jobs j2 waits for j1 and runs 100..300.
TEST(TraceReplay, ElasticJobsStartSmallerAndGrow) {
  const std::string two_nodes = two_p4d_nodes("{elastic_grow_delay: 50}");
  const Trace tr = trace("id,submit_s,duration_s,gpus,team\nj1,0,100,8,ml\nj2,0,200,16,ml\n");
  ReplayOptions o;
  o.failures.checkpoint_s = 0;  // every moment is kept: the resize loses no work
  ReplayMetrics fixed = replay(cluster(two_nodes), tr, o);
  EXPECT_EQ(fixed.makespan_s, 300);
  EXPECT_DOUBLE_EQ(fixed.all.queue.avg_s, 50.0);
  o.elastic_share = 1;
  ReplayMetrics elastic = replay(cluster(two_nodes), tr, o);
  EXPECT_EQ(elastic.makespan_s, 275);
  EXPECT_DOUBLE_EQ(elastic.all.queue.avg_s, 0.0);
  EXPECT_NEAR(elastic.utilization, (8.0 * 100 + 8.0 * 150 + 16.0 * 125) / (16.0 * 275), 1e-9);
}

// Recovery in place against a full restart, by hand. Three 8-GPU nodes; j1 takes 16 GPUs (p-1 and p-2) for 1000 s
// of work with checkpoints every 600 s; the cluster file fails p-1 at t=700.
//   restart:  the run ends at 700 keeping 600 s of work; j1 restarts at once on p-2 and p-3 with 400 s to do plus
//             the 60 s restart overhead: ends at 1160, holding 16 x 1160 GPU-s for 16 x 1000 useful.
//   in place: p-1's replica moves to p-3, p-2's keeps running with all its work; the whole job waits 30 s for the
//             new rank (--in-place-overhead-s): ends at 1030, holding 16 x 1030.
//   in place, no free node (j2 holds p-3 until 2000): the core's fallback restarts j1 from its checkpoint; it
//             waits for p-3 and runs 2000..2460 (400 s + 60 s).
TEST(TraceReplay, InPlaceRecoveryKeepsTheWorkAndChargesThePause) {
  const std::string three_nodes = R"(
cluster:
  nodes: [{name: p-[1-3], instance_type: ml.p4d.24xlarge}]
teams:
  - name: ml
    allocation: [{instance_type: ml.p4d.24xlarge, instances: 3}]
events:
  - {at: 700, fail_node: p-1}
)";
  const Trace one_job = trace("id,submit_s,duration_s,gpus,team\nj1,0,1000,16,ml\n");
  ReplayOptions o;
  o.failures.mtbf_hours = 1e9;  // auto-resume's retries; no failure of its own draws comes within the trace
  o.failures.checkpoint_s = 600;
  o.failures.restart_overhead_s = 60;
  o.failures.in_place_overhead_s = 30;
  auto run = [&](const Trace& tr, double share) {
    ReplayOptions x = o;
    x.in_place_share = share;
    auto out = run_replay(cluster(three_nodes), tr, x);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? *out : ReplayOutcome{};
  };
  const ReplayOutcome restart = run(one_job, 0);
  ASSERT_EQ(restart.jobs.size(), 1u);
  EXPECT_EQ(restart.node_failures, 0) << "the cluster file's failure is not one of the replay's draws";
  EXPECT_EQ(restart.jobs[0].restarts, 1);
  EXPECT_EQ(restart.jobs[0].end_s, 1160);
  EXPECT_EQ(restart.jobs[0].total_gpu_seconds_held, 16 * 1160);
  EXPECT_EQ(restart.jobs[0].useful_gpu_seconds, 16 * 1000);
  EXPECT_EQ(restart.in_place_recoveries, 0);
  EXPECT_EQ(restart.failure_lost_gpu_seconds, 16 * (100 + 60)) << "700 - 600 s since the checkpoint, and the overhead";
  EXPECT_EQ(restart.failure_lost_multi_node_gpu_seconds, 16 * (100 + 60));

  const ReplayOutcome in_place = run(one_job, 1);
  ASSERT_EQ(in_place.jobs.size(), 1u);
  EXPECT_EQ(in_place.jobs[0].restarts, 0);
  EXPECT_EQ(in_place.jobs[0].end_s, 1030) << "no work lost, 30 s of pause";
  EXPECT_EQ(in_place.jobs[0].total_gpu_seconds_held, 16 * 1030) << "the pause is held at all the job's GPUs";
  EXPECT_EQ(in_place.jobs[0].useful_gpu_seconds, 16 * 1000);
  EXPECT_EQ(in_place.in_place_recoveries, 1);
  EXPECT_EQ(in_place.in_place_fallbacks, 0);
  EXPECT_EQ(in_place.failure_lost_gpu_seconds, 16 * 30) << "the pause alone";
  const ReplayMetrics m = compute_metrics(in_place.jobs, in_place.cluster, in_place.samples);
  EXPECT_NEAR(m.goodput, 1000.0 / 1030.0, 1e-9);
  EXPECT_LT(in_place.jobs[0].total_gpu_seconds_held - in_place.jobs[0].useful_gpu_seconds,
            restart.jobs[0].total_gpu_seconds_held - restart.jobs[0].useful_gpu_seconds);

  // Without --in-place-overhead-s the pause is the restart's overhead.
  ReplayOptions same = o;
  same.in_place_share = 1;
  same.failures.in_place_overhead_s.reset();
  auto out = run_replay(cluster(three_nodes), one_job, same);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->jobs[0].end_s, 1060);

  const ReplayOutcome full = run(trace("id,submit_s,duration_s,gpus,team\nj1,0,1000,16,ml\nj2,0,2000,8,ml\n"), 1);
  ASSERT_EQ(full.jobs.size(), 2u);
  EXPECT_EQ(full.in_place_recoveries, 0);
  EXPECT_EQ(full.in_place_fallbacks, 1) << "no free node for the lost replica: the core's full restart";
  EXPECT_EQ(full.jobs[0].restarts, 1);
  EXPECT_EQ(full.jobs[0].end_s, 2460);
  EXPECT_EQ(full.failure_lost_gpu_seconds, 16 * (100 + 60));
}

// On a busy cluster with frequent failures, multi-node jobs that recover in place (when a node is free) lose less
// than the same jobs restarting from hourly checkpoints.
TEST(TraceReplay, InPlaceRecoveryRaisesGoodputUnderFailures) {
  Scenario sc = cluster(kTwoTeams);
  Trace tr = synthetic(5, 300);
  ReplayOptions o;
  o.seed = 5;
  o.failures.mtbf_hours = 6;
  o.failures.checkpoint_s = 3600;
  o.failures.restart_overhead_s = 120;
  auto restart = run_replay(sc, tr, o);
  ASSERT_TRUE(restart.ok());
  o.in_place_share = 1;
  auto in_place = run_replay(sc, tr, o);
  ASSERT_TRUE(in_place.ok());
  EXPECT_EQ(restart->in_place_recoveries, 0);
  EXPECT_GT(in_place->in_place_recoveries, 0);
  const ReplayMetrics a = compute_metrics(restart->jobs, restart->cluster, restart->samples);
  const ReplayMetrics b = compute_metrics(in_place->jobs, in_place->cluster, in_place->samples);
  EXPECT_GT(b.goodput, a.goodput) << "a recovery in place loses the pause, a restart up to an hour";
  EXPECT_EQ(b.finished_jobs, 300);
}

}  // namespace
}  // namespace allot::sim::trace_replay_test
