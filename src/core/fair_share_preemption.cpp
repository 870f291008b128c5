#include "core/fair_share_preemption.h"

#include <algorithm>
#include <cstdio>

#include "core/shrink.h"

namespace allot {
namespace {

constexpr const char* kFinalShare = "LessThanOrEqualToFinalShare";
constexpr const char* kInitialShare = "LessThanInitialShare";

// Adds (sign +1) or removes (-1) what a placement holds to a team's usage row.
void shift(UsageTable& usage, TeamId team, const Placement& p, int64_t sign) {
  for (const auto& ps : p.pod_sets)
    usage[team.index()][ps.type.index()] += ps.per_replica * (sign * static_cast<int64_t>(ps.replicas.size()));
}

void shift(UsageTable& usage, TeamId team, const QuotaRequest& request, int64_t sign) {
  for (const auto& [t, r] : request) usage[team.index()][t.index()] += r * sign;
}

Share share_of(const ClusterState& s, const UsageTable& usage, TeamId team) { return fair_share_value(s, usage, team); }

// The share of `v`'s team with `part` of `v` (its placement, or the replicas a shrink takes) given up (usage is
// restored before returning).
Share share_without(const ClusterState& s, UsageTable& usage, const Job& v, const Placement& part) {
  shift(usage, v.team, part, -1);
  Share out = share_of(s, usage, v.team);
  shift(usage, v.team, part, +1);
  return out;
}

// The share of the preemptor's team with the job admitted.
Share share_with(const ClusterState& s, UsageTable& usage, const Job& job, const QuotaRequest& request) {
  shift(usage, job.team, request, +1);
  Share out = share_of(s, usage, job.team);
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

// Other teams' remaining candidates, teams highest share first (ties: lower weight, then name), each team's
// jobs in victim order.
std::vector<const Job*> by_team_share(const ClusterState& s, const UsageTable& usage, const std::vector<const Job*>& others,
                                      const std::vector<char>& taken) {
  std::vector<std::pair<Share, uint32_t>> teams;
  std::vector<char> seen(s.teams.size(), 0);
  for (size_t i = 0; i < others.size(); ++i) {
    if (taken[i] || seen[others[i]->team.index()]) continue;
    seen[others[i]->team.index()] = 1;
    teams.push_back({share_of(s, usage, others[i]->team), others[i]->team.value});
  }
  std::sort(teams.begin(), teams.end(), [&](const auto& a, const auto& b) {
    if (!(a.first == b.first)) return b.first < a.first;
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

// Phi: every team's key, highest first.
std::vector<TeamKey> phi(const ClusterState& s, const UsageTable& usage) {
  std::vector<TeamKey> out;
  for (const Team& t : s.teams) out.push_back(team_key(s, usage, t.id));
  std::sort(out.begin(), out.end(), [](const TeamKey& a, const TeamKey& b) { return b < a; });
  return out;
}

}  // namespace

std::optional<std::string> uneven_plan(const ClusterState& s, const Job& job, const QuotaRequest& request, const Trial& trial) {
  UsageTable after = trial.usage;  // the victims released
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
                       const std::vector<const Job*>& others, const std::vector<const Job*>& own, bool within, Trial& trial) {
  // Elastic candidates give up replicas first, by the same rules and in the same order as whole jobs below,
  // one shrink step at a time; whole jobs only when that is not enough.
  const std::vector<char> none(others.size(), 0);
  while (true) {
    const std::vector<const Job*> order = by_team_share(s, trial.usage, others, none);
    const Job* pick = nullptr;
    Victim victim;
    if (within) {
      for (const Job* v : order) {
        if (!trial.can_shrink_further(*v)) continue;
        bool above = false;
        for (const auto& [t, r] : request) above |= above_nominal(s, trial.usage, v->team, t);
        if (!above) continue;
        pick = v;
        victim = {v->id, PreemptionRule::kReclaim, {}};
        break;
      }
    } else {
      const Share mine = share_with(s, trial.usage, job, request);
      for (const char* rule : {kFinalShare, kInitialShare}) {
        if (mine.den == 0) break;
        for (const Job* v : order) {
          if (!trial.can_shrink_further(*v)) continue;
          const Victim* e = trial.chosen_entry(v->id);
          const int from = e ? e->keep : v->size();
          const Placement part = elastic_ranks(*v, from - shrink_step(*v), from);
          if (!above_nominal_anywhere(s, trial.usage, *v) || !stays_at_nominal(s, trial.usage, *v, part)) continue;
          const bool ok = rule == kFinalShare ? !(share_without(s, trial.usage, *v, part) < mine)
                                              : mine < share_of(s, trial.usage, v->team);
          if (!ok) continue;
          pick = v;
          victim = {v->id, PreemptionRule::kFairShare, rule};
          break;
        }
        if (pick) break;
      }
    }
    if (!pick)
      for (const Job* v : own)
        if (trial.can_shrink_further(*v)) {
          pick = v;
          victim = {v->id, PreemptionRule::kPriority, {}};
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
    const std::vector<const Job*> order = by_team_share(s, trial.usage, others, taken);
    const Job* pick = nullptr;
    Victim victim;
    if (within) {
      // Reclaim: the highest-share team that is still above its nominal quota gives up its next job.
      for (const Job* v : order) {
        bool above = false;
        for (const auto& [t, r] : request) above |= above_nominal(s, trial.usage, v->team, t);
        if (!above) continue;
        pick = v;
        victim = {v->id, PreemptionRule::kReclaim, {}};
        break;
      }
    } else {
      const Share mine = share_with(s, trial.usage, job, request);
      // A team of weight 0 (an infinite share) borrows only what no one else wants: it never takes by fair
      // share; two such teams would otherwise take from each other without end.
      const bool infinite = mine.den == 0;
      for (const char* rule : {kFinalShare, kInitialShare}) {
        if (infinite) break;
        for (const Job* v : order) {
          // What it still holds: all of it, or what a shrink so far left it.
          const Victim* e = trial.chosen_entry(v->id);
          const Placement held = e ? kept_placement(*v, e->keep) : v->placement;
          if (!above_nominal_anywhere(s, trial.usage, *v) || !stays_at_nominal(s, trial.usage, *v, held) ||
              shields_lower_priority(s, *v, trial))
            continue;
          const bool ok = rule == kFinalShare ? !(share_without(s, trial.usage, *v, held) < mine)
                                              : mine < share_of(s, trial.usage, v->team);
          if (!ok) continue;
          pick = v;
          victim = {v->id, PreemptionRule::kFairShare, rule};
          break;
        }
        if (pick) break;
      }
    }
    if (pick) {
      if (take_other(pick, std::move(victim))) return true;
      continue;
    }
    if (next_own < own.size()) {
      const Job* v = own[next_own++];
      if (trial.take(*v, {v->id, PreemptionRule::kPriority, {}})) return true;
      continue;
    }
    return false;
  }
}

void explain_fair_share_victims(const ClusterState& s, const Job& job, const QuotaRequest& request, Trial& trial) {
  UsageTable after = trial.usage;  // the victims released (minimise left it so)
  shift(after, job.team, request, +1);
  const Team& mine = s.teams[job.team.index()];
  const std::string my_shares =
      share_text(share_of(s, s.usage, job.team)) + " -> " + share_text(share_of(s, after, job.team));
  for (Victim& v : trial.chosen) {
    if (v.rule != PreemptionRule::kFairShare) continue;
    const Job& victim = s.jobs[v.job.index()];
    const Team& theirs = s.teams[victim.team.index()];
    const bool final_share = v.why == kFinalShare;
    v.why = "team " + theirs.spec.name + " is above its fair share; " + job_ref(job.spec.name, mine.spec.name) +
            " takes its place by " + (final_share ? kFinalShare : kInitialShare) + " (team " + mine.spec.name +
            "'s share after admission is " + (final_share ? "at most team " + theirs.spec.name + "'s after" : "below team " + theirs.spec.name + "'s before") +
            "); shares: team " + mine.spec.name + " " + my_shares + ", team " + theirs.spec.name + " " +
            share_text(share_of(s, s.usage, victim.team)) + " -> " + share_text(share_of(s, after, victim.team));
  }
}

}  // namespace allot
