#include "core/preemption/fair_share_preemption.h"

#include <algorithm>
#include <cstdio>

#include "core/quota/cohort_nearness.h"
#include "core/quota/cohort_share.h"
#include "core/preemption/shrink.h"

namespace allot {
namespace {

constexpr ShareRule kFinalShare = ShareRule::kLessThanOrEqualToFinalShare;
constexpr ShareRule kInitialShare = ShareRule::kLessThanInitialShare;

// Adds (sign +1) or removes (-1) what a placement holds to a team's usage row.
void shift(UsageTable& usage, TeamId team, const Placement& p, int64_t sign) {
  for (const auto& ps : p.pod_sets)
    usage[team.index()][ps.type.index()] += ps.per_replica * (sign * static_cast<int64_t>(ps.replicas.size()));
}

void shift(UsageTable& usage, TeamId team, const QuotaRequest& request, int64_t sign) {
  for (const auto& [t, r] : request) usage[team.index()][t.index()] += r * sign;
}

Share share_of(const ClusterState& s, const UsageTable& usage, TeamId team) { return fair_share_value(s, usage, team); }

// A team's place in Phi (fair_share_preemption.h): its share, then the fraction of the pool it borrows.
struct TeamKey {
  Share share;
  Share borrowed;
  friend bool operator<(const TeamKey& a, const TeamKey& b) {
    if (!(a.share == b.share)) return a.share < b.share;
    return a.borrowed < b.borrowed;
  }
};

TeamKey team_key(const ClusterState& s, const UsageTable& usage, TeamId team) {
  Share borrowed_share{0, 1};
  for (size_t i = 0; i < s.catalog.size(); ++i) {
    const TypeId type(static_cast<uint32_t>(i));
    const Resources b = borrowed(s, usage, team, type);
    const Resources pool = pool_capacity(s, type);
    for (Resource r : kAllResources)
      if (pool.get(r) > 0 && b.get(r) > 0 && borrowed_share < Share{b.get(r), pool.get(r)})
        borrowed_share = Share{b.get(r), pool.get(r)};
  }
  return {share_of(s, usage, team), borrowed_share};
}

bool infinite(const Share& sh) { return sh.den == 0; }

// The order the share rules compare teams by, as Kueue compares them: by share, and two teams of weight 0 (both
// shares infinite) by the fraction of the pool they borrow. Unlike TeamKey's order, teams of equal finite shares
// are equal here, whatever they borrow.
bool fair_less(const TeamKey& a, const TeamKey& b) {
  if (infinite(a.share) && infinite(b.share)) return a.borrowed < b.borrowed;
  return a.share < b.share;
}

// The key of `v`'s team with `part` of `v` (its placement, or the replicas a shrink takes) given up (usage is
// restored before returning).
TeamKey key_without(const ClusterState& s, UsageTable& usage, const Job& v, const Placement& part) {
  shift(usage, v.team, part, -1);
  TeamKey out = team_key(s, usage, v.team);
  shift(usage, v.team, part, +1);
  return out;
}

// The key of the preemptor's team with the job admitted.
TeamKey key_with(const ClusterState& s, UsageTable& usage, const Job& job, const QuotaRequest& request) {
  shift(usage, job.team, request, +1);
  TeamKey out = team_key(s, usage, job.team);
  shift(usage, job.team, request, -1);
  return out;
}

// Whether `v`'s team stays at or above its nominal quota after losing `part` of `v` (its placement, or the
// replicas a shrink takes): in accelerators on accelerator types, in every resource on the others.
bool stays_at_nominal(const ClusterState& s, const UsageTable& usage, const Job& v, const Placement& part) {
  const Team& t = s.teams[v.team.index()];
  for (const auto& ps : part.pod_sets) {
    const Resources after = usage[v.team.index()][ps.type.index()] - ps.per_replica * static_cast<int64_t>(ps.replicas.size());
    const Resources& nominal = t.nominal[ps.type.index()];
    if (s.catalog.at(ps.type).accelerators > 0 ? after.accelerators < nominal.accelerators : !nominal.fits_in(after))
      return false;
  }
  return true;
}

// Whether a job of `v`'s team with lower priority than `v` still runs (not given up in this trial). Fair share
// takes a team's jobs lowest priority first and never past one it may not take: taking a higher-priority job
// instead lets that job take its lower-priority teammate's place at once by priority preemption, so the team's
// share does not fall, the plan only reshuffles the team, and the pass cycles (property test seed 28731: t1
// took t0's high j9 because t0 could not give up its mid j10 and stay at nominal; j9 then preempted j10).
bool shields_lower_priority(const ClusterState& s, const Job& v, const Trial& trial) {
  for (JobId id : s.running_jobs) {
    const Job& u = s.jobs[id.index()];
    if (u.team != v.team || u.priority >= v.priority) continue;
    // A shrunk teammate still runs: only one taken whole is given up.
    const bool given_up =
        std::any_of(trial.chosen.begin(), trial.chosen.end(), [&](const Victim& c) { return c.job == id && !c.shrunk(); });
    if (!given_up) return true;
  }
  return false;
}

bool above_nominal_anywhere(const ClusterState& s, const UsageTable& usage, const Job& v) {
  for (const auto& ps : v.placement.pod_sets)
    if (above_nominal(s, usage, v.team, ps.type)) return true;
  return false;
}

// What `v` still holds in the trial: all of it, or what a shrink so far left it.
Placement held_in(const Job& v, Trial& trial) {
  const Victim* e = trial.chosen_entry(v.id);
  return e ? kept_placement(v, e->keep) : v.placement;
}

// The key of a side: its team's, or its group's (cohort_share.h).
TeamKey side_key(const ClusterState& s, const UsageTable& usage, TeamId team, int group) {
  if (group < 0) return team_key(s, usage, team);
  const GroupShare g = group_shares(s, usage)[static_cast<size_t>(group)];
  return {g.share, g.borrowed};
}

// Whether share rule `rule` lets `part` of `v` go for `job` (admitted: `request`), whose team's key after admission
// is `mine`: LessThanOrEqualToFinalShare when `v`'s side, after losing it, is not below the preemptor's side after
// admission; LessThanInitialShare when the preemptor's side after admission is below `v`'s side now (fair_less:
// teams of weight 0 compared by what they borrow). The sides are the two teams, or in a cohort tree the nodes under
// their lowest common group (compared_sides, cohort_nearness.h); a group is taken from only while it borrows from
// above (its subtree holds more than its subtree quota): below that, what its teams borrow is its own members' quota.
bool rule_lets_go(ShareRule rule, const ClusterState& s, UsageTable& usage, const Job& job, const QuotaRequest& request,
                  const TeamKey& mine, const Job& v, const Placement& part) {
  const ComparedSides sides = compared_sides(s.cohorts, job.team, v.team);
  if (sides.teams()) {
    switch (rule) {
      case ShareRule::kLessThanOrEqualToFinalShare: return !fair_less(key_without(s, usage, v, part), mine);
      case ShareRule::kLessThanInitialShare: return fair_less(mine, team_key(s, usage, v.team));
    }
    return false;
  }
  const TeamKey theirs_before = side_key(s, usage, v.team, sides.theirs);
  if (sides.theirs >= 0 && theirs_before.borrowed.num == 0) return false;
  shift(usage, job.team, request, +1);
  const TeamKey mine_side = side_key(s, usage, job.team, sides.mine);
  shift(usage, job.team, request, -1);
  switch (rule) {
    case ShareRule::kLessThanOrEqualToFinalShare: {
      shift(usage, v.team, part, -1);
      const TeamKey theirs_after = side_key(s, usage, v.team, sides.theirs);
      shift(usage, v.team, part, +1);
      return !fair_less(theirs_after, mine_side);
    }
    case ShareRule::kLessThanInitialShare: return fair_less(mine_side, theirs_before);
  }
  return false;
}

// Whether one of the share rules lets `v` go for `job`, whose team's key after admission is `mine`.
bool share_rules_allow(const ClusterState& s, UsageTable& usage, const Job& job, const QuotaRequest& request,
                       const TeamKey& mine, const Job& v, const Placement& held) {
  return rule_lets_go(kFinalShare, s, usage, job, request, mine, v, held) ||
         rule_lets_go(kInitialShare, s, usage, job, request, mine, v, held);
}

// The running teammate of `v` that comes first in victim order among those it may not be taken past (the
// lowest priority; shields_lower_priority), or null when none still runs.
const Job* lowest_kept_teammate(const ClusterState& s, const Job& v, const Trial& trial) {
  const Job* out = nullptr;
  for (JobId id : s.running_jobs) {
    const Job& u = s.jobs[id.index()];
    if (u.team != v.team || u.priority >= v.priority) continue;
    const bool given_up =
        std::any_of(trial.chosen.begin(), trial.chosen.end(), [&](const Victim& c) { return c.job == id && !c.shrunk(); });
    if (!given_up && (!out || victim_order(u, *out))) out = &u;
  }
  return out;
}

// Other teams' remaining candidates, teams highest share first (teams of weight 0 among themselves the one that
// borrows more first; ties: lower weight, then name), each team's jobs in victim order. For reclaim (`reclaimer`
// given) in a cohort tree, the teams nearest the reclaimer's come first (cohort_nearness.h), then by share; in a
// cluster without groups every team is as near.
std::vector<const Job*> by_team_share(const ClusterState& s, const UsageTable& usage, const std::vector<const Job*>& others,
                                      const std::vector<char>& taken, const Job* reclaimer = nullptr) {
  std::vector<std::pair<TeamKey, uint32_t>> teams;
  std::vector<char> seen(s.teams.size(), 0);
  for (size_t i = 0; i < others.size(); ++i) {
    if (taken[i] || seen[others[i]->team.index()]) continue;
    seen[others[i]->team.index()] = 1;
    teams.push_back({team_key(s, usage, others[i]->team), others[i]->team.value});
  }
  std::vector<int> near(s.teams.size(), 0);
  if (reclaimer && !s.cohorts.empty())
    for (const auto& [key, team] : teams) near[team] = cohort_nearness(s.cohorts, reclaimer->team, TeamId(team));
  std::sort(teams.begin(), teams.end(), [&](const auto& a, const auto& b) {
    if (near[a.second] != near[b.second]) return near[a.second] > near[b.second];
    if (fair_less(a.first, b.first) || fair_less(b.first, a.first)) return fair_less(b.first, a.first);
    const Team& x = s.teams[a.second];
    const Team& y = s.teams[b.second];
    if (x.spec.fair_share_weight != y.spec.fair_share_weight) return x.spec.fair_share_weight < y.spec.fair_share_weight;
    return x.spec.name < y.spec.name;
  });
  std::vector<const Job*> out;
  for (const auto& [share, team] : teams)
    for (size_t i = 0; i < others.size(); ++i)
      if (!taken[i] && others[i]->team.value == team) out.push_back(others[i]);
  return out;
}

std::string share_text(const Share& sh) {
  if (sh.den == 0) return "infinite";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(sh.num) / static_cast<double>(sh.den));
  return buf;
}

// A share as the share rules see it: a team of weight 0 with what it borrows, which orders such teams.
std::string key_text(const TeamKey& k) {
  if (!infinite(k.share)) return share_text(k.share);
  return "infinite, borrowing " + share_text(k.borrowed) + " of the pool";
}

// Why fair share found no plan when the lowest-priority-first rule kept candidates out: for each team with a
// candidate that the share rules would let go but that a running lower-priority teammate shields, which teammate
// may not be taken and why (the same checks as greedy_fair_share, in its order, on the trial it ended with).
// Empty when that rule kept no such candidate out. Other teams' jobs are named by job_ref() only.
RefText shielded_text(const ClusterState& s, const Job& job, const QuotaRequest& request,
                          const std::vector<const Job*>& others, const std::vector<char>& taken, Trial& trial) {
  const TeamKey mine = key_with(s, trial.usage(), job, request);
  const std::vector<const Job*> order = by_team_share(s, trial.usage(), others, taken);
  const std::string& my_team = s.teams[job.team.index()].spec.name;
  RefText out;
  for (size_t i = 0; i < order.size();) {
    const TeamId team = order[i]->team;
    const Job* first = nullptr;
    int more = 0;
    for (; i < order.size() && order[i]->team == team; ++i) {
      const Job& v = *order[i];
      const Placement held = held_in(v, trial);
      if (!above_nominal_anywhere(s, trial.usage(), v) || !stays_at_nominal(s, trial.usage(), v, held) ||
          !shields_lower_priority(s, v, trial) ||
          !share_rules_allow(s, trial.usage(), job, request, mine, v, held))
        continue;
      if (first) ++more;
      else first = &v;
    }
    if (!first) continue;
    const Job* u = lowest_kept_teammate(s, *first, trial);
    if (!u) continue;
    const std::string& name = s.teams[team.index()].spec.name;
    std::string why;
    if (std::find(others.begin(), others.end(), u) == others.end()) {
      bool holds = false;
      for (const auto& [t, r] : request)
        for (const auto& ps : u->placement.pod_sets) holds |= ps.type == t;
      why = holds ? "the minimum runtime protects it" : "it runs on another instance type";
    } else {
      const Placement held = held_in(*u, trial);
      if (!above_nominal_anywhere(s, trial.usage(), *u))
        why = "team " + name + " is not above its nominal quota where it runs";
      else if (!stays_at_nominal(s, trial.usage(), *u, held))
        why = "team " + name + " would fall below its nominal quota";
      else
        why = "neither share rule lets it go: team " + my_team + "'s share after admission, " + key_text(mine) +
              ", would be above team " + name + "'s after losing it, " + key_text(key_without(s, trial.usage(), *u, held)) +
              ", and not below team " + name + "'s now, " + key_text(team_key(s, trial.usage(), team));
    }
    if (!out.empty()) out += "; ";
    out += "fair share takes a team's jobs lowest priority first, and " + job_ref(u->spec.name, name) +
           " may not be taken (" + why + "), so " + job_ref(first->spec.name, name) + ", of higher priority, is not taken either";
    if (more > 0) out += " (nor " + std::to_string(more) + " more of team " + name + "'s jobs)";
  }
  return out;
}

// Phi: every team's key, highest first.
std::vector<TeamKey> phi(const ClusterState& s, const UsageTable& usage) {
  std::vector<TeamKey> out;
  for (const Team& t : s.teams) out.push_back(team_key(s, usage, t.id));
  std::sort(out.begin(), out.end(), [](const TeamKey& a, const TeamKey& b) { return b < a; });
  return out;
}


// What one step of the greedy choice asks of a candidate: its next shrink step (elastic candidates, before any
// whole job is taken), or all it still holds in the trial.
enum class Give { kStep, kWhole };

// The one victim generator for other teams' candidates (Kueue's candidate iterator), for shrinks and whole jobs
// alike so that the two cannot drift apart: the first of `order` (teams highest share first, by_team_share) that
// the rule in force lets give up `give`, its Victim in `victim`; null when none. Reclaim (`within`): a candidate
// whose team is above its nominal quota on a type the job needs. Otherwise fair share: a candidate whose team is
// above its nominal quota and stays at or above it after giving that up, that no running lower-priority teammate
// shields (shields_lower_priority), and that a share rule lets go, every candidate by LessThanOrEqualToFinalShare
// before any by LessThanInitialShare. A team of weight 0 has an infinite share: it takes nothing from weighted
// teams, and from another team of weight 0 only by what the two borrow (fair_less), so two such teams do not take
// from each other without end.
const Job* next_other(const ClusterState& s, const Job& job, const QuotaRequest& request,
                      const std::vector<const Job*>& order, bool within, Give give, Trial& trial, Victim& victim) {
  auto offered = [&](const Job& v) { return give == Give::kWhole || trial.can_shrink_further(v); };
  if (within) {
    for (const Job* v : order) {
      if (!offered(*v)) continue;
      bool above = false;
      for (const auto& [t, r] : request) above |= above_nominal(s, trial.usage(), v->team, t);
      if (!above) continue;
      victim = {v->id, PreemptionRule::kReclaim};
      return v;
    }
    return nullptr;
  }
  auto part = [&](const Job& v) {
    if (give == Give::kWhole) return held_in(v, trial);
    const Victim* e = trial.chosen_entry(v.id);
    const int from = e ? e->keep : v.size();
    return elastic_ranks(v, from - shrink_step(v), from);
  };
  const TeamKey mine = key_with(s, trial.usage(), job, request);
  for (const ShareRule rule : {kFinalShare, kInitialShare})
    for (const Job* v : order) {
      if (!offered(*v)) continue;
      const Placement p = part(*v);
      if (!above_nominal_anywhere(s, trial.usage(), *v) || !stays_at_nominal(s, trial.usage(), *v, p) ||
          shields_lower_priority(s, *v, trial) || !rule_lets_go(rule, s, trial.usage(), job, request, mine, *v, p))
        continue;
      victim = {v->id, PreemptionRule::kFairShare, rule, {}};
      return v;
    }
  return nullptr;
}
}  // namespace

