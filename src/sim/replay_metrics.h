#pragma once
// What a trace replay measured: queueing, completion, utilisation, locality, goodput and fairness, computed
// from per-job records and a time series that the replay driver collects. Pure functions of their inputs; the
// definitions below are the contract for the `allot sim replay --json` keys (DESIGN.md, "Command-line contract").
//
// Definitions (times in seconds, GPU-time in GPU-seconds unless a key says hours):
//   makespan_s        last event - first submission; the last event is the latest submission, start, end or
//                     sample time.
//   utilization       sum of total_gpu_seconds_held / (total_gpus x makespan_s); 0 when either is 0.
//   queueing delay    first_start_s - submit_s, over the jobs that started (jobs that never started are
//                     counted in `unstarted_jobs`, not averaged, since their delay is unknown).
//   JCT               end_s - submit_s, over the jobs that ended (the others are in `unfinished_jobs`).
//   percentiles       nearest rank: the p-th percentile of N sorted values is the value at 1-based rank
//                     ceil(p/100 x N); it is always one of the observed values (0 when N = 0).
//   locality_one_domain_share  multi-node jobs that started whose placement spans one lowest-layer network
//                     domain (domains_used == 1) / multi-node jobs that started; 1 when there are none, since
//                     no job was spread.
//   avg_domains_per_job  mean domains_used over those same multi-node jobs; 0 when there are none.
//   locality_fit_one_domain_share  the same share over the multi-node jobs that started and that one lowest-layer
//                     domain of the empty cluster could hold (it has as many nodes of the job's type as the job
//                     uses): how often a job that could run in one domain did; 1 when there are none. Their
//                     count is `fit_one_domain_jobs`.
//   goodput           sum of useful_gpu_seconds / sum of total_gpu_seconds_held; 1 when nothing was held.
//   per team:
//     gpu_hours       GPU-time its jobs held, in hours.
//     entitled_share  its entitled GPUs / the sum of all teams' entitled GPUs (0 when that sum is 0).
//     received_share  its share of the GPU-time used while the cluster was contended, i.e. during the sample
//                     intervals in which at least one job was queued:
//                       sum over contended intervals of team_busy x dt / sum over them of busy x dt.
//                     A team that got less than its entitled_share while jobs waited was served below its
//                     quota. Without any contended interval it falls back to the share of all GPU-time used,
//                     and `contended_s` = 0 says so.
//     avg_queue_s     the team's mean queueing delay.
//   fairness_jain     Jain's fairness index over the teams that have an entitlement (entitled_gpus > 0) and at
//                     least one job: with x = received_share / entitled_share per such team (how much of what it
//                     is entitled to it received while the cluster was contended) and n teams,
//                     (sum x)^2 / (n x sum x^2). 1 when every team received in proportion to its entitlement,
//                     1/n when one team received everything; 1 when n = 0 or every x is 0.
//   size buckets      by gpus: "1", "2-8", "9-64", "65+".
//   backfill          only for a replay with policy.backfill (ClusterInfo::backfill):
//     backfilled_jobs   jobs whose first start was a backfill: admitted ahead of the reservation's holder while it
//                       waited (core AdmitDecision::backfilled); backfilled_share is over the jobs that started.
//     reserved_jobs     jobs that held a reservation at some pass and then started.
//     reservation delay over those: first start - the start their first reservation planned (negative: earlier,
//                       since running jobs ended before their time limits); avg, p50, p99, and how many started
//                       later than planned (late_jobs: a later reservation moved them, or quota held them back).
//     held_to_start_jobs  jobs that held the reservation at every pass from some time until they started (no other
//                       job took it from them in between); held_to_start_late_jobs: of those, how many started later
//                       than the reservation planned when that stretch began. What backfill promises is that this
//                       is 0 unless a job with precedence over the holder took its room (docs/scheduling.md).
#include <cstdint>
#include <map>
#include <optional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace allot::sim {

