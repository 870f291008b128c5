#include "core/preemption/preemption.h"

#include <algorithm>
#include <climits>
#include <cstdio>

#include "core/quota/cohort_nearness.h"
#include "core/preemption/fair_share_preemption.h"
#include "core/preemption/ordered_victims.h"
#include "core/preemption/shrink.h"

namespace allot {
namespace {

bool holds_type(const Job& j, TypeId type) {
  for (const auto& ps : j.placement.pod_sets)
    if (ps.type == type) return true;
  return false;
}

// A job beyond its team's nominal quota is told that reclaim is not for it, rather than "nothing to reclaim":
// its team's quota may well be lent out, and reclaiming it would still not be allowed.
std::string no_candidates(const Team& team, bool within) {
  // Built only where it is said: a pass asks this for thousands of waiting jobs, most of them within quota.
  auto beyond = [&] {
    return "reclaim only serves jobs within their team's nominal quota, and this one needs more than team " +
           team.spec.name + "'s";
  };
  const bool never = team.spec.preempt_team_tasks == PreemptTeamTasks::kNever;
  if (never)
    return within ? "no preemption: nothing to reclaim, and team " + team.spec.name + " has preempt_team_tasks: Never"
                  : "no preemption: team " + team.spec.name + " has preempt_team_tasks: Never, and " + beyond();
  return within ? "no preemption candidates (nothing to reclaim, no lower-priority job in team " + team.spec.name + ")"
                : "no preemption candidates (" + beyond() + "; no lower-priority job in team " + team.spec.name + ")";
}

// --- Candidates ------------------------------------------------------------------------------------------------

// Calls `visit` with `team`, and with `others` each team above its nominal quota, in ID order: the teams a walk of
// every team would stop at, without walking the rest.
template <class Visit>
void visit_teams(const PreemptionHints& h, TeamId team, bool others, Visit visit) {
  bool mine_done = false;
  if (others)
    for (uint32_t t : h.teams_above) {
      if (!mine_done && t >= team.index()) {
        visit(team.index());
        mine_done = true;
      }
      if (t != team.index()) visit(size_t{t});
    }
  if (!mine_done) visit(team.index());
}

// Who may lose a job to `job` on one instance type; each list in victim order as far as it is read
// (ordered_victims.h).
struct Candidates {
  bool within = false;   // the job fits within its team's nominal quota: reclaim applies
  OrderedVictims reclaim;  // other teams' jobs, for a job within its nominal quota
  OrderedVictims fair;     // other teams' jobs above nominal, for a borrower (fair_share_preemption)
  OrderedVictims own;      // the team's strictly lower-priority jobs
  int protected_count = 0;  // jobs the minimum runtime protects
  // Whether a candidate may give up replicas (shrink.h): only then do the greedy choices look for shrinks,
  // rather than visit every candidate (often thousands, each a cache miss) to find none.
  bool any_shrinkable = false;
  // Per entry of the request: the accelerators every candidate holds of its type together (for the bound).
  std::vector<int64_t> held;
  bool empty() const { return reclaim.empty() && fair.empty() && own.empty(); }
};

Candidates candidates(const ClusterState& s, const Job& job, const std::vector<std::pair<TypeId, Resources>>& request,
                      const PreemptionQuery& q) {
  const Team& team = s.teams[job.team.index()];
  const bool fair_share = s.policy.fair_share_preemption;
  Candidates c;
  c.held.assign(request.size(), 0);
  // Reclaim is for a job that fits within its team's nominal quota (with its own usage as it is now).
  c.within = true;
  for (const auto& [t, r] : request)
    c.within &= team.counted(t, s.usage[job.team.index()][t.index()] + r).fits_in(team.nominal[t.index()]);
  // With hints, only the teams that can give up jobs are visited: this team, and teams above quota. Whether
  // other teams' jobs can be candidates at all is the same for every team: asked once, not per team.
  const bool others = q.allow_reclaim && (c.within || fair_share);
  if (q.hints && request.size() == 1) {
    // One type asked for (the usual case): the team's compact list of jobs holding it, without reading a Job.
    const TypeId type = request.front().first;
    // The teams in ID order, as a walk of every team would meet them: this team, and those above quota when
    // other teams' jobs can be candidates.
    visit_teams(*q.hints, job.team, others, [&](size_t t) {
      const bool mine = t == job.team.index();
      OrderedVictims* list = nullptr;
      if (!mine) {
        if (q.allow_reclaim && c.within) list = &c.reclaim;
        else if (q.allow_reclaim && fair_share && team_borrowing(s, s.usage, TeamId(static_cast<uint32_t>(t)))) list = &c.fair;
      } else if (team.spec.preempt_team_tasks == PreemptTeamTasks::kLowerPriority) {
        list = &c.own;
      }
      for (const TeamRunningOnType& held : q.hints->running_by_team_type[t]) {
        if (held.type != type) continue;
        for (const RunningOnType& v : held.jobs) {
          if (v.job == job.id) continue;
          if (q.now - v.started_at < s.policy.min_runtime_s) {
            ++c.protected_count;
            continue;
          }
          if (!list || (mine && v.priority >= job.priority)) continue;
          list->add({v.priority, v.started_at, v.arrival, v.job.index(), &s.jobs[v.job.index()]});
          c.any_shrinkable |= v.shrinkable;
          c.held.front() += v.accelerators;
        }
      }
    });
    return c;
  }
  // Otherwise every running job of those teams is read (and so is every running job without hints).
  std::vector<JobId> scan;
  if (q.hints) {
    visit_teams(*q.hints, job.team, others, [&](size_t t) {
      scan.insert(scan.end(), q.hints->running_by_team[t].begin(), q.hints->running_by_team[t].end());
    });
  } else {
    scan.assign(s.running_jobs.begin(), s.running_jobs.end());
  }
  for (JobId vid : scan) {
    const Job& v = s.jobs[vid.index()];
    if (v.id == job.id) continue;
    bool relevant = false;
    for (const auto& [t, r] : request) relevant |= holds_type(v, t);
    if (!relevant) continue;
    if (q.now - v.started_at < s.policy.min_runtime_s) {
      ++c.protected_count;
      continue;
    }
    OrderedVictims* list = nullptr;
    if (v.team != job.team) {
      if (q.allow_reclaim && c.within) list = &c.reclaim;
      else if (q.allow_reclaim && fair_share && team_borrowing(s, s.usage, v.team)) list = &c.fair;
    } else if (team.spec.preempt_team_tasks == PreemptTeamTasks::kLowerPriority && v.priority < job.priority) {
      list = &c.own;
    }
    if (!list) continue;
    list->add(v);
    c.any_shrinkable |= shrinkable(v);
    for (size_t k = 0; k < request.size(); ++k)
      for (const auto& ps : v.placement.pod_sets)
        if (ps.type == request[k].first)
          for (const auto& rep : ps.replicas) c.held[k] += static_cast<int64_t>(rep.accelerators.size());
  }
  return c;
}

// --- Bound -----------------------------------------------------------------------------------------------------

// Whether the free accelerators and every candidate's together could hold the job: when they cannot, no
// trial can help.
bool bound_allows(const std::vector<std::pair<TypeId, Resources>>& request, const Candidates& c,
                  const PreemptionHints& hints) {
  for (size_t k = 0; k < request.size(); ++k)
    if (request[k].second.accelerators > hints.free[request[k].first.index()].accelerators + c.held[k]) return false;
  return true;
}

// --- Greedy ----------------------------------------------------------------------------------------------------

// The default greedy choice: reclaim candidates in victim order (a team stops giving up jobs once it is back
// within its nominal quota), then the team's own; true once the job fits. Elastic candidates give up replicas
// first, under the same rules, and whole jobs are taken only when that is not enough. In a cohort tree reclaim
// takes from the nearest borrowers first (cohort_nearness.h): the candidates of teams that share the most groups
// with the job's team, in victim order, then the next nearest; in a cluster without groups every candidate is as
// near, so this is the one pass in victim order it always was.
bool greedy_in_order(const ClusterState& s, const Job& job, const std::vector<std::pair<TypeId, Resources>>& request,
                     Candidates& c, Trial& trial) {
  auto above = [&](const Job& v) {
    bool out = false;
    for (const auto& [t, r] : request) out |= above_nominal(s, trial.usage(), v.team, t);
    return out;
  };
  std::vector<int> near(s.cohorts.empty() ? 0 : s.teams.size(), -1);  // per team, worked out when first asked
  auto nearness = [&](const Job& v) {
    if (near.empty()) return 0;
    int& n = near[v.team.index()];
    if (n < 0) n = cohort_nearness(s.cohorts, job.team, v.team);
    return n;
  };
  int nearest = 0;
  for (size_t i = 0; !near.empty() && i < c.reclaim.size(); ++i) nearest = std::max(nearest, nearness(*c.reclaim.at(i)));
  if (c.any_shrinkable) {
    for (int level = nearest; level >= 0; --level)
      for (size_t i = 0; i < c.reclaim.size(); ++i) {
        const Job* v = c.reclaim.at(i);
        if (nearness(*v) != level) continue;
        while (trial.can_shrink_further(*v) && above(*v))
          if (trial.shrink(*v, {v->id, PreemptionRule::kReclaim})) return true;
      }
    for (size_t i = 0; i < c.own.size(); ++i) {
      const Job* v = c.own.at(i);
      while (trial.can_shrink_further(*v))
        if (trial.shrink(*v, {v->id, PreemptionRule::kPriority})) return true;
    }
  }
  for (int level = nearest; level >= 0; --level)
    for (size_t i = 0; i < c.reclaim.size(); ++i) {
      const Job* v = c.reclaim.at(i);
      if (nearness(*v) != level || !above(*v)) continue;
      if (trial.take(*v, {v->id, PreemptionRule::kReclaim})) return true;
    }
  for (size_t i = 0; i < c.own.size(); ++i) {
    const Job* v = c.own.at(i);
    if (trial.take(*v, {v->id, PreemptionRule::kPriority})) return true;
  }
  return false;
}

// --- Minimise --------------------------------------------------------------------------------------------------

// Gives back every victim the job does not need, last taken first, then every replica an elastic victim need
// not give up (a whole elastic victim may end up shrunk): the set and each shrink become minimal.
void minimise(const ClusterState& s, Trial& trial) {
  auto& chosen = trial.chosen;
  for (size_t i = chosen.size(); i-- > 0;) {
    Victim dropped = chosen[i];
    chosen.erase(chosen.begin() + static_cast<long>(i));
    trial.reset_to(chosen);
    if (!trial.fits_now()) chosen.insert(chosen.begin() + static_cast<long>(i), dropped);
  }
  for (size_t i = chosen.size(); i-- > 0;) {
    const Job& v = s.jobs[chosen[i].job.index()];
    if (!shrinkable(v)) continue;
    const int step = shrink_step(v);
    const int best = chosen[i].keep;
    for (int keep = best < 0 ? v.min_size() : best + step; keep < v.size(); keep += step) {
      chosen[i].keep = keep;
      trial.reset_to(chosen);
      if (!trial.fits_now()) {
        chosen[i].keep = keep == v.min_size() && best < 0 ? -1 : keep - step;
        break;
      }
    }
  }
  trial.reset_to(chosen);
  trial.fits_now();
}

}  // namespace

// Lowest priority first, then most recently started, then latest arrival: the cheapest to give up first. Arrival
// is unique per job (model.h), so this is a total order; the job ID settles the rest in case it ever is not, so
// that every way of putting candidates in this order (ordered_victims.h) gives the same one.
bool victim_order(const Job& a, const Job& b) {
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.started_at != b.started_at) return a.started_at > b.started_at;
  if (a.arrival != b.arrival) return a.arrival > b.arrival;
  return a.id < b.id;
}

