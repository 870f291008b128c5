// A randomized property test of the scheduler pass, with policy.fair_share_preemption on (and, as a control, off):
// thousands of small random clusters, teams and job streams, with our own generator (a seeded std::mt19937, so a
// failure names the seed that reproduces it; ALLOT_PROPERTY_FIRST_SEED and ALLOT_PROPERTY_SCENARIOS play other
// seeds). After every scheduler pass:
//  - the pass ended at a fixed point (no step bound) and a second pass at the same instant changes nothing,
//    apart from, with the switch off only, the one known gap of missed_after_borrowing() (counted and printed);
//  - capacity: the room table and team usage equal what the running jobs' placements add up to, and no node
//    gives out more than it has;
//  - quota: no team holds more than its nominal quota plus its borrow limit, and the lending teams together
//    no more than the pool;
//  - gang: every running job has every replica of every pod set placed (an elastic pod set: between its min and
//    its max);
//  - topology: a pod set with a required level runs inside one domain of that level;
//  - cohort trees (the CohortTree tests: the same worlds with random groups): the cluster's pool is not
//    overdrawn, and no group takes more from above than its lendable quota plus its borrowing limit.
// Grouping: whether the running jobs depend on how the events of one instant are grouped into passes (one pass
// after all of them, or one after each). That is asserted only where it can hold: first-come-first-served
// order, no borrowing, no preemption. In general it cannot, with the switch off as well as on, because a pass
// admits in phases (phases.h): jobs within their team's nominal quota before borrowers, and admissions that
// need no preemption before those that do. Two cases the generator finds:
//  - seed 27 (FCFS, no priorities): j5 of t2 must borrow, j7 of t2 fits within t2's nominal quota and arrives
//    after it. One pass admits j7 first and j5 no longer fits; a pass per event admits j5 before j7 exists,
//    and nothing lets j7 take j5's place (reclaim is between teams, and j7 does not outrank j5);
//  - seed 57 (FCFS, LowerPriority, no borrowing): j6 (mid) could preempt j3 (no priority) within its team, and
//    j8 (mid) arrives after j6. One pass admits j8 into the free room first (phase 1), and then j6 no longer
//    fits even without j3; a pass per event lets j6 preempt j3 before j8 exists.
// Both are by design (and the same on main without the switch); the differing scenarios are counted and printed.
// Elastic jobs: the same worlds with about a third of the jobs elastic (and the grow delay 0 or 50 s), drawn from
// a second generator so that the worlds above stay as they are, check the same invariants and the fixed point
// with shrink before preempt and growth after the delay (ElasticFixedPoint...).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <set>

#include "core/quota/cohort_tree.h"
#include "core/placement/placement.h"
#include "core/quota/quota.h"
#include "core/pass/scheduler.h"