// One trace job after the replay.
struct JobRecord {
  std::string id;
  std::string team;
  int gpus = 0;
  int64_t submit_s = 0;
  int64_t first_start_s = -1;  // -1: never started
  int64_t end_s = -1;          // -1: did not end within the replay
  int preemptions = 0;
  int restarts = 0;
  int domains_used = 0;  // lowest-layer network domains its placement spans; 0 when on one node
  bool multi_node = false;
  bool fits_one_domain = false;  // multi-node, and one lowest-layer domain of the empty cluster has the nodes
  int64_t borrowed_gpu_seconds = 0;    // GPU-time held while its team was above its nominal quota
  int64_t useful_gpu_seconds = 0;      // GPU-time whose work counted (not lost to a preemption or a failure)
  int64_t total_gpu_seconds_held = 0;  // all GPU-time held, useful or lost
  bool backfilled = false;             // its first start was a backfill (see above)
  int64_t reserved_start_s = -1;       // the start its first backfill reservation planned; -1: it never held one
  // It held the reservation at every pass from one time until its first start, and this is the start planned at
  // the first of those passes; -1: it did not (it never held one, or lost it to another holder before starting).
  int64_t held_start_s = -1;
};

struct TeamEntitlement {
  std::string name;
  int64_t entitled_gpus = 0;  // nominal quota in accelerators
};

struct ClusterInfo {
  int64_t total_gpus = 0;
  bool backfill = false;  // the replay ran with policy.backfill: the backfill figures are computed
  std::vector<TeamEntitlement> teams;
};

// The state from time t until the next sample's t (the last sample holds until the end of the makespan).
// Record one after every scheduling pass that changed something.
struct Sample {
  int64_t t = 0;
  int64_t busy_gpus = 0;
  int64_t queued_jobs = 0;
  std::vector<int64_t> team_busy_gpus;  // indexed like ClusterInfo::teams; missing entries count as 0
};

// Queueing delays or completion times of a set of jobs.
struct DelayStats {
  int64_t count = 0;
  double avg_s = 0;
  int64_t p50_s = 0;
  int64_t p99_s = 0;
};

struct BackfillMetrics {
  int64_t backfilled_jobs = 0;
  double backfilled_share = 0;
  int64_t reserved_jobs = 0;
  DelayStats reservation_delay;  // avg_s, p50_s, p99_s of start - planned start (may be negative)
  int64_t late_jobs = 0;
  int64_t held_to_start_jobs = 0;       // jobs with held_start_s
  int64_t held_to_start_late_jobs = 0;  // of those, started later than held_start_s
};

struct GroupMetrics {
  int64_t jobs = 0;
  DelayStats queue, jct;
  int64_t preemptions = 0;
  double gpu_hours = 0;
  double borrowed_gpu_hours = 0;
};

struct TeamMetrics {
  GroupMetrics group;
  int64_t entitled_gpus = 0;
  double entitled_share = 0;
  double received_share = 0;
};

struct ReplayMetrics {
  GroupMetrics all;
  int64_t total_gpus = 0;
  int64_t finished_jobs = 0;
  int64_t unstarted_jobs = 0;
  int64_t unfinished_jobs = 0;
  int64_t start_s = 0;  // the first submission: the makespan runs from start_s to start_s + makespan_s
  int64_t makespan_s = 0;
  double utilization = 0;
  int64_t restarts = 0;
  int64_t multi_node_jobs = 0;
  double locality_one_domain_share = 1;
  int64_t fit_one_domain_jobs = 0;
  double locality_fit_one_domain_share = 1;
  double avg_domains_per_job = 0;
  double goodput = 1;
  double fairness_jain = 1;
  int64_t contended_s = 0;                    // time during which at least one job was queued
  std::map<std::string, TeamMetrics> teams;   // every team of the cluster and of the records; "" as "(none)"
  std::map<std::string, GroupMetrics> sizes;  // "1", "2-8", "9-64", "65+"; only buckets that have jobs
  std::optional<BackfillMetrics> backfill;    // with ClusterInfo::backfill only
};

// Jain's fairness index of `x` (see above): 1 when empty or all zero.
double jain_index(const std::vector<double>& x);

// Nearest-rank percentile (see above) of values that need not be sorted. REQUIRES: 0 < p <= 100.
int64_t percentile_nearest_rank(std::vector<int64_t> values, double p);

// The bucket name for a job size.
const char* size_bucket(int gpus);

ReplayMetrics compute_metrics(const std::vector<JobRecord>& jobs, const ClusterInfo& cluster,
                              const std::vector<Sample>& samples);

// The `allot sim replay --json` object: the DESIGN.md keys (`jobs` is the number of trace jobs), plus
// p50/p99 JCT, counts, `avg_domains_per_job`, `contended_s`, and `sizes` (per bucket).
nlohmann::json to_json(const ReplayMetrics& m);

// A few aligned lines for people: the headline figures, then one row per team and per size bucket.
std::string format_summary(const ReplayMetrics& m);

}  // namespace allot::sim
