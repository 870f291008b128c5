#pragma once
// A group's fair share in a cohort tree (docs/scheduling.md, "Cohort trees", fair share; Kueue's hierarchical fair
// sharing): its subtree's borrowed dominant share, max over types and resources of max(0, U - S) (cohort_tree.h)
// over the cluster's pool, divided by the group's fair_share_weight (weight 0: infinite). The one home of the
// rule for the borrowers' order (order.cpp) and fair-sharing preemption (fair_share_preemption.cpp).
#include <vector>

#include "core/quota/cohort_tree.h"
#include "core/quota/quota.h"

namespace allot {

struct GroupShare {
  Share share;     // borrowed dominant share / weight
  Share borrowed;  // the borrowed dominant share itself (what orders groups of weight 0)
};

// Every group's share with `usage` (indexed as s.cohorts.groups).
std::vector<GroupShare> group_shares(const ClusterState& s, const UsageTable& usage);

}  // namespace allot