Trial::Trial(const ClusterState& s, const Job& job, TypeId type, TrialTables& tables)
    : s_(s), job_(job), only_{type}, room_(tables.room), usage_(tables.usage), capacity_(tables.capacity),
      scratch_(tables.scratch) {
  room_ = s.room;  // into the tables' memory: no allocation once they have held a room of this size
  usage_ = s.usage;
  capacity_.track(s, &room_);
  scratch_.live = &capacity_;
}

bool Trial::fits_now() {
  fit = try_admit(s_, room_, usage_, job_, AdmitOptions{.only_types = &only_, .scratch = &scratch_});
  // Reclaimed capacity is for jobs within their nominal quota only.
  bool any_reclaim =
      std::any_of(chosen.begin(), chosen.end(), [](const Victim& v) { return v.rule == PreemptionRule::kReclaim; });
  if (fit.borrowing() && any_reclaim) fit.outcome = Refusal::kQuota;
  return fit.ok();
}

bool Trial::can_shrink_further(const Job& v) {
  const Victim* e = chosen_entry(v.id);
  if (e && !e->shrunk()) return false;
  return can_shrink(v, e ? e->keep : v.size());
}

Victim* Trial::chosen_entry(JobId job) {
  for (Victim& v : chosen)
    if (v.job == job) return &v;
  return nullptr;
}

