#pragma once
// How near two teams are in the cohort tree (docs/scheduling.md, "Cohort trees", reclaim): the number of groups
// their paths from the cluster share. Siblings of one group are nearer than cousins, and teams that meet only at
// the cluster (or any two teams of a cluster without groups) are 0 apart. Reclaim takes back quota from the
// nearest borrowers first (preemption.cpp, fair_share_preemption.cpp).
#include <algorithm>
#include <vector>

#include "core/quota/cohort_tree.h"
#include "core/model/ids.h"

namespace allot {

// The groups above `team`, root first.
inline std::vector<int> groups_above(const CohortTree& tree, TeamId team) {
  std::vector<int> path;
  for (int g = team.index() < tree.team_group.size() ? tree.team_group[team.index()] : -1; g >= 0; g = tree.groups[g].parent)
    path.push_back(g);
  std::reverse(path.begin(), path.end());
  return path;
}

// How many groups the paths of `a` and `b` from the cluster share: the depth of their lowest common group.
inline int cohort_nearness(const CohortTree& tree, TeamId a, TeamId b) {
  if (tree.empty()) return 0;
  const std::vector<int> pa = groups_above(tree, a), pb = groups_above(tree, b);
  int k = 0;
  while (static_cast<size_t>(k) < pa.size() && static_cast<size_t>(k) < pb.size() && pa[k] == pb[k]) ++k;
  return k;
}

// The two nodes fair sharing compares for teams `mine` and `theirs` (Kueue's hierarchical fair sharing): the nodes
// under their lowest common group, each a group (its index) or the team itself (-1), and that group (`common`; -1:
// the cluster). Teams of one group, and every two teams of a cluster without groups, are compared as teams.
struct ComparedSides {
  int mine = -1, theirs = -1, common = -1;
  bool teams() const { return mine < 0 && theirs < 0; }
};
inline ComparedSides compared_sides(const CohortTree& tree, TeamId mine, TeamId theirs) {
  if (tree.empty()) return {};
  const std::vector<int> pa = groups_above(tree, mine), pb = groups_above(tree, theirs);
  size_t k = 0;
  while (k < pa.size() && k < pb.size() && pa[k] == pb[k]) ++k;
  return {k < pa.size() ? pa[k] : -1, k < pb.size() ? pb[k] : -1, k > 0 ? pa[k - 1] : -1};
}

}  // namespace allot