namespace allot::fair_share_property_test {
namespace {

constexpr const char* kType = "ml.g5.12xlarge";  // 4 accelerators per node

struct World {
  std::vector<NodeSpec> nodes;
  std::vector<TeamSpec> teams;
  PolicySpec policy;
  // Per instant, the jobs submitted then and the jobs (by name) finished then.
  struct Instant {
    Time at = 0;
    std::vector<JobSpec> submit;
    std::vector<std::string> finish;
  };
  std::vector<Instant> instants;
};

// The variant of a world in which grouping cannot matter: first come first served, no team borrows, no team
// preempts its own jobs (so nothing is ever preempted).
World first_come_first_served(World w) {
  w.policy.task_prioritization = TaskPrioritization::kFcfs;
  for (auto& t : w.teams) {
    if (t.strategy == SharingStrategy::kLendAndBorrow) t.strategy = SharingStrategy::kLend;
    t.preempt_team_tasks = PreemptTeamTasks::kNever;
  }
  return w;
}

// Cohort trees (core/quota/cohort_tree.h) over a world's teams, drawn from a third generator so that the worlds stay
// as they are: 1..3 groups, each a root or under an earlier group, with random own quota and limits; each team
// in a random group or none.
World with_groups(World w, uint32_t seed) {
  std::mt19937 trng(seed * 104729u + 31u);
  auto tpick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(trng); };
  const int groups = tpick(1, 3);
  for (int g = 0; g < groups; ++g) {
    GroupSpec gs;
    gs.name = "g" + std::to_string(g);
    if (g > 0 && tpick(0, 1)) gs.parent = "g" + std::to_string(tpick(0, g - 1));
    if (tpick(0, 2) == 0) {
      AmountSpec a;
      a.instances = tpick(1, 2);
      gs.allocation = {{kType, a}};
    }
    if (tpick(0, 1)) gs.borrow_limit = tpick(0, 2) * 50;
    if (tpick(0, 1)) gs.lend_limit = tpick(0, 2) * 50;
    w.policy.groups.push_back(gs);
  }
  for (auto& t : w.teams) {
    const int g = tpick(-1, groups - 1);
    if (g >= 0) t.group = "g" + std::to_string(g);
  }
  return w;
}

World generate(uint32_t seed, bool fair_share, bool elastic = false) {
  std::mt19937 rng(seed);
  // Elastic choices come from their own generator: the worlds without them stay the same for every seed.
  std::mt19937 erng(seed * 7919u + 17u);
  auto epick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(erng); };
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  World w;
  const int domains = pick(1, 3);
  int n = 0;
  for (int d = 0; d < domains; ++d)
    for (int k = pick(1, 4); k > 0; --k)
      w.nodes.push_back(NodeSpec{"n-" + std::to_string(++n), kType, "", {{"network-node-layer-3", "nn-" + std::to_string(d)}}});
  const int teams = pick(2, 4);
  for (int t = 0; t < teams; ++t) {
    TeamSpec ts;
    ts.name = "t" + std::to_string(t);
    ts.fair_share_weight = pick(0, 3);
    AmountSpec a;
    a.instances = pick(0, std::max(1, n / teams + 1));
    ts.allocation = {{kType, a}};
    const int strategy = pick(0, 5);
    ts.strategy = strategy == 0 ? SharingStrategy::kDontLend : strategy == 1 ? SharingStrategy::kLend : SharingStrategy::kLendAndBorrow;
    ts.borrow_limit = pick(0, 4) * 50;
    ts.preempt_team_tasks = pick(0, 3) == 0 ? PreemptTeamTasks::kNever : PreemptTeamTasks::kLowerPriority;
    w.teams.push_back(ts);
  }
  w.policy.fair_share_preemption = fair_share;
  w.policy.idle_pool = pick(0, 1) == 1;
  w.policy.task_prioritization = pick(0, 1) ? TaskPrioritization::kTaskRanking : TaskPrioritization::kFcfs;
  w.policy.priority_classes = {{"low", 10}, {"mid", 20}, {"high", 30}};
  if (elastic) w.policy.elastic_grow_delay_s = epick(0, 1) * 50;
  std::vector<std::string> submitted;
  Time at = 0;
  int j = 0;
  for (int i = pick(2, 6); i > 0; --i) {
    World::Instant in;
    in.at = at;
    for (int k = pick(1, 5); k > 0; --k) {
      JobSpec js;
      js.name = "j" + std::to_string(++j);
      js.team = w.teams[static_cast<size_t>(pick(0, teams - 1))].name;
      const int prio = pick(0, 3);
      if (prio > 0) js.priority = prio == 1 ? "low" : prio == 2 ? "mid" : "high";
      PodSetSpec ps;
      ps.replicas = pick(1, 3);
      if (pick(0, 2) == 0) ps.per_replica.whole_node = true;
      else ps.per_replica.accelerators = pick(1, 4);
      if (pick(0, 3) == 0) ps.topology.required = "network-node-layer-3";
      if (elastic && epick(0, 2) == 0) {
        ps.min_replicas = epick(1, ps.replicas);
        if (*ps.min_replicas == ps.replicas) ps.replicas += epick(1, 2);
      }
      js.pod_sets = {ps};
      in.submit.push_back(js);
      submitted.push_back(js.name);
    }
    if (!submitted.empty() && pick(0, 1))
      in.finish.push_back(submitted[static_cast<size_t>(pick(0, static_cast<int>(submitted.size()) - 1))]);
    w.instants.push_back(std::move(in));
    at += pick(1, 100);
  }
  return w;
}