void Trial::apply(const Job& v, const Placement& part, bool give_back) {
  if (give_back) charge(room_, usage_, s_, v, part);
  else release(room_, usage_, s_, v, part);
  // A topology-exclusive victim opens or closes the nodes of its domains, not only those it runs on.
  for (const PodSet& ps : v.pod_sets)
    if (ps.topology.exclusive_level >= 0) return capacity_.changed_all();
  capacity_.changed(part);
}

bool Trial::take(const Job& v, Victim victim) {
  auto applied = std::find_if(applied_.begin(), applied_.end(), [&](const Released& r) { return r.job == v.id; });
  if (Victim* e = chosen_entry(v.id)) {
    // Shrunk so far: the replicas it kept go too.
    apply(v, kept_placement(v, e->keep), false);
    victim.keep = -1;
    *e = std::move(victim);
    applied->keep = -1;
    return fits_now();
  }
  apply(v, v.placement, false);
  victim.keep = -1;
  chosen.push_back(std::move(victim));
  applied_.push_back({v.id, -1});
  return fits_now();
}

bool Trial::shrink(const Job& v, Victim victim) {
  Victim* e = chosen_entry(v.id);
  const int from = e ? e->keep : v.size();
  const int keep = from - shrink_step(v);
  apply(v, elastic_ranks(v, keep, from), false);
  if (e) {
    e->keep = keep;
    std::find_if(applied_.begin(), applied_.end(), [&](const Released& r) { return r.job == v.id; })->keep = keep;
  } else {
    victim.keep = keep;
    chosen.push_back(std::move(victim));
    applied_.push_back({v.id, keep});
  }
  return fits_now();
}

