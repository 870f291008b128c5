// Cohort trees in the core (core/quota/cohort_tree.h): the checks on groups and teams' groups, the tree arithmetic
// worked by hand, and the flat case: one root group holding every team gives the verdicts the flat cohort gives.
// The scenario files cohort_tree_*.yaml cover the same rules end to end, the property test random trees.
#include <gtest/gtest.h>

#include <random>

#include "core/quota/cohort_nearness.h"
#include "core/quota/cohort_tree.h"
#include "core/quota/quota.h"
#include "core/model/state.h"

namespace allot::cohort_tree_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // 1 accelerator, 32 vCPU, 128 GiB per node

AmountSpec instances(int n) {
  AmountSpec a;
  a.instances = n;
  return a;
}

TeamSpec team(std::string name, int n, std::string group = "", SharingStrategy strategy = SharingStrategy::kLendAndBorrow,
              int borrow_limit = 1000) {
  TeamSpec t;
  t.name = std::move(name);
  t.allocation = {{kType, instances(n)}};
  t.group = std::move(group);
  t.strategy = strategy;
  t.borrow_limit = borrow_limit;
  return t;
}

GroupSpec group(std::string name, std::string parent = "", int own = 0, std::optional<int> borrow = {}, std::optional<int> lend = {}) {
  GroupSpec g;
  g.name = std::move(name);
  g.parent = std::move(parent);
  if (own > 0) g.allocation = {{kType, instances(own)}};
  g.borrow_limit = borrow;
  g.lend_limit = lend;
  return g;
}

ClusterState cluster(int nodes, std::vector<GroupSpec> groups, const std::vector<TeamSpec>& teams, bool idle_pool = false) {
  ClusterState s;
  std::vector<NodeSpec> specs;
  for (int i = 1; i <= nodes; ++i) specs.push_back(NodeSpec{"n" + std::to_string(i), kType, "", {}});
  EXPECT_TRUE(add_nodes(s, specs, 0).ok());
  PolicySpec p;
  p.idle_pool = idle_pool;
  p.groups = std::move(groups);
  EXPECT_TRUE(set_policy(s, p).ok());
  for (const TeamSpec& t : teams) {
    auto st = upsert_team(s, t);
    EXPECT_TRUE(st.ok()) << t.name << ": " << (st.ok() ? "" : st.error().message);
  }
  return s;
}

TypeId type_of(const ClusterState& s) { return *s.catalog.find(kType); }
Resources nodes_of(const ClusterState& s, int n) { return s.catalog.at(type_of(s)).capacity() * n; }

// Sets what a team's running jobs hold, in whole nodes.
void hold(ClusterState& s, const std::string& name, int n) { s.usage[s.find_team(name)->id.index()][type_of(s).index()] = nodes_of(s, n); }

QuotaVerdict ask(const ClusterState& s, const std::string& name, int n) {
  return check_quota(s, s.usage, s.find_team(name)->id, type_of(s), nodes_of(s, n));
}

std::string refused(const std::vector<GroupSpec>& groups) {
  auto st = check_groups(groups);
  return st.ok() ? "" : st.error().message;
}

TEST(CohortTree, BadGroupsAreRefusedWithTheRule) {
  EXPECT_NE(refused({group("a"), group("a")}).find("group a is defined twice"), std::string::npos);
  EXPECT_NE(refused({group("a", "nowhere")}).find("group a: parent nowhere is not a group; groups: a"), std::string::npos);
  EXPECT_NE(refused({group("a", "b"), group("b", "a")}).find("groups form a cycle: a > b > a"), std::string::npos);
  EXPECT_NE(refused({group("a", "a")}).find("cycle"), std::string::npos);
  // A missing parent further up is named, whichever group is checked first (the walk up from a never reads past it).
  EXPECT_NE(refused({group("a", "b"), group("b", "c")}).find("group b: parent c is not a group; groups: a, b"), std::string::npos);
  EXPECT_NE(refused({group("a", "", 0, 10001)}).find("borrow_limit must be 0..10000"), std::string::npos);
  EXPECT_NE(refused({group("a", "", 0, {}, 101)}).find("lend_limit must be 0..100"), std::string::npos);
  EXPECT_EQ(refused({group("c", "b"), group("b", "a"), group("a")}), "");  // parents after children are fine
}

