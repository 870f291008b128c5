#include "core/admission/order.h"

#include <algorithm>

#include "core/quota/cohort_share.h"
#include "core/quota/cohort_tree.h"

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

// fair-share over a cohort tree (docs/scheduling.md, "Cohort trees"; Kueue's hierarchical fair sharing): two teams
// are compared where their paths from the cluster part, by the shares of the two nodes (teams or groups) under
// their lowest common group; teams of one group as FairShareBorrowers does. A group's share is its subtree's
// borrowed dominant share (max(0, U - S) of cohort_tree.h over the cluster's pool) divided by its weight. One
// admission changes the shares of every group above the team, so update recomputes them all (groups are few).
class TreeFairShareBorrowers final : public Sorter {
 public:
  TreeFairShareBorrowers(const ClusterState& s, const QueueOrder& queue, HeadOf head)
      : s_(s), flat_(s, queue, std::move(head)), team_share_(s.teams.size()), group_share_(s.cohorts.groups.size()) {}
  void update(uint32_t team) override {
    flat_.update(team);
    share_dirty_ = true;
    team_share_[team] = fair_share_value(s_, s_.usage, TeamId(team));
  }
  bool before(uint32_t a, uint32_t b) const override {
    if (share_dirty_) refresh_groups();
    const std::vector<int> pa = root_path(a), pb = root_path(b);  // groups, root first
    size_t k = 0;
    while (k < pa.size() && k < pb.size() && pa[k] == pb[k]) ++k;
    if (k == pa.size() && k == pb.size()) return flat_.before(a, b);  // siblings: the flat order
    // The nodes under the lowest common group: a group (index >= 0) or the team itself (-1).
    const int na = k < pa.size() ? pa[k] : -1, nb = k < pb.size() ? pb[k] : -1;
    const Share& sa = na >= 0 ? group_share_[na] : team_share_[a];
    const Share& sb = nb >= 0 ? group_share_[nb] : team_share_[b];
    if (!(sa == sb)) return sa < sb;
    const int wa = na >= 0 ? s_.cohorts.groups[na].spec.fair_share_weight : s_.teams[a].spec.fair_share_weight;
    const int wb = nb >= 0 ? s_.cohorts.groups[nb].spec.fair_share_weight : s_.teams[b].spec.fair_share_weight;
    if (wa != wb) return wa > wb;
    if ((na >= 0) != (nb >= 0)) return na >= 0;  // a group before a team, then by index: total on distinct nodes
    return na >= 0 ? na < nb : flat_.before(a, b);
  }

 private:
  std::vector<int> root_path(uint32_t team) const {
    std::vector<int> path;
    const auto& tg = s_.cohorts.team_group;
    for (int g = team < tg.size() ? tg[team] : -1; g >= 0; g = s_.cohorts.groups[g].parent) path.push_back(g);
    std::reverse(path.begin(), path.end());
    return path;
  }
  void refresh_groups() const {
    share_dirty_ = false;
    const std::vector<GroupShare> shares = group_shares(s_, s_.usage);
    for (size_t g = 0; g < group_share_.size(); ++g) group_share_[g] = shares[g].share;
  }

  const ClusterState& s_;
  FairShareBorrowers flat_;
  std::vector<Share> team_share_;
  mutable std::vector<Share> group_share_;
  mutable bool share_dirty_ = true;
};

}  // namespace

std::unique_ptr<Sorter> borrower_order(const ClusterState& s, const QueueOrder& queue, HeadOf head) {
  if (s.policy.idle_compute == IdleCompute::kFairShare && !s.cohorts.empty())
    return std::make_unique<TreeFairShareBorrowers>(s, queue, std::move(head));
  if (s.policy.idle_compute == IdleCompute::kFairShare)
    return std::make_unique<FairShareBorrowers>(s, queue, std::move(head));
  return std::make_unique<ArrivalBorrowers>(queue, std::move(head));
}

}  // namespace allot
