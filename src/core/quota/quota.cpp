#include "core/quota/quota.h"

#include <algorithm>

#include "core/quota/cohort_tree.h"

namespace allot {
Resources idle_capacity(const ClusterState& s, TypeId type) {
  if (!s.policy.idle_pool) return type.index() < s.plan_idle.size() ? s.plan_idle[type.index()] : Resources{};
  Resources nominal_sum;
  for (const Team& t : s.teams) nominal_sum += t.nominal[type.index()];
  return max0(s.type_capacity(type) - nominal_sum);
}

namespace {

std::string amount_text(Resource r, int64_t v) {
  return format_amount(r, v) + (r == Resource::kAccelerators ? (v == 1 ? " accelerator" : " accelerators") : r == Resource::kVcpu ? " vCPU" : " GiB memory");
}

}  // namespace

Resources team_max(const Team& t, TypeId type) {
  const Resources& n = t.nominal[type.index()];
  if (!t.borrows()) return n;
  Resources extra;
  for (Resource r : kAllResources) extra.at(r) = n.get(r) * t.spec.borrow_limit / 100;
  return n + extra;
}

Resources pool_capacity(const ClusterState& s, TypeId type) {
  Resources p = idle_capacity(s, type);
  for (const Team& t : s.teams)
    if (t.lends()) p += t.nominal[type.index()];
  return p;
}

Resources pool_used(const ClusterState& s, const UsageTable& usage, TypeId type) {
  Resources u;
  for (const Team& t : s.teams)
    if (t.lends()) u += t.counted(type, usage[t.id.index()][type.index()]);
  return u;
}

PoolTotals pool_totals(const ClusterState& s, const UsageTable& usage) {
  PoolTotals totals;
  for (size_t k = 0; k < s.catalog.size(); ++k) {
    const TypeId type(static_cast<uint32_t>(k));
    totals.capacity.push_back(pool_capacity(s, type));
    totals.used.push_back(pool_used(s, usage, type));
  }
  return totals;
}

namespace {

// A lending team's counted usage of `types`, taken out of the pool's totals or put back: one walk, two directions.
enum class PoolShareMove { kOut, kIn };
void move_pool_share(PoolTotals& totals, const ClusterState& s, const UsageTable& usage, TeamId team,
                     const std::vector<TypeId>& types, PoolShareMove move) {
  const Team& t = s.teams[team.index()];
  if (!t.lends()) return;
  for (TypeId type : types) {
    const Resources share = t.counted(type, usage[team.index()][type.index()]);
    Resources& used = totals.used[type.index()];
    switch (move) {
      case PoolShareMove::kOut: used -= share; break;
      case PoolShareMove::kIn: used += share; break;
    }
  }
}

}  // namespace

void pool_share_out(PoolTotals& totals, const ClusterState& s, const UsageTable& usage, TeamId team, const std::vector<TypeId>& types) {
  move_pool_share(totals, s, usage, team, types, PoolShareMove::kOut);
}

void pool_share_in(PoolTotals& totals, const ClusterState& s, const UsageTable& usage, TeamId team, const std::vector<TypeId>& types) {
  move_pool_share(totals, s, usage, team, types, PoolShareMove::kIn);
}

Resources borrowed(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type) {
  const Team& t = s.teams[team.index()];
  return max0(t.counted(type, usage[team.index()][type.index()]) - t.nominal[type.index()]);
}

bool above_nominal(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type) {
  return borrowed(s, usage, team, type).any_positive();
}

bool team_borrowing(const ClusterState& s, const UsageTable& usage, TeamId team) {
  for (size_t t = 0; t < s.catalog.size(); ++t)
    if (above_nominal(s, usage, team, TypeId(static_cast<uint32_t>(t)))) return true;
  return false;
}

QuotaVerdict check_quota(const ClusterState& s, const UsageTable& usage, TeamId team, TypeId type, const Resources& request,
                         const PoolTotals* totals) {
  QuotaVerdict v;
  const Team& t = s.teams[team.index()];
  const std::string& type_name = s.catalog.at(type).name;
  const Resources& n = t.nominal[type.index()];
  // Resources the team's allocation leaves unlimited are outside every check below.
  const Resources req = t.counted(type, request);
  const Resources after = t.counted(type, usage[team.index()][type.index()]) + req;
  const Resources max = team_max(t, type);
  v.within_nominal = after.fits_in(n);
  for (Resource r : kAllResources) {
    if (req.get(r) <= max.get(r)) continue;
    v.why.code = ReasonCode::kQuota;
    v.why.feasible = false;
    v.why.text = "quota: needs " + amount_text(r, req.get(r)) + " of " + type_name + " but team " + t.spec.name +
               " may hold at most " + format_amount(r, max.get(r)) + " (quota " + format_amount(r, n.get(r)) +
               (t.borrows() ? ", borrow limit " + std::to_string(t.spec.borrow_limit) + "%" : std::string(", ") +
                                  sharing_strategy_name(t.spec.strategy) + " never borrows") + ")";
    return v;
  }
  for (Resource r : kAllResources) {
    if (after.get(r) <= max.get(r)) continue;
    const bool limit = t.borrows() && after.get(r) > n.get(r) && n.get(r) > 0;
    v.why.code = limit ? ReasonCode::kBorrowLimit : ReasonCode::kQuota;
    v.why.text = limit
                   ? "borrow limit: team " + t.spec.name + " would hold " + amount_text(r, after.get(r)) + " of " +
                         type_name + "; quota " + format_amount(r, n.get(r)) + " plus borrow limit " +
                         std::to_string(t.spec.borrow_limit) + "% allows " + format_amount(r, max.get(r))
                   : "quota: team " + t.spec.name + " would hold " + amount_text(r, after.get(r)) + " of " + type_name +
                         "; its quota is " + format_amount(r, n.get(r)) +
                         (t.borrows() ? "" : std::string(" and ") + sharing_strategy_name(t.spec.strategy) + " never borrows");
    return v;
  }
  // With groups the pool is the cohort tree's (cohort_tree.h); without, the one flat cohort below.
  if (t.lends() && !s.cohorts.empty()) {
    if (auto why = check_cohort_tree(s, usage, team, type, req, idle_capacity(s, type), v.within_nominal)) {
      v.why = std::move(*why);
      return v;
    }
  } else if (t.lends()) {
    const Resources pool = totals ? totals->capacity[type.index()] : pool_capacity(s, type);
    const Resources used = (totals ? totals->used[type.index()] : pool_used(s, usage, type)) + req;
    for (Resource r : kAllResources) {
      if (used.get(r) <= pool.get(r)) continue;
      v.why.code = v.within_nominal ? ReasonCode::kQuotaLentOut : ReasonCode::kNoIdleQuota;
      v.why.text = v.within_nominal
                     ? "quota lent out: team " + t.spec.name + "'s quota of " + type_name +
                           " is in use by teams that borrowed it (" + amount_text(r, used.get(r) - pool.get(r)) + " short)"
                     : "no idle quota to borrow: the cohort's lendable " + type_name + " quota is in use (" +
                           amount_text(r, used.get(r) - pool.get(r)) + " short)";
      return v;
    }
  }
  v.fits = true;
  return v;
}

std::vector<Resources> lent_by_team(const ClusterState& s, const UsageTable& usage, TypeId type) {
  std::vector<Resources> lent(s.teams.size());
  Resources total_borrowed, total_unused;
  std::vector<Resources> unused(s.teams.size());
  for (const Team& t : s.teams) {
    if (!t.lends()) continue;
    total_borrowed += borrowed(s, usage, t.id, type);
    unused[t.id.index()] = max0(t.nominal[type.index()] - usage[t.id.index()][type.index()]);
    total_unused += unused[t.id.index()];
  }
  // The idle pool lends first: it is nobody's quota.
  Resources from_teams = max0(total_borrowed - idle_capacity(s, type));
  // Teams in name order receive the rounding remainders, so the split is deterministic and adds up exactly.
  std::vector<size_t> order(s.teams.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.teams[a].spec.name < s.teams[b].spec.name; });
  for (Resource r : kAllResources) {
    int64_t want = std::min(from_teams.get(r), total_unused.get(r)), given = 0;
    if (want <= 0) continue;
    for (size_t i : order) {
      int64_t share = static_cast<int64_t>(static_cast<__int128>(want) * unused[i].get(r) / total_unused.get(r));
      lent[i].at(r) = share;
      given += share;
    }
    for (size_t i : order) {
      if (given >= want) break;
      if (lent[i].get(r) < unused[i].get(r)) {
        ++lent[i].at(r);
        ++given;
      }
    }
  }
  return lent;
}

bool operator<(const Share& a, const Share& b) {
  if (a.den == 0) return false;
  if (b.den == 0) return true;
  return static_cast<__int128>(a.num) * b.den < static_cast<__int128>(b.num) * a.den;
}

bool operator==(const Share& a, const Share& b) { return !(a < b) && !(b < a); }

Share fair_share_value(const ClusterState& s, const UsageTable& usage, TeamId team) {
  const Team& t = s.teams[team.index()];
  if (t.spec.fair_share_weight <= 0) return {1, 0};
  Share best{0, 1};
  for (size_t i = 0; i < s.catalog.size(); ++i) {
    TypeId type(static_cast<uint32_t>(i));
    Resources b = borrowed(s, usage, team, type);
    if (!b.any_positive()) continue;
    Resources pool = pool_capacity(s, type);
    for (Resource r : kAllResources) {
      if (pool.get(r) <= 0 || b.get(r) <= 0) continue;
      Share sh{b.get(r), pool.get(r)};
      if (best < sh) best = sh;
    }
  }
  return {best.num, best.den * t.spec.fair_share_weight};
}

}  // namespace allot