namespace {

bool holds_exclusive_domains(const Job& v) {
  return std::any_of(v.pod_sets.begin(), v.pod_sets.end(), [](const PodSet& ps) { return ps.topology.exclusive_level >= 0; });
}

}  // namespace

// Only what differs from the room as it is is changed: the minimisation drops one victim at a time, and copying
// the state's room for each (a table the size of the cluster) was most of a large plan's time. A victim released
// in part (shrunk) on either side is given back as the room has it and released again as `released` has it.
// Charging and releasing add and take the same integers and accelerator bits, so the room that results is the
// same as the state's with `released` released; the exclusive marks of topology-exclusive victims are not
// simple sums (a domain's mark is set or cleared whole), so a change that involves one starts from the state's
// room again, as every reset did before.
void Trial::reset_to(const std::vector<Victim>& released) {
  // Both sides by job (a victim is listed once on each): what differs is given back or released.
  auto by_job = [](std::vector<Released>& v) {
    std::sort(v.begin(), v.end(), [](const Released& a, const Released& b) { return a.job < b.job; });
  };
  std::vector<Released> want;
  want.reserve(released.size());
  for (const Victim& x : released) want.push_back({x.job, x.keep});
  std::vector<Released> have = applied_;
  by_job(want);
  by_job(have);
  auto same_in = [](const std::vector<Released>& list, const Released& r) {
    auto it = std::lower_bound(list.begin(), list.end(), r.job, [](const Released& a, JobId b) { return a.job < b; });
    return it != list.end() && it->job == r.job && it->keep == r.keep;
  };
  std::vector<Released> give_back, to_release;
  for (const Released& r : have)
    if (!same_in(want, r)) give_back.push_back(r);
  for (const Released& r : want)
    if (!same_in(have, r)) to_release.push_back(r);
  bool exclusive = false;
  for (const auto* list : {&give_back, &to_release})
    for (const Released& r : *list) exclusive |= holds_exclusive_domains(s_.jobs[r.job.index()]);
  auto apply_part = [&](const Released& r, bool give_back) {
    const Job& v = s_.jobs[r.job.index()];
    if (r.keep >= 0) apply(v, elastic_ranks(v, r.keep, v.size()), give_back);
    else apply(v, v.placement, give_back);
  };
  if (exclusive) {
    room_ = s_.room;
    usage_ = s_.usage;
    release_victims(s_, released, room_, usage_);
    capacity_.changed_all();
  } else {
    for (const Released& r : give_back) apply_part(r, true);
    for (const Released& r : to_release) apply_part(r, false);
  }
  applied_.clear();
  for (const Victim& x : released) applied_.push_back({x.job, x.keep});
}

