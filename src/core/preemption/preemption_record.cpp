#include "core/preemption/preemption_record.h"

#include <algorithm>

#include "core/quota/cohort_nearness.h"
#include "core/quota/cohort_share.h"

namespace allot {

void add_types(const Placement& p, std::vector<TypeId>& types) {
  for (const auto& ps : p.pod_sets)
    if (std::find(types.begin(), types.end(), ps.type) == types.end()) types.push_back(ps.type);
}

PreemptionRecord preemption_record(const ClusterState& s, const UsageTable& usage_before, JobId preemptor,
                                   std::vector<PreemptedJob> victims, const std::vector<TypeId>& types) {
  PreemptionRecord r;
  r.preemptor = preemptor;
  r.preemptor_team = s.jobs[preemptor.index()].team;
  r.victims = std::move(victims);
  std::vector<TeamId> teams = {r.preemptor_team};
  for (const PreemptedJob& v : r.victims)
    if (std::find(teams.begin(), teams.end(), v.team) == teams.end()) teams.push_back(v.team);
  for (TeamId t : teams) {
    TeamFigures f{.team = t,
                  .share_before = fair_share_value(s, usage_before, t),
                  .share_after = fair_share_value(s, s.usage, t),
                  .types = {}};
    const Team& team = s.teams[t.index()];
    for (TypeId type : types) {
      f.types.push_back(TypeFigures{.type = type,
                                    .nominal = team.nominal[type.index()],
                                    .usage_before = usage_before[t.index()][type.index()],
                                    .usage_after = s.usage[t.index()][type.index()],
                                    .borrowed_before = borrowed(s, usage_before, t, type),
                                    .borrowed_after = borrowed(s, s.usage, t, type)});
    }
    r.teams.push_back(std::move(f));
  }
  // The groups fair sharing compared (fair_share_preemption.cpp, rule_lets_go), with their shares.
  std::vector<int> groups;
  for (const PreemptedJob& v : r.victims) {
    if (v.rule != PreemptionRule::kFairShare) continue;
    const ComparedSides sides = compared_sides(s.cohorts, r.preemptor_team, v.team);
    for (int g : {sides.mine, sides.theirs})
      if (g >= 0 && std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  if (!groups.empty()) {
    const std::vector<GroupShare> before = group_shares(s, usage_before), after = group_shares(s, s.usage);
    for (int g : groups)
      r.groups.push_back(GroupFigures{.group = g, .share_before = before[static_cast<size_t>(g)].share,
                                      .share_after = after[static_cast<size_t>(g)].share});
  }
  return r;
}

PreemptionGroup named(const ClusterState& s, const PreemptionRecord& r) {
  auto team = [&](TeamId t) { return s.teams[t.index()].spec.name; };
  PreemptionGroup g{s.jobs[r.preemptor.index()].spec.name, team(r.preemptor_team), {}, {}, {}};
  for (const PreemptedJob& v : r.victims) g.victims.push_back({s.jobs[v.job.index()].spec.name, team(v.team), v.rule, v.from, v.to});
  for (const TeamFigures& t : r.teams) {
    PreemptionGroup::TeamFigures out{team(t.team), t.share_before, t.share_after, {}};
    for (const TypeFigures& f : t.types)
      out.types.push_back({s.catalog.at(f.type).name, f.nominal, f.usage_before, f.usage_after, f.borrowed_before, f.borrowed_after});
    g.teams.push_back(std::move(out));
  }
  for (const GroupFigures& f : r.groups)
    g.groups.push_back({s.cohorts.groups[static_cast<size_t>(f.group)].spec.name, f.share_before, f.share_after});
  return g;
}

}  // namespace allot