const char* share_rule_name(ShareRule r) {
  switch (r) {
    case ShareRule::kLessThanOrEqualToFinalShare: return "LessThanOrEqualToFinalShare";
    case ShareRule::kLessThanInitialShare: return "LessThanInitialShare";
  }
  return "?";
}

std::optional<std::string> uneven_plan(const ClusterState& s, const Job& job, const QuotaRequest& request, const Trial& trial) {
  UsageTable after = trial.usage();  // the victims released
  shift(after, job.team, request, +1);
  const bool by_fair_share = std::any_of(trial.chosen.begin(), trial.chosen.end(),
                                         [](const Victim& v) { return v.rule == PreemptionRule::kFairShare; });
  const std::vector<TeamKey> before_phi = phi(s, s.usage);
  // What the victims free beyond what the job takes may go at once to the preemptor's team's other waiting jobs
  // (its own victims included) that fit in it: counted as the team's, or a small job that frees a big one lets
  // its team take the rest, and the big one takes all back.
  UsageTable worst = after;
  if (by_fair_share)
    for (const auto& [t, r] : request) {
      Resources freed{};
      for (const Victim& v : trial.chosen) {
        const Job& vj = s.jobs[v.job.index()];
        const Placement part = v.shrunk() ? elastic_ranks(vj, v.keep, vj.size()) : vj.placement;
        for (const auto& ps : part.pod_sets)
          if (ps.type == t) freed += ps.per_replica * static_cast<int64_t>(ps.replicas.size());
      }
      const Resources leftover = max0(freed - r);
      if (!leftover.any_positive()) continue;
      Resources wanted{};
      const TypeId type = t;  // a lambda may not capture a structured binding before C++20 in clang 14
      auto want = [&](const Job& w) {
        for (const auto& [wt, wr] : job_request(s, w, type, nullptr))
          if (wt == type && wr.fits_in(leftover)) wanted += wr;
      };
      for (const Job& w : s.jobs)
        if (w.team == job.team && w.id != job.id && is_waiting(w.state)) want(w);
      for (const Victim& v : trial.chosen)
        if (v.rule == PreemptionRule::kPriority && !v.shrunk()) want(s.jobs[v.job.index()]);
      worst[job.team.index()][t.index()] += wanted.fits_in(leftover) ? wanted : leftover;
    }
  const std::vector<TeamKey> after_phi = phi(s, worst);
  const bool kept = by_fair_share ? std::lexicographical_compare(after_phi.begin(), after_phi.end(), before_phi.begin(), before_phi.end())
                                  : !std::lexicographical_compare(before_phi.begin(), before_phi.end(), after_phi.begin(), after_phi.end());
  if (kept) return std::nullopt;
  const std::string& team = s.teams[job.team.index()].spec.name;
  const std::string shares = "team " + team + "'s share would go from " + share_text(share_of(s, s.usage, job.team)) +
                             " to " + share_text(share_of(s, after, job.team));
  return by_fair_share ? "with fair-sharing preemption, the victims that make room would not lower the highest team share they touch (" +
                             shares + ")"
                       : "with fair-sharing preemption, a job that borrows may preempt its own team's lower-priority jobs only "
                         "without growing its team's share (" + shares + ")";
}