// Every invariant of the header, on the state after a pass; `where` names the seed and the instant.
void check_invariants(const ClusterState& s, const std::string& where) {
  // Capacity: room and usage are what the running jobs add up to.
  RoomTable room = pristine_room(s);
  for (const Node& n : s.nodes) room[n.id.index()].usable = n.schedulable();
  UsageTable usage(s.teams.size(), std::vector<Resources>(s.catalog.size()));
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    charge(room, usage, s, j, j.placement);
    // Gang: every replica placed.
    ASSERT_EQ(j.placement.pod_sets.size(), j.pod_sets.size()) << where << ": job " << j.spec.name;
    for (size_t p = 0; p < j.pod_sets.size(); ++p) {
      const int placed = static_cast<int>(j.placement.pod_sets[p].replicas.size());
      ASSERT_LE(placed, j.pod_sets[p].replicas) << where << ": job " << j.spec.name << " above its size";
      ASSERT_GE(placed, j.pod_sets[p].min_replicas) << where << ": job " << j.spec.name << " is a partial gang";
      // Topology: a required level holds the pod set in one domain.
      const int level = j.pod_sets[p].topology.level;
      if (j.pod_sets[p].topology.mode == TopologyRequest::Mode::kRequired) {
        std::set<std::vector<std::string>> domains;
        for (const auto& r : j.placement.pod_sets[p].replicas) {
          const auto& topo = s.nodes[r.node.index()].topology;
          domains.insert(std::vector<std::string>(topo.begin(), topo.begin() + level + 1));
        }
        EXPECT_EQ(domains.size(), 1u) << where << ": job " << j.spec.name << " spans domains of its required level";
      }
    }
  }
  for (const Node& n : s.nodes) {
    const NodeRoom& want = room[n.id.index()];
    const NodeRoom& have = s.room[n.id.index()];
    EXPECT_EQ(want.free, have.free) << where << ": node " << n.name;
    EXPECT_EQ(want.accelerators_free, have.accelerators_free) << where << ": node " << n.name;
    EXPECT_TRUE(Resources{}.fits_in(have.free)) << where << ": node " << n.name << " gives out more than it has";
  }
  // Quota.
  for (size_t t = 0; t < s.teams.size(); ++t)
    for (size_t k = 0; k < s.catalog.size(); ++k) {
      const TypeId type(static_cast<uint32_t>(k));
      EXPECT_EQ(usage[t][k], s.usage[t][k]) << where << ": team " << s.teams[t].spec.name;
      EXPECT_TRUE(s.usage[t][k].fits_in(team_max(s.teams[t], type))) << where << ": team " << s.teams[t].spec.name << " above its max";
    }
  for (size_t k = 0; k < s.catalog.size(); ++k) {
    const TypeId type(static_cast<uint32_t>(k));
    if (s.cohorts.empty()) {
      EXPECT_TRUE(pool_used(s, s.usage, type).fits_in(pool_capacity(s, type))) << where << ": the pool is overdrawn";
      continue;
    }
    // Trees: the cluster's pool holds what reaches it, and no group with a borrowing limit takes more from above
    // than its lendable quota plus the limit (cohort_tree.h).
    Resources idle;
    if (s.policy.idle_pool) {
      Resources nominal;
      for (const Team& t : s.teams) nominal += t.nominal[k];
      idle = max0(s.type_capacity(type) - nominal);
    }
    const CohortFigures f = cohort_figures(s, s.usage, type, idle);
    EXPECT_TRUE(f.cluster_used.fits_in(f.cluster_subtree)) << where << ": the cluster's pool is overdrawn";
    for (size_t g = 0; g < s.cohorts.groups.size(); ++g) {
      const GroupSpec& spec = s.cohorts.groups[g].spec;
      if (!spec.borrow_limit) continue;
      const Resources taken = max0(f.used[g] - f.guaranteed[g]);
      Resources limit = f.subtree[g] - f.guaranteed[g];
      for (Resource r : kAllResources) limit.at(r) += f.subtree[g].get(r) * *spec.borrow_limit / 100;
      EXPECT_TRUE(taken.fits_in(limit)) << where << ": group " << spec.name << " above its borrowing limit";
    }
  }
}

