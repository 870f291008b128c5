#pragma once
// What the server observes over time for the dashboard and /metrics, beside the cluster's state: queue waits
// per team and priority class, admissions and preemptions by rule, team and instance type, scheduler pass
// durations, and samples of accelerator use per instance type for the utilisation chart.
//
// Waits and rule counters are taken from journal records (at their record time), so a restart's replay
// rebuilds them; pass durations and utilisation samples are measured live and start afresh with the process.
// Thread-safety: none; only the writer thread touches an Observed (it lives in ServerState).
#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model.h"

namespace allot {
struct ClusterState;
}

namespace allot::server {

// A Prometheus histogram over fixed upper bounds (cumulative buckets are formed at render time).
class Histogram {
 public:
  explicit Histogram(std::span<const double> bounds) : bounds_(bounds), counts_(bounds.size() + 1, 0) {}
  void observe(double value);
  std::span<const double> bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // the last one: above every bound
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }
  // Sets what a snapshot recorded (server/writer/state_snapshot.h); false, and nothing changed, when the counts do not
  // match this histogram's bounds or its count.
  bool restore(std::vector<uint64_t> counts, double sum, uint64_t count) {
    if (counts.size() != counts_.size()) return false;
    uint64_t total = 0;
    for (uint64_t c : counts) total += c;
    if (total != count) return false;
    counts_ = std::move(counts);
    sum_ = sum;
    count_ = count;
    return true;
  }

 private:
  std::span<const double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Seconds from becoming Pending (or Suspended) to admission: seconds to days.
inline constexpr double kQueueWaitBounds[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400};
// Seconds one scheduler pass takes: tens of microseconds to seconds.
inline constexpr double kPassBounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

// Accelerators in use and in the cluster, per instance type (by TypeId index), at one time.
struct UtilisationSample {
  Time at = 0;
  std::vector<std::pair<int64_t, int64_t>> in_use_of_total;
};

// The labels of one by-rule counter: the rule, the job's team and one instance type the job held. A job placed
// on several instance types counts once under each of them (so counts are never added over instance types: a
// sum would count such a job more than once, and a Grafana board keeps instance types apart anyway). Teams and
// instance types are the administrator's sets and rules a closed one, so the series stay few.
struct RuleKey {
  std::string rule, team, instance_type;
  friend auto operator<=>(const RuleKey&, const RuleKey&) = default;
};

// The labels of one queue-wait histogram: the team, the priority class ("none" for none) and one instance type
// the admission placed the job on (a job on several counts once under each, as RuleKey).
struct QueueWaitKey {
  std::string team, priority, instance_type;
  friend auto operator<=>(const QueueWaitKey&, const QueueWaitKey&) = default;
};

struct Observed {
  std::map<QueueWaitKey, Histogram> queue_wait;
  std::map<RuleKey, uint64_t> admissions_by_rule;   // rules: within-nominal, borrowing
  std::map<RuleKey, uint64_t> preemptions_by_rule;  // rules: reclaim, priority, fair_share, unrecorded
  Histogram pass_seconds{kPassBounds};
  std::deque<UtilisationSample> utilisation;  // oldest first, one per kSampleEvery, kSamplesKept at most
  static constexpr Time kSampleEvery = 60;
  static constexpr size_t kSamplesKept = 24 * 60;

  // A job was admitted at `at` under `borrowing` (its placement is the new one); it had waited since its
  // waiting_since.
  void admitted(const ClusterState& s, const Job& job, bool borrowing, Time at);
  // A job of `team` that held `types` was preempted under `rule`, as its journal record names it; records
  // written before rules were journaled name none and count as "unrecorded".
  void preempted(const ClusterState& s, std::optional<PreemptionRule> rule, TeamId team, const std::vector<TypeId>& types);
  // Takes a utilisation sample when the last one is kSampleEvery old.
  void sample(const ClusterState& s, Time now);
};

// The instance types a placement uses, each once, in the order of its pod sets.
std::vector<TypeId> placement_types(const Placement& p);

// Accelerators held by replicas and in the cluster per instance type (by TypeId index), nodes of any health.
UtilisationSample utilisation_now(const ClusterState& s, Time now);

}  // namespace allot::server
