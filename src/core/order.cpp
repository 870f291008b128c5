#include "core/order.h"

#include <algorithm>

namespace allot {

bool QueueOrder::jobs_before(const Job& a, const Job& b) const {
  if (s_.policy.task_prioritization == TaskPrioritization::kTaskRanking && a.priority != b.priority)
    return a.priority > b.priority;
  return a.arrival < b.arrival;
}

bool QueueOrder::by_priority() const { return s_.policy.task_prioritization == TaskPrioritization::kTaskRanking; }

void QueueOrder::sort(std::vector<JobId>& jobs) const {
  sort_by(jobs, [&](JobId id) {
    const Job& j = s_.jobs[id.index()];
    return std::pair<int, uint64_t>{j.priority, j.arrival};
  });
}

namespace {

// fcfs: the teams' head jobs in queue order.
class ArrivalBorrowers final : public Sorter {
 public:
  ArrivalBorrowers(const QueueOrder& queue, HeadOf head) : queue_(queue), head_(std::move(head)) {}
  void update(uint32_t) override {}
  bool before(uint32_t a, uint32_t b) const override { return queue_.jobs_before(head_(a), head_(b)); }

 private:
  const QueueOrder& queue_;
  HeadOf head_;
};

// fair-share: a team's value changes only when its own usage does, so it is cached and recomputed on update
// (callers update every team before they first compare it).
class FairShareBorrowers final : public Sorter {
 public:
  FairShareBorrowers(const ClusterState& s, const QueueOrder& queue, HeadOf head)
      : s_(s), queue_(queue), head_(std::move(head)), share_(s.teams.size()) {}
  void update(uint32_t team) override { share_[team] = fair_share_value(s_, s_.usage, TeamId(team)); }
  bool before(uint32_t a, uint32_t b) const override {
    const Share& x = share_[a];
    const Share& y = share_[b];
    if (!(x == y)) return x < y;
    const int wa = s_.teams[a].spec.fair_share_weight, wb = s_.teams[b].spec.fair_share_weight;
    if (wa != wb) return wa > wb;
    return queue_.jobs_before(head_(a), head_(b));
  }

 private:
  const ClusterState& s_;
  const QueueOrder& queue_;
  HeadOf head_;
  std::vector<Share> share_;
};

}  // namespace

std::unique_ptr<Sorter> borrower_order(const ClusterState& s, const QueueOrder& queue, HeadOf head) {
  if (s.policy.idle_compute == IdleCompute::kFairShare)
    return std::make_unique<FairShareBorrowers>(s, queue, std::move(head));
  return std::make_unique<ArrivalBorrowers>(queue, std::move(head));
}

}  // namespace allot