TEST(CohortTree, TeamsMustNameAGroupThatExistsAndNoneNamedLikeAGroup) {
  ClusterState s = cluster(2, {group("research")}, {});
  auto unknown = upsert_team(s, team("a", 1, "nowhere"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("team a: group nowhere is not defined; groups: research"), std::string::npos);
  auto clash = upsert_team(s, team("research", 1));
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("has the name of a group"), std::string::npos);
  ASSERT_TRUE(upsert_team(s, team("a", 1, "research")).ok());
  // A policy that drops a group still in use is refused, and changes nothing.
  PolicySpec without;
  auto drop = set_policy(s, without);
  ASSERT_FALSE(drop.ok());
  EXPECT_NE(drop.error().message.find("team a is in group research"), std::string::npos);
  EXPECT_EQ(s.policy.groups.size(), 1u);
  EXPECT_EQ(s.cohorts.groups.size(), 1u);
  // A policy naming a type the catalog lacks is refused too.
  PolicySpec bad_type;
  bad_type.groups = {group("research")};
  bad_type.groups[0].allocation = {{"ml.nope", instances(1)}};
  EXPECT_FALSE(set_policy(s, bad_type).ok());
}

// Worked by hand (docs/scheduling.md, "Cohort trees"): org > {research (lend_limit 50%): a, b; prod: c, d}, each
// team 2 nodes, 8 nodes, no idle pool. research keeps 2 of its 4 for itself: c and d may take 6 in all.
TEST(CohortTree, LendingLimitKeepsPartOfAGroupsQuotaForItsMembers) {
  ClusterState s = cluster(8, {group("org"), group("research", "org", 0, {}, 50), group("prod", "org")},
                           {team("a", 2, "research"), team("b", 2, "research"), team("c", 2, "prod"), team("d", 2, "prod")});
  hold(s, "c", 6);  // 2 of its own, d's 2, research's lendable 2
  const CohortFigures f = cohort_figures(s, s.usage, type_of(s), {});
  const int research = s.cohorts.find("research"), prod = s.cohorts.find("prod"), org = s.cohorts.find("org");
  EXPECT_EQ(f.subtree[research], nodes_of(s, 4));
  EXPECT_EQ(f.guaranteed[research], nodes_of(s, 2));
  EXPECT_EQ(f.subtree[org], nodes_of(s, 6));  // research lends 2, prod 4
  EXPECT_EQ(f.used[prod], nodes_of(s, 6));
  EXPECT_EQ(f.used[org], nodes_of(s, 6));
  EXPECT_EQ(f.cluster_subtree, nodes_of(s, 6));
  // c may take no more: research's other 2 are its own.
  QuotaVerdict c = ask(s, "c", 1);
  EXPECT_FALSE(c.fits);
  EXPECT_EQ(c.why.code, ReasonCode::kNoIdleQuota);
  // a sibling in research still gets the 2 kept back, even beyond its own quota (b's unused quota)...
  EXPECT_TRUE(ask(s, "a", 2).fits);
  hold(s, "a", 2);
  // ...and no more: research's lendable 2 are with c.
  QuotaVerdict b = ask(s, "b", 1);
  EXPECT_FALSE(b.fits);
  EXPECT_EQ(b.why.code, ReasonCode::kQuotaLentOut);  // within b's own quota: lent out, a case for reclaim
  EXPECT_NE(b.why.text.str().find("quota lent out: team b"), std::string::npos) << b.why.text.str();
}

// A borrowing limit at a group caps what its whole subtree takes from above: prod (2 + 2 nodes, borrow_limit 50%)
// may hold 6, though the cluster's other 4 nodes are idle quota of team x.
TEST(CohortTree, BorrowingLimitAtAGroupCapsItsSubtree) {
  ClusterState s = cluster(8, {group("prod", "", 0, 50)}, {team("c", 2, "prod"), team("d", 2, "prod"), team("x", 4)});
  EXPECT_TRUE(ask(s, "c", 6).fits);
  hold(s, "c", 5);
  EXPECT_TRUE(ask(s, "d", 1).fits);
  QuotaVerdict d = ask(s, "d", 2);
  EXPECT_FALSE(d.fits);
  EXPECT_EQ(d.why.code, ReasonCode::kBorrowLimit);
  EXPECT_NE(d.why.text.str().find("group prod"), std::string::npos) << d.why.text.str();
  // x, outside prod, still has its own 4... and prod's unused part: 8 - 5 = 3 left in all.
  EXPECT_FALSE(ask(s, "x", 4).fits);
  EXPECT_TRUE(ask(s, "x", 3).fits);
}

