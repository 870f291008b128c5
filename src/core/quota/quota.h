#pragma once
// The cohort's quota arithmetic. All teams form one cohort; per (instance type, resource):
//
//   N_T   nominal quota of team T          U_T  what T's running jobs hold
//   pool  = sum of N_T over lending teams (Lend, LendAndBorrow) + idle
//   idle  = max(0, capacity - sum of N_T over all teams)   when the policy's idle pool is on, else the capacity
//           of Active capacity plans without an owner (an owned plan's capacity is in its team's N_T instead)
//   used  = sum of U_T over lending teams
//   max_T = N_T + N_T * borrow_limit / 100                 (LendAndBorrow; N_T for Lend and DontLend)
//
// A request R of a lending team fits when U_T + R <= max_T and used + R <= pool; of a DontLend team when
// U_T + R <= N_T (its quota is its own, outside the pool). T borrows while U_T > N_T in some resource;
// borrowed_T = max(0, U_T - N_T). Borrowed capacity is attributed to the idle pool first, then to the lending
// teams in proportion to their unused quota max(0, N_T - U_T): that is what each team has lent.
// With groups (cohort trees), the pool check above is made at every level from the team up to the cluster
// instead (core/quota/cohort_tree.h); without groups that check is exactly this one.
// The fair-share order of borrowers uses the dominant share max over (type, resource) of borrowed_T / pool,
// divided by the team's weight.
#include <string>
#include <vector>

#include "core/model/explanation.h"
#include "core/model/state.h"

namespace allot {

struct QuotaVerdict {
  bool fits = false;
  bool within_nominal = false;  // U_T + R <= N_T in every resource: no borrowing needed
  // Why it does not fit: kQuota, kBorrowLimit, kQuotaLentOut or kNoIdleQuota; not feasible when R alone
  // exceeds what the team may ever hold.
  Explanation why;
};

// The flat cohort's `pool` and `used` per instance type (the formulas above) for one usage table, kept by a caller
// that checks many requests against it: summed over every team on each check, they cost a pass an eighth of its
// time. REQUIRES: in step with the table (pool_share_out before each change of a team's usage, pool_share_in after);
// the teams, the policy and the capacity unchanged since pool_totals made it.
struct PoolTotals {
  std::vector<Resources> capacity;  // pool
  std::vector<Resources> used;      // used
};
PoolTotals pool_totals(const ClusterState& s, const UsageTable& usage);
// Takes `team`'s part on `types` out of `totals.used`, or puts it back in, as `usage` holds it now.
void pool_share_out(PoolTotals& totals, const ClusterState& s, const UsageTable& usage, TeamId team, const std::vector<TypeId>& types);
void pool_share_in(PoolTotals& totals, const ClusterState& s, const UsageTable& usage, TeamId team, const std::vector<TypeId>& types);

// Resources of one job per instance type it would use under `placement` or, before placement, under its
// pod sets' types resolved against `type` for pod sets without one. `totals`, when given, describes `usage`.
QuotaVerdict check_quota(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type, const Resources& request,
                         const PoolTotals* totals = nullptr);

Resources team_max(const Team& t, TypeId type);
// Capacity outside every allocation (with the policy's idle pool on), or else only the capacity of Active plans
// without an owner (core/model/plans.h), which joins the pool whatever the policy says.
Resources idle_capacity(const ClusterState& s, TypeId type);
Resources pool_capacity(const ClusterState& s, TypeId type);
Resources pool_used(const ClusterState& s, const UsageTable& usage, TypeId type);
Resources borrowed(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type);
bool above_nominal(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type);
bool team_borrowing(const ClusterState& s, const UsageTable& usage, TeamId team);
// What each team has lent, per team, for one type (the attribution rule above).
std::vector<Resources> lent_by_team(const ClusterState& s, const UsageTable& usage, TypeId type);

// A non-negative fraction, compared exactly.
struct Share {
  int64_t num = 0;
  int64_t den = 1;  // 0 means infinite
  friend bool operator<(const Share& a, const Share& b);
  friend bool operator==(const Share& a, const Share& b);
};
// borrowed dominant share / weight; infinite for weight 0 (such a team borrows only what nobody else wants).
Share fair_share_value(const ClusterState& s, const UsageTable& usage, TeamId team);

}  // namespace allot
