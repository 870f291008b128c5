#include "server/views/lending_flows.h"

#include <algorithm>

#include "core/quota/quota.h"

namespace allot::server {

std::vector<LendingFlow> lending_flows(const ClusterState& s, TypeId type) {
  struct Side {
    std::optional<TeamId> team;
    Resources amount;
  };
  std::vector<const Team*> by_name;
  for (const Team& t : s.teams) by_name.push_back(&t);
  std::sort(by_name.begin(), by_name.end(), [](const Team* a, const Team* b) { return a->spec.name < b->spec.name; });
  const std::vector<Resources> lent = lent_by_team(s, s.usage, type);
  std::vector<Side> sources, sinks;
  Resources total_borrowed, total_lent;
  for (const Team* t : by_name) {
    const Resources b = borrowed(s, s.usage, t->id, type);
    if (!b.is_zero()) sinks.push_back({t->id, b});
    total_borrowed += b;
    total_lent += lent[t->id.index()];
  }
  // What the teams have not lent came from the idle pool (quota.h: the idle pool lends first).
  sources.push_back({std::nullopt, max0(total_borrowed - total_lent)});
  for (const Team* t : by_name)
    if (!lent[t->id.index()].is_zero()) sources.push_back({t->id, lent[t->id.index()]});

  // Per resource, walk sources and sinks together: each borrower takes from the current source until one of the
  // two is used up. The amounts are integers, so the flows add up exactly.
  std::vector<LendingFlow> flows;
  auto flow_of = [&](const std::optional<TeamId>& from, TeamId to) -> Resources& {
    for (LendingFlow& f : flows)
      if (f.lender == from && f.borrower == to) return f.amount;
    flows.push_back({from, to, {}});
    return flows.back().amount;
  };
  for (Resource r : kAllResources) {
    size_t si = 0;
    int64_t left_in_source = sources.empty() ? 0 : sources[0].amount.get(r);
    for (const Side& sink : sinks) {
      int64_t want = sink.amount.get(r);
      while (want > 0 && si < sources.size()) {
        if (left_in_source == 0) {
          if (++si < sources.size()) left_in_source = sources[si].amount.get(r);
          continue;
        }
        const int64_t take = std::min(want, left_in_source);
        flow_of(sources[si].team, *sink.team).at(r) += take;
        want -= take;
        left_in_source -= take;
      }
    }
  }
  return flows;
}

}  // namespace allot::server
