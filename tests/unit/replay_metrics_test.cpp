// Replay metrics on a tiny replay worked out by hand, plus the edge cases of each definition.
#include "sim/replay_metrics.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace allot::sim::replay_metrics_test {
namespace {

// A 4-GPU cluster; team a is entitled to 3 GPUs, team b to 1.
//   j1  a  2 GPUs  submit 0   start 0    end 100  multi-node over 1 domain
//   j2  a  2 GPUs  submit 0   start 0    end 50
//   j3  b  4 GPUs  submit 10  start 120  end 200  multi-node over 2 domains; b borrows 3 GPUs for 80 s = 240
//   j4  b  1 GPU   submit 20  start 50   end 120  preempted once: held 70 GPU-s, 60 of them useful
// Busy GPUs: [0,50) 4, [50,100) 3 (j1, j4), [100,120) 1 (j4; j3 needs 4), [120,200) 4 (j3).
// Held = 200 + 100 + 320 + 70 = 690 = the integral of busy GPUs.
//   makespan 200; utilization 690 / (4 x 200) = 0.8625; goodput (690 - 10) / 690 = 0.985507
//   queueing delays 0, 0, 110, 30: avg 35; nearest rank of 4 values: p50 = rank 2 = 0, p99 = rank 4 = 110
//   JCTs 100, 50, 190, 100: avg 110; sorted 50, 100, 100, 190: p50 = 100, p99 = 190
//   locality: 1 of 2 multi-node jobs in one domain = 0.5; avg domains (1 + 2) / 2 = 1.5
// Contention (a job queued) during [10,120) = 110 s:
//   [10,50) busy 4, all a: a 160;  [50,100) busy 3: a 100, b 50;  [100,120) busy 1, b: b 20
//   contended GPU-time 330: received a = 260/330 = 0.787879, b = 70/330 = 0.212121; entitled 0.75 / 0.25
//   team a: gpu_hours 300/3600, avg queue 0;  team b: gpu_hours 390/3600, avg queue (110 + 30)/2 = 70
// A job that ran once without loss; tests adjust the other fields.
JobRecord ran(std::string id, std::string team, int gpus, int64_t submit, int64_t start, int64_t end) {
  const int64_t held = gpus * (end - start);
  return {.id = std::move(id), .team = std::move(team), .gpus = gpus, .submit_s = submit, .first_start_s = start,
          .end_s = end, .useful_gpu_seconds = held, .total_gpu_seconds_held = held};
}

struct Tiny {
  std::vector<JobRecord> jobs = {ran("j1", "a", 2, 0, 0, 100), ran("j2", "a", 2, 0, 0, 50),
                                 ran("j3", "b", 4, 10, 120, 200), ran("j4", "b", 1, 20, 50, 120)};
  ClusterInfo cluster{.total_gpus = 4, .teams = {{"a", 3}, {"b", 1}}};
  std::vector<Sample> samples = {{0, 4, 0, {4, 0}},   {10, 4, 1, {4, 0}},  {20, 4, 2, {4, 0}}, {50, 3, 1, {2, 1}},
                                 {100, 1, 1, {0, 1}}, {120, 4, 0, {0, 4}}, {200, 0, 0, {0, 0}}};
  Tiny() {
    jobs[0].multi_node = true, jobs[0].domains_used = 1;
    jobs[2].multi_node = true, jobs[2].domains_used = 2, jobs[2].borrowed_gpu_seconds = 240;
    jobs[3].preemptions = 1, jobs[3].useful_gpu_seconds = 60;  // 10 GPU-s of work lost to the preemption
  }
};

TEST(MetricsReplay, TinyReplayByHand) {
  Tiny t;
  const ReplayMetrics m = compute_metrics(t.jobs, t.cluster, t.samples);
  EXPECT_EQ(m.all.jobs, 4);
  EXPECT_EQ(m.makespan_s, 200);
  EXPECT_DOUBLE_EQ(m.utilization, 0.8625);
  EXPECT_DOUBLE_EQ(m.all.queue.avg_s, 35);
  EXPECT_EQ(m.all.queue.p50_s, 0);
  EXPECT_EQ(m.all.queue.p99_s, 110);
  EXPECT_DOUBLE_EQ(m.all.jct.avg_s, 110);
  EXPECT_EQ(m.all.jct.p50_s, 100);
  EXPECT_EQ(m.all.jct.p99_s, 190);
  EXPECT_EQ(m.all.preemptions, 1);
  EXPECT_DOUBLE_EQ(m.all.borrowed_gpu_hours, 240.0 / 3600);
  EXPECT_DOUBLE_EQ(m.goodput, 680.0 / 690);
  EXPECT_EQ(m.multi_node_jobs, 2);
  EXPECT_DOUBLE_EQ(m.locality_one_domain_share, 0.5);
  EXPECT_DOUBLE_EQ(m.avg_domains_per_job, 1.5);
  EXPECT_EQ(m.contended_s, 110);

  const TeamMetrics& a = m.teams.at("a");
  const TeamMetrics& b = m.teams.at("b");
  EXPECT_DOUBLE_EQ(a.entitled_share, 0.75);
  EXPECT_DOUBLE_EQ(b.entitled_share, 0.25);
  EXPECT_DOUBLE_EQ(a.received_share, 260.0 / 330);
  EXPECT_DOUBLE_EQ(b.received_share, 70.0 / 330);
  EXPECT_DOUBLE_EQ(a.group.gpu_hours, 300.0 / 3600);
  EXPECT_DOUBLE_EQ(b.group.gpu_hours, 390.0 / 3600);
  EXPECT_DOUBLE_EQ(a.group.queue.avg_s, 0);
  EXPECT_DOUBLE_EQ(b.group.queue.avg_s, 70);

  // Jain's index over a (received 260/330 of an entitled 0.75) and b (70/330 of 0.25).
  const double xa = 260.0 / 330 / 0.75, xb = 70.0 / 330 / 0.25;
  EXPECT_NEAR(m.fairness_jain, (xa + xb) * (xa + xb) / (2 * (xa * xa + xb * xb)), 1e-12);

  ASSERT_EQ(m.sizes.size(), 2u);
  EXPECT_EQ(m.sizes.at("1").jobs, 1);
  EXPECT_DOUBLE_EQ(m.sizes.at("1").queue.avg_s, 30);
  EXPECT_EQ(m.sizes.at("2-8").jobs, 3);
  EXPECT_DOUBLE_EQ(m.sizes.at("2-8").jct.avg_s, (100 + 50 + 190) / 3.0);
}

TEST(MetricsReplay, JsonHasTheContractKeys) {
  Tiny t;
  const nlohmann::json j = to_json(compute_metrics(t.jobs, t.cluster, t.samples));
  for (const char* key : {"jobs", "makespan_s", "utilization", "avg_queue_s", "p50_queue_s", "p99_queue_s", "avg_jct_s",
                          "preemptions", "borrowed_gpu_hours", "locality_one_domain_share", "goodput", "teams",
                          "p50_jct_s", "p99_jct_s", "avg_domains_per_job", "sizes", "fairness_jain"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["jobs"], 4);
  EXPECT_EQ(j["makespan_s"], 200);
  EXPECT_DOUBLE_EQ(j["utilization"].get<double>(), 0.8625);
  EXPECT_DOUBLE_EQ(j["goodput"].get<double>(), 0.985507);  // 6 decimals
  for (const char* team : {"a", "b"}) {
    for (const char* key : {"gpu_hours", "entitled_share", "received_share", "avg_queue_s"})
      EXPECT_TRUE(j["teams"][team].contains(key)) << team << "." << key;
  }
  EXPECT_DOUBLE_EQ(j["teams"]["b"]["received_share"].get<double>(), 0.212121);
  EXPECT_DOUBLE_EQ(j["teams"]["b"]["avg_queue_s"].get<double>(), 70);
  EXPECT_EQ(j["sizes"]["2-8"]["jobs"], 3);
}

// The backfill figures, with policy.backfill only: in the tiny replay say j4 started as a backfill (ahead of j3,
// which held a reservation planned for t=100 and started at 120: 20 s late), and j2 held one planned for t=10 and
// started at 0 (10 s early). Backfilled 1 of 4 started = 0.25; delays +20 and -10: avg 5, nearest rank p50 = -10,
// p99 = 20; one late.
TEST(MetricsReplay, BackfillFiguresOnlyWithBackfill) {
  Tiny t;
  EXPECT_FALSE(compute_metrics(t.jobs, t.cluster, t.samples).backfill);
  EXPECT_FALSE(to_json(compute_metrics(t.jobs, t.cluster, t.samples)).contains("backfill_figures"));
  t.cluster.backfill = true;
  t.jobs[3].backfilled = true;
  t.jobs[2].reserved_start_s = 100;
  t.jobs[1].reserved_start_s = 10;
  const ReplayMetrics m = compute_metrics(t.jobs, t.cluster, t.samples);
  ASSERT_TRUE(m.backfill);
  EXPECT_EQ(m.backfill->backfilled_jobs, 1);
  EXPECT_DOUBLE_EQ(m.backfill->backfilled_share, 0.25);
  EXPECT_EQ(m.backfill->reserved_jobs, 2);
  EXPECT_DOUBLE_EQ(m.backfill->reservation_delay.avg_s, 5);
  EXPECT_EQ(m.backfill->reservation_delay.p50_s, -10);
  EXPECT_EQ(m.backfill->reservation_delay.p99_s, 20);
  EXPECT_EQ(m.backfill->late_jobs, 1);
  const nlohmann::json j = to_json(m)["backfill_figures"];
  EXPECT_EQ(j["backfilled_jobs"], 1);
  EXPECT_EQ(j["p99_reservation_delay_s"], 20);
  EXPECT_NE(format_summary(m).find("1 jobs backfilled (0.250"), std::string::npos) << format_summary(m);
  // Neither held its reservation until it started: no held-to-start figures.
  EXPECT_EQ(j["held_to_start_jobs"], 0);
  // j3 held one from a pass that planned t=110 until it started at 120 (late), j2 one planned for t=10 (early).
  t.jobs[2].held_start_s = 110;
  t.jobs[1].held_start_s = 10;
  const ReplayMetrics held = compute_metrics(t.jobs, t.cluster, t.samples);
  EXPECT_EQ(held.backfill->held_to_start_jobs, 2);
  EXPECT_EQ(held.backfill->held_to_start_late_jobs, 1);
  EXPECT_EQ(to_json(held)["backfill_figures"]["held_to_start_late_jobs"], 1);
  EXPECT_NE(format_summary(held).find("2 held it until they started, 1 of them late"), std::string::npos) << format_summary(held);
}

TEST(MetricsReplay, JainIndexIsOneWhenEvenAndOneOverNWhenOneTeamGetsAll) {
  EXPECT_DOUBLE_EQ(jain_index({}), 1);
  EXPECT_DOUBLE_EQ(jain_index({0, 0}), 1);
  EXPECT_DOUBLE_EQ(jain_index({0.8, 0.8, 0.8}), 1);
  EXPECT_DOUBLE_EQ(jain_index({2, 0}), 0.5);
  EXPECT_DOUBLE_EQ(jain_index({3, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(jain_index({1, 3}), 16.0 / 20);
}

TEST(MetricsReplay, PercentileIsNearestRank) {
  std::vector<int64_t> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_EQ(percentile_nearest_rank(hundred, 50), 50);
  EXPECT_EQ(percentile_nearest_rank(hundred, 99), 99);
  EXPECT_EQ(percentile_nearest_rank(hundred, 100), 100);
  EXPECT_EQ(percentile_nearest_rank({7, 3, 5}, 50), 5);  // rank ceil(1.5) = 2
  EXPECT_EQ(percentile_nearest_rank({7, 3, 5}, 99), 7);  // rank ceil(2.97) = 3
  EXPECT_EQ(percentile_nearest_rank({42}, 1), 42);
  EXPECT_EQ(percentile_nearest_rank({}, 50), 0);
}

TEST(MetricsReplay, SizeBuckets) {
  EXPECT_STREQ(size_bucket(1), "1");
  EXPECT_STREQ(size_bucket(2), "2-8");
  EXPECT_STREQ(size_bucket(8), "2-8");
  EXPECT_STREQ(size_bucket(9), "9-64");
  EXPECT_STREQ(size_bucket(64), "9-64");
  EXPECT_STREQ(size_bucket(65), "65+");
}

// A job that never started is counted but not averaged; no contention falls back to all GPU-time; no
// multi-node job gives a locality share of 1; a team without jobs still appears with its entitlement.
TEST(MetricsReplay, EdgeCases) {
  std::vector<JobRecord> jobs = {ran("x", "a", 1, 100, 100, 160), {.id = "y", .team = "", .gpus = 128, .submit_s = 130}};
  ClusterInfo cluster{.total_gpus = 2, .teams = {{"a", 1}, {"idle", 1}}};
  std::vector<Sample> samples = {{100, 1, 0, {1, 0}}, {160, 0, 0, {0, 0}}};
  const ReplayMetrics m = compute_metrics(jobs, cluster, samples);
  EXPECT_EQ(m.start_s, 100);
  EXPECT_EQ(m.makespan_s, 60);
  EXPECT_EQ(m.unstarted_jobs, 1);
  EXPECT_EQ(m.unfinished_jobs, 1);
  EXPECT_EQ(m.all.queue.count, 1);
  EXPECT_DOUBLE_EQ(m.utilization, 60.0 / (2 * 60));
  EXPECT_EQ(m.contended_s, 0);
  EXPECT_DOUBLE_EQ(m.teams.at("a").received_share, 1.0);
  EXPECT_DOUBLE_EQ(m.teams.at("idle").received_share, 0.0);
  EXPECT_DOUBLE_EQ(m.teams.at("idle").entitled_share, 0.5);
  EXPECT_EQ(m.teams.at("idle").group.jobs, 0);
  EXPECT_EQ(m.teams.at("(none)").group.jobs, 1);
  EXPECT_EQ(m.sizes.at("65+").jobs, 1);
  EXPECT_DOUBLE_EQ(m.locality_one_domain_share, 1.0);
  EXPECT_DOUBLE_EQ(m.avg_domains_per_job, 0.0);

  const ReplayMetrics empty = compute_metrics({}, {}, {});
  EXPECT_EQ(empty.makespan_s, 0);
  EXPECT_DOUBLE_EQ(empty.utilization, 0);
  EXPECT_DOUBLE_EQ(empty.goodput, 1);
  EXPECT_NO_THROW(to_json(empty).dump());
}

TEST(MetricsReplay, SummaryTablesAreAligned) {
  Tiny t;
  t.cluster.teams.push_back({"a-team-with-a-long-name", 0});
  const std::string s = format_summary(compute_metrics(t.jobs, t.cluster, t.samples));
  EXPECT_NE(s.find("utilization     0.86"), std::string::npos) << s;
  EXPECT_NE(s.find("queueing delay  avg 35 s, p50 0 s, p99 110 s"), std::string::npos) << s;
  // Every row of a table is as wide as its header.
  std::istringstream in(s);
  std::string line;
  size_t width = 0;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.empty()) {
      in_table = false;
      continue;
    }
    if (line.rfind("team ", 0) == 0 || line.rfind("size ", 0) == 0) {
      width = line.size();
      in_table = true;
      continue;
    }
    if (in_table) {
      EXPECT_EQ(line.size(), width) << line;
    }
  }
  EXPECT_NE(s.find("a-team-with-a-long-name"), std::string::npos);
}

}  // namespace
}  // namespace allot::sim::replay_metrics_test
