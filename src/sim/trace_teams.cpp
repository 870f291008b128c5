// Team assignment rules for trace replay; the rules themselves are described in trace_teams.h.
#include "sim/trace_teams.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

namespace allot::sim {
namespace {

// Cumulative weights: team i owns draws in [cum[i], cum[i+1]).
std::vector<uint64_t> cumulative(const std::vector<TeamWeight>& teams) {
  std::vector<uint64_t> cum{0};
  for (const TeamWeight& t : teams) cum.push_back(cum.back() + t.weight);
  return cum;
}

// The team whose slice of [0, cum.back()) holds r.
size_t team_of_draw(const std::vector<uint64_t>& cum, uint64_t r) {
  auto it = std::upper_bound(cum.begin(), cum.end(), r);
  return static_cast<size_t>(it - cum.begin()) - 1;
}

void round_robin(std::vector<TraceJob*>& jobs, const std::vector<TeamWeight>& teams) {
  const int64_t total = static_cast<int64_t>(cumulative(teams).back());
  std::vector<int64_t> credit(teams.size(), 0);
  for (TraceJob* job : jobs) {
    size_t best = 0;
    for (size_t i = 0; i < teams.size(); ++i) {
      credit[i] += teams[i].weight;
      if (credit[i] > credit[best]) best = i;  // strict: the first listed team wins a tie
    }
    credit[best] -= total;
    job->team = teams[best].name;
  }
}

void random_by_weight(std::vector<TraceJob*>& jobs, const std::vector<TeamWeight>& teams, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto cum = cumulative(teams);
  for (TraceJob* job : jobs) job->team = teams[team_of_draw(cum, bounded_draw(rng, cum.back()))].name;
}

// The jobs are laid end to end on an axis of GPU-seconds, smallest jobs first and, among jobs of one size, in
// a seeded random order (so the jobs of a size that straddles a band boundary are split without regard to
// when they were submitted). Team i owns the band
//   total x W(<i) / W  <=  x  <  total x W(<=i) / W        (W: the weights, cumulated over the list)
// and a job goes to the band that holds its midpoint, so each team's GPU-seconds miss its weight's share by
// less than one job per boundary.
void by_size(std::vector<TraceJob*>& jobs, const std::vector<TeamWeight>& teams, uint64_t seed) {
  // A job counts at least 1 GPU-second so that a hand-made trace with empty jobs still has bands to fill.
  auto gpu_s = [](const TraceJob* j) {
    return std::max<uint64_t>(1, static_cast<uint64_t>(std::max(j->gpus, 0)) * std::max<int64_t>(j->duration_s, 0));
  };
  struct Ranked {
    int gpus;
    uint64_t key;  // random order among equal sizes; the index breaks the (unlikely) ties of keys
    size_t index;
  };
  std::mt19937_64 rng(seed);
  std::vector<Ranked> ranked;
  ranked.reserve(jobs.size());
  uint64_t total = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    ranked.push_back({jobs[i]->gpus, rng(), i});
    total += gpu_s(jobs[i]);
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return std::tie(a.gpus, a.key, a.index) < std::tie(b.gpus, b.key, b.index);
  });
  // In 128 bits and doubled (2x = 2 x start + length) so the midpoint stays an integer and nothing overflows.
  using u128 = unsigned __int128;
  const auto cum = cumulative(teams);
  const u128 w = cum.back();
  uint64_t start = 0;
  size_t team = 0;
  for (const Ranked& r : ranked) {
    TraceJob* job = jobs[r.index];
    const u128 mid2 = u128{2} * start + gpu_s(job);
    while (team + 1 < teams.size() && mid2 * w >= u128{2} * total * cum[team + 1]) ++team;
    job->team = teams[team].name;
    start += gpu_s(job);
  }
}

}  // namespace

Result<TeamRule> parse_team_rule(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "round-robin") return TeamRule::kRoundRobin;
  if (n == "random") return TeamRule::kRandom;
  if (n == "by-size") return TeamRule::kBySize;
  return Error::invalid("unknown team assignment rule '" + std::string(name) +
                        "'; valid: round-robin, random, by-size");
}

const char* team_rule_name(TeamRule rule) {
  switch (rule) {
    case TeamRule::kRoundRobin: return "round-robin";
    case TeamRule::kRandom: return "random";
    case TeamRule::kBySize: return "by-size";
  }
  return "?";
}

uint64_t bounded_draw(std::mt19937_64& rng, uint64_t bound) {
  // 2^64 mod bound, computed in 64 bits as (2^64 - bound) mod bound.
  const uint64_t threshold = (0 - bound) % bound;
  while (true) {
    const uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

Result<int64_t> assign_teams(Trace& trace, const TeamAssignment& options) {
  if (options.teams.empty()) return Error::invalid("team assignment needs at least one team");
  std::set<std::string> names;
  uint64_t weight_sum = 0;
  for (const TeamWeight& t : options.teams) {
    if (t.name.empty()) return Error::invalid("team assignment: a team name is empty");
    if (!names.insert(t.name).second) return Error::invalid("team assignment: team '" + t.name + "' is repeated");
    weight_sum += t.weight;
  }
  if (weight_sum == 0) return Error::invalid("team assignment: all team weights are 0; at least one must be > 0");

  // Only the jobs that need a team take part, so a rule's draws do not depend on the others.
  std::vector<TraceJob*> jobs;
  for (TraceJob& j : trace.jobs)
    if (options.reassign_all || j.team.empty()) jobs.push_back(&j);
  if (jobs.empty()) return int64_t{0};

  switch (options.rule) {
    case TeamRule::kRoundRobin: round_robin(jobs, options.teams); break;
    case TeamRule::kRandom: random_by_weight(jobs, options.teams, options.seed); break;
    case TeamRule::kBySize: by_size(jobs, options.teams, options.seed); break;
  }
  return static_cast<int64_t>(jobs.size());
}

TeamAssignment assignment_by_allocation(const ClusterState& cluster, TeamRule rule, uint64_t seed) {
  TeamAssignment assign;
  assign.rule = rule;
  assign.seed = seed;
  for (const Team& t : cluster.teams) {
    int64_t gpus = 0;
    for (const auto& r : t.nominal) gpus += r.accelerators;
    assign.teams.push_back({t.spec.name, static_cast<uint32_t>(std::max<int64_t>(gpus, 0))});
  }
  bool any_weight = false;
  for (const auto& t : assign.teams) any_weight |= t.weight > 0;
  if (!any_weight)
    for (auto& t : assign.teams) t.weight = 1;  // no team has GPUs: deal jobs evenly
  return assign;
}

}  // namespace allot::sim
