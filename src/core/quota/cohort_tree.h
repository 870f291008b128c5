#pragma once
// Cohort trees (docs/scheduling.md, "Cohort trees"; Kueue's hierarchical cohorts): teams name a group, groups
// nest, and quota is shared along the tree. The cluster is the one node above every root group and every team
// without a group; its own quota is the idle pool (quota.h). A flat cluster (no groups) is the tree whose top
// holds every team, and quota.cpp keeps its own arithmetic for it (the same result, checked by a unit test).
//
// Per (instance type, resource), for a node X (a lending team, a group, the cluster), with C its children:
//
//   S_X   subtree quota:   N_T for a team;   N_G + sum over C of lendable_C for a group;
//                          idle + sum over C of lendable_C for the cluster
//   g_X   guaranteed:      0 for a team;   S_G - S_G * lend_limit / 100 for a group with a lending limit, else 0
//   lendable_X = S_X - g_X   (what X puts into its parent's pool)
//   U_X   usage:           what T's running jobs hold (counted) for a team;   sum over C of max(0, U_C - g_C)
//                          otherwise (only what a child takes beyond what it keeps for itself reaches the parent)
//   b_X   borrowing limit: N_T * borrow_limit / 100 for a LendAndBorrow team, 0 for Lend;
//                          S_G * borrow_limit / 100 for a group with one; none otherwise
//
//   available(cluster) = S - U
//   available(X)       = max(0, g_X - U_X) + min(available(parent), lendable_X - max(0, U_X - g_X) + b_X)
//                        (the min only where X has a borrowing limit)
//
// A request R of a lending team T fits when R <= available(T) in every resource. DontLend teams stay outside
// the tree, as outside the flat pool: their quota is their own.
#include <optional>
#include <string>
#include <vector>

#include "core/model/explanation.h"
#include "core/model/ids.h"
#include "core/model/resources.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot {

struct ClusterState;
using UsageTable = std::vector<std::vector<Resources>>;

struct CohortGroup {
  GroupSpec spec;
  int parent = -1;                 // index into CohortTree::groups; -1: a root, under the cluster
  std::vector<Resources> nominal;  // per instance type: the group's own allocation, resolved
};

// Derived from the policy's groups, the teams and the catalog (state.cpp rebuilds it when any changes).
struct CohortTree {
  std::vector<CohortGroup> groups;  // in the policy's order
  std::vector<int> team_group;      // per team (TeamId index): its group, -1 under the cluster
  std::vector<int> bottom_up;       // group indices, every child before its parent
  bool empty() const { return groups.empty(); }
  int find(std::string_view name) const;  // -1 when there is no such group
};

// The groups alone: names, parents, cycles, ranges. Errors name the group and what is allowed; `at`, when given,
// is set to the index of the group at fault.
Status check_groups(const std::vector<GroupSpec>& groups, size_t* at = nullptr);
// The tree for `groups` with the state's catalog and teams: allocations resolved, every team's group known.
Result<CohortTree> build_cohort_tree(const ClusterState& s, const std::vector<GroupSpec>& groups);

// The figures of every group and of the cluster for one type (the formulas above).
struct CohortFigures {
  std::vector<Resources> subtree, guaranteed, used;  // per group
  Resources cluster_subtree, cluster_used;
};
CohortFigures cohort_figures(const ClusterState& s, const UsageTable& usage, TypeId type, const Resources& idle);

// Why a lending team's request does not fit along the tree, or nothing when it fits. `within_nominal` says
// whether the request is within the team's own quota (it chooses the reason code, as in quota.h).
std::optional<Explanation> check_cohort_tree(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type,
                                             const Resources& request, const Resources& idle, bool within_nominal);

}  // namespace allot
