#pragma once
// `allot sim replay`: a job trace through the scheduling core on a virtual clock, on a cluster described by a
// scenario file (its nodes, teams and policy; its events, if any, happen too, but its expectations are not
// checked). Returns the per-job records and the time series from which replay_metrics.h computes the report.
//
// Trace jobs become job specs (trace_jobs.h): a job that fits one node is one replica; a larger one is whole-node
// replicas with a `preferred` request at the lowest labelled network layer. Between events the clock jumps to
// the next submission, completion, node failure or repair, or scheduler wakeup; the scheduler runs after every
// instant that changed something.
//
// Failure injection (node_failures.h): each node fails after an exponential time with the given mean, is
// rebooted (back after reboot_s) or replaced (a fresh node of the same name and labels after replace_s), and
// fails again later. Jobs on a failed node auto-resume from their last checkpoint. Each restart, after a
// failure or a preemption, costs `restart_overhead_s` of extra run time (loading the checkpoint, warming up),
// which counts as held but not useful GPU-time.
//
// Recovery in place (core/lifecycle/in_place.h; `in_place_share` of the multi-node jobs): when a node of such a job fails
// and a free node takes its replicas, the job keeps running and keeps all its work (its healthy ranks keep their
// progress, the new rank copies the state from a peer), but the whole job pauses while the new rank starts and
// joins: `in_place_overhead_s` more run time at all its GPUs, held but not useful. When the lost replicas do not
// fit, the core's fallback applies: the job restarts from its last checkpoint like any other.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "sim/replay_metrics.h"
#include "sim/scenario.h"
#include "sim/trace.h"

namespace allot::sim {

struct FailureOptions {
  double mtbf_hours = 0;           // per node; 0: no failures
  int64_t reboot_s = 600;          // a rebooted node is back after this long
  int64_t replace_s = 3600;        // a replaced node's successor joins after this long
  double replace_share = 0.2;      // the share of failures that need a replacement rather than a reboot
  int64_t checkpoint_s = 3600;     // jobs keep their work up to the last multiple of this (0: all work is kept)
  int64_t restart_overhead_s = 0;  // extra run time each restart costs
  // Extra run time of each recovery in place (the whole job waits for the new rank); unset: restart_overhead_s.
  std::optional<int64_t> in_place_overhead_s;

  int64_t in_place_overhead() const { return in_place_overhead_s.value_or(restart_overhead_s); }
};

struct ReplayOptions {
  uint64_t seed = 1;
  FailureOptions failures;
  // The share of multi-node trace jobs made elastic (0..1), chosen per job from `seed`: such a job of n
  // whole-node replicas may run at ceil(n/2)..n replicas (docs/scheduling.md, "Elastic jobs"). Each resize
  // costs `failures.restart_overhead_s` like any restart.
  double elastic_share = 0;
  // The share of multi-node trace jobs given `recovery: in_place` (0..1), chosen per job from `seed`
  // independently of the elastic draw (docs/resiliency.md, "Recovery in place").
  double in_place_share = 0;
  // Every trace job declares a wall-time limit of ceil(duration x this) seconds (0: none), as users of a cluster
  // with backfill declare limits above what their jobs take (docs/scheduling.md, "Backfill").
  double time_limit_factor = 0;
  // When above time_limit_factor: each job's factor is drawn between the two, log-uniformly from `seed` (users
  // overestimate their jobs' run times by different amounts, often several times over), as F x (max/F)^u.
  double time_limit_factor_max = 0;
  // Locality is measured against this cluster's network tree (the topology-oblivious baseline places on a
  // cluster without labels, but its placements are judged on the real tree). Empty: the replayed cluster's.
  std::vector<NodeSpec> locality_nodes;
  std::vector<std::string> locality_levels;
};

struct ReplayOutcome {
  std::vector<JobRecord> jobs;  // in trace order
  std::vector<Sample> samples;
  ClusterInfo cluster;
  int64_t end_s = 0;         // the time of the last event
  int64_t node_failures = 0;
  // Jobs with recovery in_place: node failures they recovered from in place, and those that restarted them (no
  // free node for the lost replicas: the core's fallback), each counted per job and failure.
  int64_t in_place_recoveries = 0;
  int64_t in_place_fallbacks = 0;
  // GPU-time node failures cost, measured where it is lost (not in the JSON): the work since the last checkpoint
  // of each run a failure ended plus the restart overhead it then pays, and each recovery in place's pause; the
  // same for the jobs of more than one node. GPU-seconds.
  int64_t failure_lost_gpu_seconds = 0;
  int64_t failure_lost_multi_node_gpu_seconds = 0;
  int64_t schedule_calls = 0;
  // For stderr: cluster-file events ignored because their job or node was not in a state they apply to, and
  // scheduler passes that stopped at their step bound (a bug; ScheduleResult::bound_hit).
  std::vector<std::string> warnings;
};

// Errors: a cluster without nodes or teams, a trace job no node type could ever run, invalid cluster entries.
Result<ReplayOutcome> run_replay(const Scenario& cluster, const Trace& trace, const ReplayOptions& options);

}  // namespace allot::sim
