// Team assignment: each rule's pattern, determinism for a seed, and that the shares follow the weights.
#include "sim/trace_teams.h"

#include <gtest/gtest.h>

#include <map>

namespace allot::sim::trace_teams_test {
namespace {

Trace uniform_trace(int n, int gpus = 1) {
  Trace t;
  for (int i = 0; i < n; ++i) t.jobs.push_back({"j" + std::to_string(i), i, 100, gpus, ""});
  return t;
}

std::string teams_of(const Trace& t) {
  std::string s;
  for (const TraceJob& j : t.jobs) s += j.team;
  return s;
}

std::map<std::string, int> counts(const Trace& t) {
  std::map<std::string, int> c;
  for (const TraceJob& j : t.jobs) c[j.team]++;
  return c;
}

TEST(TraceTeams, EngineIsTheStandardOne) {
  // The C++ standard fixes this value ([rand.predef]): the 10000th output of a default-constructed
  // mt19937_64. If it holds, every platform sees the same stream for the same seed.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ull);
}

TEST(TraceTeams, BoundedDrawIsPortableAndInRange) {
  // Golden values: bounded_draw is allot's own code on a standard engine, so these hold everywhere.
  std::mt19937_64 rng(42);
  std::vector<uint64_t> draws;
  for (int i = 0; i < 6; ++i) draws.push_back(bounded_draw(rng, 10));
  std::mt19937_64 again(42);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(bounded_draw(again, 10), draws[i]);
  std::mt19937_64 ref(42);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(draws[i], ref() % 10);  // 2^64 mod 10 = 6: rejection is rare
  std::mt19937_64 big(7);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(bounded_draw(big, 3), 3u);
  EXPECT_EQ(bounded_draw(big, 1), 0u);
}

TEST(TraceTeams, RoundRobinEqualWeights) {
  Trace t = uniform_trace(7);
  auto n = assign_teams(t, {.rule = TeamRule::kRoundRobin, .teams = {{"a"}, {"b"}, {"c"}}});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 7);
  EXPECT_EQ(teams_of(t), "abcabca");
}

TEST(TraceTeams, RoundRobinWeightedIsSmooth) {
  Trace t = uniform_trace(6);
  ASSERT_TRUE(assign_teams(t, {.rule = TeamRule::kRoundRobin, .teams = {{"a", 2}, {"b", 1}}}).ok());
  EXPECT_EQ(teams_of(t), "abaaba");
  Trace z = uniform_trace(4);
  ASSERT_TRUE(assign_teams(z, {.rule = TeamRule::kRoundRobin, .teams = {{"x", 0}, {"a", 1}, {"b", 1}}}).ok());
  EXPECT_EQ(teams_of(z), "abab");  // weight 0: no jobs
}

TEST(TraceTeams, KeepsTraceTeamsUnlessReassigning) {
  Trace t = uniform_trace(4);
  t.jobs[1].team = "z";
  auto n = assign_teams(t, {.rule = TeamRule::kRoundRobin, .teams = {{"a"}, {"b"}}});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3);
  EXPECT_EQ(teams_of(t), "azba");  // the kept job does not take a turn
  ASSERT_TRUE(assign_teams(t, {.rule = TeamRule::kRoundRobin, .teams = {{"a"}, {"b"}}, .reassign_all = true}).ok());
  EXPECT_EQ(teams_of(t), "abab");
}

TEST(TraceTeams, RandomIsDeterministicForASeed) {
  const TeamAssignment opts{.rule = TeamRule::kRandom, .teams = {{"a"}, {"b"}, {"c"}}, .seed = 2024};
  Trace t1 = uniform_trace(200), t2 = uniform_trace(200), t3 = uniform_trace(200);
  ASSERT_TRUE(assign_teams(t1, opts).ok());
  ASSERT_TRUE(assign_teams(t2, opts).ok());
  TeamAssignment other = opts;
  other.seed = 2025;
  ASSERT_TRUE(assign_teams(t3, other).ok());
  EXPECT_EQ(teams_of(t1), teams_of(t2));
  EXPECT_NE(teams_of(t1), teams_of(t3));
}

TEST(TraceTeams, RandomFollowsWeights) {
  // 60,000 jobs, weights 1:2:3: each count is binomial with sd <= sqrt(60000 x 0.25) ~ 122, so +-1% of the
  // jobs (600) is about 5 sd.
  Trace t = uniform_trace(60000);
  ASSERT_TRUE(assign_teams(t, {.rule = TeamRule::kRandom, .teams = {{"a", 1}, {"b", 2}, {"c", 3}}, .seed = 9}).ok());
  auto c = counts(t);
  EXPECT_NEAR(c["a"], 10000, 600);
  EXPECT_NEAR(c["b"], 20000, 600);
  EXPECT_NEAR(c["c"], 30000, 600);
}