PreemptionHints preemption_hints(const ClusterState& s) {
  PreemptionHints h;
  h.above_nominal.assign(s.teams.size(), 0);
  h.min_running_priority.assign(s.teams.size(), INT_MAX);
  for (size_t t = 0; t < s.teams.size(); ++t)
    for (size_t k = 0; k < s.usage[t].size() && k < s.teams[t].nominal.size(); ++k)
      if (!s.teams[t].counted(TypeId(static_cast<uint32_t>(k)), s.usage[t][k]).fits_in(s.teams[t].nominal[k]))
        h.above_nominal[t] = 1;
  for (size_t t = 0; t < s.teams.size(); ++t)
    if (h.above_nominal[t]) h.teams_above.push_back(static_cast<uint32_t>(t));
  h.running_by_team.resize(s.teams.size());
  h.running_by_team_type.resize(s.teams.size());
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    h.min_running_priority[j.team.index()] = std::min(h.min_running_priority[j.team.index()], j.priority);
    h.running_by_team[j.team.index()].push_back(id);
    auto& by_type = h.running_by_team_type[j.team.index()];
    const bool can_shrink = shrinkable(j);
    for (size_t i = 0; i < j.placement.pod_sets.size(); ++i) {
      const PodSetPlacement& ps = j.placement.pod_sets[i];
      // A job with several pod sets of one type is listed once for it, with all its accelerators there.
      bool seen = false;
      for (size_t k = 0; k < i; ++k) seen |= j.placement.pod_sets[k].type == ps.type;
      if (seen) continue;
      auto list = std::find_if(by_type.begin(), by_type.end(), [&](const TeamRunningOnType& x) { return x.type == ps.type; });
      if (list == by_type.end()) list = by_type.insert(by_type.end(), TeamRunningOnType{ps.type, {}});
      int64_t accelerators = 0;
      for (size_t k = i; k < j.placement.pod_sets.size(); ++k)
        if (j.placement.pod_sets[k].type == ps.type)
          for (const auto& rep : j.placement.pod_sets[k].replicas) accelerators += static_cast<int64_t>(rep.accelerators.size());
      list->jobs.push_back({j.id, j.priority, j.started_at, j.arrival, accelerators, can_shrink});
    }
  }
  h.free = free_accelerators(s, s.room);
  return h;
}

