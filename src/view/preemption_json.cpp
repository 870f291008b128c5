#include "view/preemption_json.h"

#include <algorithm>

#include "view/state_json.h"

namespace allot::view {
using nlohmann::json;

json share_json(const Share& s) {
  if (s.den == 0) return nullptr;
  return static_cast<double>(s.num) / static_cast<double>(s.den);
}

json preemption_json(const PreemptionGroup& g, const SeesTeamJobs& sees) {
  auto job = [&](const std::string& name, const std::string& team) -> json {
    if (sees && !sees(team)) return nullptr;
    return name;
  };
  json victims = json::array();
  json rules = json::array();
  for (const auto& v : g.victims) {
    const char* rule = preemption_rule_name(v.rule);
    victims.push_back({{"job", job(v.job, v.team)}, {"team", v.team}, {"rule", rule}});
    if (v.to > 0) victims.back()["shrunk"] = {{"from", v.from}, {"to", v.to}};  // an elastic victim shrunk, not preempted
    if (std::find(rules.begin(), rules.end(), rule) == rules.end()) rules.push_back(rule);
  }
  json teams = json::array();
  for (const auto& t : g.teams) {
    json types = json::array();
    for (const auto& f : t.types)
      types.push_back({{"instance_type", f.instance_type},
                       {"nominal", resources_json(f.nominal)},
                       {"usage_before", resources_json(f.usage_before)},
                       {"usage_after", resources_json(f.usage_after)},
                       {"borrowed_before", resources_json(f.borrowed_before)},
                       {"borrowed_after", resources_json(f.borrowed_after)}});
    teams.push_back({{"team", t.team},
                     {"share_before", share_json(t.share_before)},
                     {"share_after", share_json(t.share_after)},
                     {"types", types}});
  }
  json out = {{"preemptor", job(g.preemptor, g.preemptor_team)},
              {"preemptor_team", g.preemptor_team},
              {"rules", rules},
              {"victims", victims},
              {"teams", teams}};
  // The cohort groups fair sharing compared, only when it compared any (docs/states.md, "Preemption records").
  if (!g.groups.empty()) {
    json groups = json::array();
    for (const auto& f : g.groups)
      groups.push_back({{"group", f.group}, {"share_before", share_json(f.share_before)}, {"share_after", share_json(f.share_after)}});
    out["groups"] = std::move(groups);
  }
  return out;
}

}  // namespace allot::view