// A group's own quota joins its subtree's pool: research (own 2) lets its teams of 1 node each hold 4.
TEST(CohortTree, AGroupsOwnQuotaPoolsForItsChildren) {
  ClusterState s = cluster(8, {group("research", "", 2, 0)}, {team("a", 1, "research"), team("b", 1, "research"), team("x", 4)});
  EXPECT_TRUE(ask(s, "a", 4).fits);
  EXPECT_FALSE(ask(s, "a", 5).fits);  // research may not borrow (borrow_limit 0): x's unused 4 are not for it
  hold(s, "a", 3);
  EXPECT_TRUE(ask(s, "b", 1).fits);
  EXPECT_FALSE(ask(s, "b", 2).fits);
}

// The flat case as a tree: one root group without quota or limits holding every team gives the verdicts of the
// flat cohort, for random quotas, strategies, usage and requests.
TEST(CohortTree, OneRootGroupGivesTheFlatVerdicts) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 300; ++round) {
    const int nodes = pick(1, 12), teams = pick(1, 4);
    const bool idle_pool = pick(0, 1);
    std::vector<TeamSpec> flat, grouped;
    for (int t = 0; t < teams; ++t) {
      const int strategy = pick(0, 2);
      TeamSpec ts = team("t" + std::to_string(t), pick(0, 4), "",
                         strategy == 0 ? SharingStrategy::kDontLend : strategy == 1 ? SharingStrategy::kLend : SharingStrategy::kLendAndBorrow,
                         pick(0, 4) * 50);
      flat.push_back(ts);
      ts.group = "all";
      grouped.push_back(ts);
    }
    ClusterState a = cluster(nodes, {}, flat, idle_pool), b = cluster(nodes, {group("all")}, grouped, idle_pool);
    for (int t = 0; t < teams; ++t) {
      const int n = pick(0, 5);
      hold(a, flat[t].name, n);
      hold(b, flat[t].name, n);
    }
    for (int t = 0; t < teams; ++t) {
      const int n = pick(1, 6);
      const QuotaVerdict va = ask(a, flat[t].name, n), vb = ask(b, flat[t].name, n);
      ASSERT_EQ(va.fits, vb.fits) << "round " << round << ", team " << flat[t].name << ", " << n << " nodes: " << va.why.text.str()
                                  << " / " << vb.why.text.str();
      EXPECT_EQ(va.why.code, vb.why.code) << "round " << round;
      EXPECT_EQ(va.within_nominal, vb.within_nominal);
    }
  }
}

// Reclaim's order (cohort_nearness.h): how many groups two teams' paths from the cluster share. org > {research,
// prod}; teams 0 and 1 in research, 2 in prod, 3 under the cluster; another tree lab holds team 4.
TEST(CohortTree, NearnessIsTheDepthOfTheLowestCommonGroup) {
  CohortTree tree;
  for (const auto& [name, parent] : std::vector<std::pair<std::string, int>>{{"org", -1}, {"research", 0}, {"prod", 0}, {"lab", -1}})
    tree.groups.push_back(CohortGroup{.spec = GroupSpec{.name = name}, .parent = parent, .nominal = {}});
  tree.team_group = {1, 1, 2, -1, 3};
  auto near = [&](uint32_t a, uint32_t b) { return cohort_nearness(tree, TeamId(a), TeamId(b)); };
  EXPECT_EQ(near(0, 1), 2);  // siblings: org and research
  EXPECT_EQ(near(0, 2), 1);  // cousins: org
  EXPECT_EQ(near(2, 0), 1);
  EXPECT_EQ(near(0, 3), 0);  // a team without a group meets everyone at the cluster
  EXPECT_EQ(near(0, 4), 0);  // another tree
  EXPECT_EQ(near(4, 4), 1);
  EXPECT_EQ(cohort_nearness(CohortTree{}, TeamId(0), TeamId(1)), 0);  // no groups: every team as near
}

}  // namespace
}  // namespace allot::cohort_tree_test