void release_victims(const ClusterState& s, const std::vector<Victim>& victims, RoomTable& room, UsageTable& usage) {
  for (const Victim& x : victims) {
    const Job& v = s.jobs[x.job.index()];
    release(room, usage, s, v, x.shrunk() ? elastic_ranks(v, x.keep, v.size()) : v.placement);
  }
}

std::optional<PreemptionPlan> plan_preemption(const ClusterState& s, const Job& job, const PreemptionQuery& q,
                                              Explanation& why_not) {
  const Team& team = s.teams[job.team.index()];
  if (q.hints) {
    const size_t own_above = q.hints->above_nominal[job.team.index()] ? 1 : 0;
    const bool other_above = q.hints->teams_above.size() > own_above;
    bool own = team.spec.preempt_team_tasks == PreemptTeamTasks::kLowerPriority &&
               q.hints->min_running_priority[job.team.index()] < job.priority;
    if (!(q.allow_reclaim && other_above) && !own) {
      // Whether it fits within nominal only changes the wording for a team that never preempts its own.
      const bool within = q.within_nominal ? *q.within_nominal : within_nominal_quota(s, s.usage, job);
      why_not = explain(ReasonCode::kNoPreemption, no_candidates(team, within));
      return std::nullopt;
    }
  }
  RefText last_reason;
  int protected_count = 0;
  std::optional<TrialTables> own_tables;  // made only when a trial is, and only without the caller's
  for (TypeId type : candidate_types(s, job)) {
    auto request = job_request(s, job, type, nullptr);
    if (request.empty()) continue;
    Candidates c = candidates(s, job, request, q);
    protected_count += c.protected_count;
    // Most waiting jobs have no candidate at all: say so before copying any table.
    if (c.empty()) {
      last_reason = no_candidates(team, c.within);
      continue;
    }
    if (q.hints && !bound_allows(request, c, *q.hints)) {
      last_reason = "preempting every candidate would still not make room";
      continue;
    }
    if (!q.tables && !own_tables) own_tables.emplace();
    Trial trial(s, job, type, q.tables ? *q.tables : *own_tables);
    const bool fair_share = s.policy.fair_share_preemption;
    RefText stopped_by;  // fair share: what kept candidates out, when that is what stopped it
    const bool done = fair_share ? greedy_fair_share(s, job, request, (c.within ? c.reclaim : c.fair).all(), c.own.all(),
                                                     c.within, trial, stopped_by)
                                 : greedy_in_order(s, job, request, c, trial);
    if (!done) {
      last_reason = stopped_by.empty() ? RefText("preempting every candidate would still not make room") : std::move(stopped_by);
      continue;
    }
    minimise(s, trial);
    if (fair_share && trial.fit.borrowing()) {
      if (auto uneven = uneven_plan(s, job, request, trial)) {
        last_reason = std::move(*uneven);
        continue;
      }
    }
    if (fair_share) explain_fair_share_victims(s, job, request, trial);
    return PreemptionPlan{trial.fit, trial.chosen};
  }
  why_not = explain(ReasonCode::kNoPreemption, last_reason.empty() ? "no instance type can serve it" : last_reason);
  if (protected_count > 0)
    why_not.text += "; " + std::to_string(protected_count) + " running job(s) are protected by the minimum runtime of " +
                    std::to_string(s.policy.min_runtime_s) + " s";
  return std::nullopt;
}

}  // namespace allot
