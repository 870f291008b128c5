#pragma once
// Assigning trace jobs to teams. The public traces name no team (ITP) or only a virtual cluster (Philly), so a
// replay needs a rule that deals jobs to the teams of the cluster file. The rules are seeded and exactly
// reproducible on every platform: the engine is std::mt19937_64, whose output the C++ standard fixes, and the
// draws from it go through bounded_draw() below rather than std::uniform_int_distribution, whose algorithm each
// standard library chooses for itself.
//
// Rules (each team has an integer weight, default 1; weight 0 gives a team no trace jobs):
//   round-robin  Smooth weighted round-robin (the nginx upstream rule) over the jobs in submission order: every
//                job, each team's credit grows by its weight and the team with the most credit (first listed on
//                a tie) takes the job and pays back the sum of weights. Equal weights give a, b, c, a, b, c;
//                weights 2:1 give a, b, a, a, b, a. Job counts follow the weights within one job at any point.
//                The seed is not used.
//   random       Each job independently goes to team i with probability weight_i / sum of weights. Job counts
//                follow the weights only on average, which is what real teams look like.
//   by-size      Teams are listed from small-job teams to large-job teams. Jobs are ranked by GPU count and cut
//                into consecutive bands, one per team, so that each team's band holds its weight's share of the
//                trace's GPU-seconds (gpus x duration), to within one job per band boundary. Each team then
//                brings demand in proportion to its weight, yet the first teams run many small jobs and the
//                last ones few large jobs, as when an inference team and a pre-training team share a cluster.
//                Jobs of one size are ranked among themselves in a seeded random order, so when a boundary
//                falls inside a size neither team gets all the early (or late) jobs of that size.
// Jobs that already carry a team keep it unless `reassign_all` is set.
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "core/model/state.h"
#include "sim/trace.h"

namespace allot::sim {

enum class TeamRule { kRoundRobin, kRandom, kBySize };

struct TeamWeight {
  std::string name;
  uint32_t weight = 1;
};

struct TeamAssignment {
  TeamRule rule = TeamRule::kRoundRobin;
  std::vector<TeamWeight> teams;  // in order; the order matters for round-robin ties and for by-size
  uint64_t seed = 1;
  bool reassign_all = false;  // true: also replace the teams a trace gave its jobs
};

// The assignment `allot sim replay` uses: every team of the cluster, weighted by the accelerators of its
// allocation (evenly when no team has any), so each team brings demand like its entitlement.
TeamAssignment assignment_by_allocation(const ClusterState& cluster, TeamRule rule, uint64_t seed);

// "round-robin", "random" or "by-size" (case-insensitive).
Result<TeamRule> parse_team_rule(std::string_view name);
const char* team_rule_name(TeamRule rule);

// Gives every job without a team (every job with `reassign_all`) one of `options.teams`. Returns how many jobs
// were assigned. Errors: no teams, an empty or repeated team name, all weights zero.
Result<int64_t> assign_teams(Trace& trace, const TeamAssignment& options);

// A uniform draw in [0, bound) from the 64-bit engine, the same on every platform: outputs below 2^64 mod bound
// are rejected so that the remaining range is a whole multiple of bound, then reduced modulo bound.
// REQUIRES: bound > 0.
uint64_t bounded_draw(std::mt19937_64& rng, uint64_t bound);

}  // namespace allot::sim