bool greedy_fair_share(const ClusterState& s, const Job& job, const QuotaRequest& request,
                       const std::vector<const Job*>& others, const std::vector<const Job*>& own, bool within, Trial& trial,
                       RefText& stopped_by) {
  // Elastic candidates give up replicas first, by the same rules and in the same order as whole jobs below,
  // one shrink step at a time; whole jobs only when that is not enough.
  const std::vector<char> none(others.size(), 0);
  while (true) {
    Victim victim;
    const Job* pick = next_other(s, job, request, by_team_share(s, trial.usage(), others, none, within ? &job : nullptr), within, Give::kStep, trial, victim);
    if (!pick)
      for (const Job* v : own)
        if (trial.can_shrink_further(*v)) {
          pick = v;
          victim = {v->id, PreemptionRule::kPriority};
          break;
        }
    if (!pick) break;
    if (trial.shrink(*pick, std::move(victim))) return true;
  }

  std::vector<char> taken(others.size(), 0);
  auto take_other = [&](const Job* v, Victim victim) {
    for (size_t i = 0; i < others.size(); ++i)
      if (others[i] == v) taken[i] = 1;
    return trial.take(*v, std::move(victim));
  };
  size_t next_own = 0;
  while (true) {
    Victim victim;
    const Job* pick = next_other(s, job, request, by_team_share(s, trial.usage(), others, taken, within ? &job : nullptr), within,
                                 Give::kWhole, trial, victim);
    if (pick) {
      if (take_other(pick, std::move(victim))) return true;
      continue;
    }
    if (next_own < own.size()) {
      const Job* v = own[next_own++];
      if (trial.take(*v, {v->id, PreemptionRule::kPriority})) return true;
      continue;
    }
    if (!within) stopped_by = shielded_text(s, job, request, others, taken, trial);
    return false;
  }
}