// Second passes at the same instant that found a preemption the first pass missed, by the one known gap.
int missed_plans = 0;

// The known gap with the switch off (kept: closing it changes the cluster04 replay, and the switch off keeps every
// earlier result): a waiting job that found no preemption plan early in a pass is not tried again in that pass after
// a later borrowing admission put the borrower's team above its nominal quota (which makes its jobs reclaim
// candidates). The next pass then reclaims. Seed 347 shows it: j10 of t1 finds nothing to reclaim, j8 and j9 of t0
// borrow idle capacity, and only the second pass has j10 reclaim j3 of t0. Recognised when the first pass admitted
// a borrower and the second begins with a preemption. With the switch on, Pass::plan_again closes it: not tolerated.
bool missed_after_borrowing(const ScheduleResult& first, const ScheduleResult& again) {
  bool borrowed = false;
  for (const Decision& d : first.decisions)
    if (const auto* a = std::get_if<AdmitDecision>(&d)) borrowed |= a->borrowing;
  const auto* shrink = std::get_if<ResizeDecision>(&again.decisions.front());
  return borrowed && (std::holds_alternative<PreemptDecision>(again.decisions.front()) ||
                      (shrink && shrink->cause == ResizeCause::kShrink));
}

// The decisions of a pass, one per line, for a failure message.
std::string describe(const ClusterState& s, const ScheduleResult& r) {
  std::string out;
  for (const Decision& d : r.decisions) {
    const Job& j = s.jobs[decision_job(d).index()];
    if (const auto* a = std::get_if<AdmitDecision>(&d)) out += "\n  admit " + j.spec.name + ": " + a->reason.str();
    else if (const auto* p = std::get_if<PreemptDecision>(&d)) out += "\n  preempt " + j.spec.name + ": " + p->reason.str();
    else out += "\n  resize " + j.spec.name + ": " + std::get<ResizeDecision>(d).reason.str();
  }
  return out;
}

// Plays the world; `one_pass_per_event` runs a pass after every event of an instant instead of once per instant.
// Returns the names of the running jobs after each instant.
std::vector<std::set<std::string>> play(const World& w, uint32_t seed, bool one_pass_per_event) {
  ClusterState s;
  std::vector<std::set<std::string>> out;
  EXPECT_TRUE(add_nodes(s, w.nodes, 0).ok());
  EXPECT_TRUE(set_policy(s, w.policy).ok());
  for (const auto& t : w.teams) EXPECT_TRUE(upsert_team(s, t).ok()) << t.name;
  auto pass = [&](Time at, const std::string& after) {
    const std::string where = "seed " + std::to_string(seed) + ", t=" + std::to_string(at) + ", " + after +
                              (one_pass_per_event ? " (a pass per event)" : " (a pass per instant)");
    ScheduleResult r = schedule(s, at);
    EXPECT_FALSE(r.bound_hit) << where << ": " << (r.bound_hit ? r.bound_hit->message : "") << describe(s, r);
    ScheduleResult again = schedule(s, at);
    if (!again.decisions.empty() && !w.policy.fair_share_preemption && missed_after_borrowing(r, again)) {
      ++missed_plans;
    } else {
      EXPECT_TRUE(again.decisions.empty()) << where << ": not a fixed point; the first pass:" << describe(s, r)
                                           << "\nthe second:" << describe(s, again);
    }
    check_invariants(s, where);
  };
  for (const auto& in : w.instants) {
    for (const auto& name : in.finish) {
      const Job* j = s.find_job(name);
      if (j && j->state == JobState::kRunning) {
        EXPECT_TRUE(finish_job(s, name, in.at, true).ok());
        if (one_pass_per_event) pass(in.at, "finish " + name);
      }
    }
    for (const auto& js : in.submit) {
      EXPECT_TRUE(submit_job(s, js, in.at).ok()) << js.name;
      if (one_pass_per_event) pass(in.at, "submit " + js.name);
    }
    if (!one_pass_per_event) pass(in.at, "the instant's events");
    std::set<std::string> running;
    for (JobId id : s.running_jobs) running.insert(s.jobs[id.index()].spec.name);
    out.push_back(std::move(running));
  }
  return out;
}