TEST(TraceTeams, BySizeSplitsGpuSecondsByWeightSmallJobsFirst) {
  // 100 one-GPU jobs (100 GPU-s each, 10,000 in all) and 10 eight-GPU jobs (800 GPU-s each, 8,000 in all).
  // Weights 1:1 put the boundary at 9,000 GPU-s: every 8-GPU job goes to "large", and the 1-GPU jobs are
  // split 90:10, since the first 9,000 of their 10,000 GPU-s lie in "small"'s band. Which 90 is random, not
  // the 90 submitted first.
  Trace t = uniform_trace(100, 1);
  for (int i = 0; i < 10; ++i) t.jobs.push_back({"big" + std::to_string(i), 100 + i, 100, 8, ""});
  ASSERT_TRUE(assign_teams(t, {.rule = TeamRule::kBySize, .teams = {{"small"}, {"large"}}, .seed = 3}).ok());
  int small_ones = 0, late_small_ones = 0;
  for (const TraceJob& j : t.jobs) {
    if (j.gpus == 8) {
      EXPECT_EQ(j.team, "large") << j.id;
    } else if (j.team == "small") {
      ++small_ones;
      if (j.submit_s >= 90) ++late_small_ones;
    }
  }
  EXPECT_EQ(small_ones, 90);
  EXPECT_GT(late_small_ones, 0);
  Trace again = t;
  ASSERT_TRUE(
      assign_teams(again, {.rule = TeamRule::kBySize, .teams = {{"small"}, {"large"}}, .seed = 3, .reassign_all = true})
          .ok());
  EXPECT_EQ(teams_of(again), teams_of(t));
}

TEST(TraceTeams, BySizeOnARealShapedTrace) {
  // Sizes 1..64, four equal teams: every team gets a quarter of the GPU-seconds to within one job at each
  // boundary (one 64-GPU job is under 0.2% of the total), and the teams' largest jobs grow along the list.
  Trace t;
  const int sizes[] = {1, 1, 1, 1, 2, 4, 8, 8, 16, 32, 64};
  for (int i = 0; i < 4400; ++i) {
    const int g = sizes[i % 11];
    t.jobs.push_back({"j" + std::to_string(i), i, 600 + (i * 37) % 3000, g, ""});
  }
  ASSERT_TRUE(assign_teams(t, {.rule = TeamRule::kBySize, .teams = {{"t0"}, {"t1"}, {"t2"}, {"t3"}}, .seed = 1}).ok());
  std::map<std::string, double> gpu_s;
  std::map<std::string, int> max_gpus;
  double total = 0;
  for (const TraceJob& j : t.jobs) {
    gpu_s[j.team] += static_cast<double>(j.gpus) * j.duration_s;
    max_gpus[j.team] = std::max(max_gpus[j.team], j.gpus);
    total += static_cast<double>(j.gpus) * j.duration_s;
  }
  for (const char* team : {"t0", "t1", "t2", "t3"}) EXPECT_NEAR(gpu_s[team] / total, 0.25, 0.004) << team;
  EXPECT_LE(max_gpus["t0"], max_gpus["t1"]);
  EXPECT_LE(max_gpus["t1"], max_gpus["t2"]);
  EXPECT_LE(max_gpus["t2"], max_gpus["t3"]);
  EXPECT_EQ(max_gpus["t3"], 64);
}

TEST(TraceTeams, RejectsBadTeamLists) {
  Trace t = uniform_trace(3);
  EXPECT_FALSE(assign_teams(t, {.teams = {}}).ok());
  EXPECT_FALSE(assign_teams(t, {.teams = {{"a"}, {"a"}}}).ok());
  EXPECT_FALSE(assign_teams(t, {.teams = {{""}}}).ok());
  auto zero = assign_teams(t, {.teams = {{"a", 0}, {"b", 0}}});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("all team weights are 0"), std::string::npos);
  EXPECT_EQ(teams_of(t), "");  // untouched on error
}

TEST(TraceTeams, RuleNames) {
  EXPECT_EQ(*parse_team_rule("round-robin"), TeamRule::kRoundRobin);
  EXPECT_EQ(*parse_team_rule("Random"), TeamRule::kRandom);
  EXPECT_EQ(*parse_team_rule("by-size"), TeamRule::kBySize);
  auto bad = parse_team_rule("hash");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "unknown team assignment rule 'hash'; valid: round-robin, random, by-size");
  EXPECT_STREQ(team_rule_name(TeamRule::kBySize), "by-size");
}

}  // namespace
}  // namespace allot::sim::trace_teams_test