void explain_fair_share_victims(const ClusterState& s, const Job& job, const QuotaRequest& request, Trial& trial) {
  UsageTable after = trial.usage();  // the victims released (minimise left it so)
  shift(after, job.team, request, +1);
  const Team& mine = s.teams[job.team.index()];
  // A preemptor of weight 0 took by what the teams borrow (fair_less): the shares say that too.
  auto text = [&](const UsageTable& usage, TeamId team) {
    const TeamKey k = team_key(s, usage, team);
    return infinite(share_of(s, s.usage, job.team)) ? key_text(k) : share_text(k.share);
  };
  const std::string my_shares = text(s.usage, job.team) + " -> " + text(after, job.team);
  for (Victim& v : trial.chosen) {
    if (v.rule != PreemptionRule::kFairShare) continue;
    const Job& victim = s.jobs[v.job.index()];
    const Team& theirs = s.teams[victim.team.index()];
    const bool final_share = v.share_rule == kFinalShare;
    const ComparedSides sides = compared_sides(s.cohorts, job.team, victim.team);
    if (sides.teams()) {
      v.why = "team " + theirs.spec.name + " is above its fair share; " + job_ref(job.spec.name, mine.spec.name) +
              " takes its place by " + share_rule_name(v.share_rule) + " (team " + mine.spec.name +
              "'s share after admission is " + (final_share ? "at most team " + theirs.spec.name + "'s after" : "below team " + theirs.spec.name + "'s before") +
              "); shares: team " + mine.spec.name + " " + my_shares + ", team " + theirs.spec.name + " " +
              text(s.usage, victim.team) + " -> " + text(after, victim.team);
      continue;
    }
    // In a cohort tree the rules compared the nodes under the two teams' lowest common group (rule_lets_go): the
    // reason names those nodes and quotes their shares, a group's as group_shares computes it.
    auto side = [&](TeamId team, int group) {
      return group < 0 ? "team " + s.teams[team.index()].spec.name : "group " + s.cohorts.groups[static_cast<size_t>(group)].spec.name;
    };
    auto side_of = [&](TeamId team, int group) {  // a group side says whose group it is
      return group < 0 ? side(team, group) : side(team, group) + " (team " + s.teams[team.index()].spec.name + "'s)";
    };
    const bool by_borrowing = infinite(side_key(s, s.usage, job.team, sides.mine).share);
    auto side_text = [&](const UsageTable& usage, TeamId team, int group) {
      const TeamKey k = side_key(s, usage, team, group);
      return by_borrowing ? key_text(k) : share_text(k.share);
    };
    const std::string my_side = side(job.team, sides.mine), their_side = side(victim.team, sides.theirs);
    const std::string where = sides.common < 0 ? "at the top of the cohort"
                                               : "under group " + s.cohorts.groups[static_cast<size_t>(sides.common)].spec.name;
    v.why = their_side + " is above its fair share; " + job_ref(job.spec.name, mine.spec.name) + " takes its place by " +
            share_rule_name(v.share_rule) + " (teams " + mine.spec.name + " and " + theirs.spec.name + " meet " + where +
            ", so " + my_side + " and " + their_side + " are compared: " + my_side + "'s share after admission is " +
            (final_share ? "at most " + their_side + "'s after" : "below " + their_side + "'s before") + "); shares: " +
            side_of(job.team, sides.mine) + " " + side_text(s.usage, job.team, sides.mine) + " -> " + side_text(after, job.team, sides.mine) +
            ", " + side_of(victim.team, sides.theirs) + " " + side_text(s.usage, victim.team, sides.theirs) + " -> " +
            side_text(after, victim.team, sides.theirs);
  }
}

}  // namespace allot