// Plays `count` scenarios from `first`, both ways (`fcfs`: their first_come_first_served variants); returns how
// many end differently by grouping.
int play_many(uint32_t first, uint32_t count, bool fair_share, bool fcfs, uint32_t& first_differ, bool elastic = false,
              bool trees = false) {
  int differ = 0;
  for (uint32_t seed = first; seed < first + count; ++seed) {
    World w = fcfs ? first_come_first_served(generate(seed, fair_share)) : generate(seed, fair_share, elastic);
    if (trees) w = with_groups(std::move(w), seed);
    const auto grouped = play(w, seed, false);
    const auto each = play(w, seed, true);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed << (fair_share ? " (fair_share_preemption on)" : " (off)");
      return differ;
    }
    if (grouped != each && differ++ == 0) first_differ = seed;
  }
  return differ;
}

uint32_t env_or(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  return v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

void fixed_point_over_random_scenarios(bool fair_share, bool elastic = false, bool trees = false) {
  const uint32_t first = env_or("ALLOT_PROPERTY_FIRST_SEED", 1),
                 count = env_or("ALLOT_PROPERTY_SCENARIOS", 5000) / (elastic || trees ? 2 : 1);
  uint32_t first_differ = 0;
  missed_plans = 0;
  const int differ = play_many(first, count, fair_share, false, first_differ, elastic, trees);
  std::cout << "grouping of events into passes changed the running jobs in " << differ << " of " << count
            << " scenarios (first: seed " << first_differ << "; by design, see the top of this file)\n"
            << missed_plans << " second passes found a preemption missed after a borrowing admission (the known gap"
            << (fair_share ? "; closed with the switch on, so 0)\n" : " with the switch off)\n");
}

TEST(FairSharePropertyTest, FixedPointAndInvariantsOverRandomScenarios) { fixed_point_over_random_scenarios(true); }

// The control: the same worlds with the switch off.
TEST(FairSharePropertyTest, SwitchOffFixedPointAndInvariantsOverRandomScenarios) { fixed_point_over_random_scenarios(false); }

// Elastic jobs: shrink before preempt and growth after the delay keep the fixed point and the invariants.
TEST(FairSharePropertyTest, ElasticFixedPointAndInvariantsOverRandomScenarios) { fixed_point_over_random_scenarios(true, true); }
TEST(FairSharePropertyTest, ElasticSwitchOffFixedPointAndInvariantsOverRandomScenarios) {
  fixed_point_over_random_scenarios(false, true);
}

// Cohort trees: the same worlds with random groups keep the fixed point, capacity and the quota of every level.
TEST(FairSharePropertyTest, CohortTreeFixedPointAndInvariantsOverRandomScenarios) {
  fixed_point_over_random_scenarios(true, false, true);
}
TEST(FairSharePropertyTest, CohortTreeSwitchOffFixedPointAndInvariantsOverRandomScenarios) {
  fixed_point_over_random_scenarios(false, false, true);
}

TEST(FairSharePropertyTest, GroupingDoesNotMatterFirstComeFirstServedWithoutPreemption) {
  const uint32_t first = env_or("ALLOT_PROPERTY_FIRST_SEED", 1), count = env_or("ALLOT_PROPERTY_SCENARIOS", 5000) / 2;
  uint32_t first_differ = 0;
  EXPECT_EQ(play_many(first, count, true, true, first_differ), 0) << "first at seed " << first_differ;
}

}  // namespace
}  // namespace allot::fair_share_property_test
