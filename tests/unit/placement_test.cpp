// Unit tests of the placement rules (core/placement/placement.h), one rule per test, on small labelled clusters whose
// room is set by hand so each case shows exactly what the rule decides.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/admission/admission.h"
#include "core/placement/placement.h"

#include "spec_builders.h"

namespace allot::placement_test {
namespace {

using allot::test::job_spec;

constexpr const char* kL3 = "network-node-layer-3";
constexpr const char* kType = "ml.g5.8xlarge";

TopologySpec required(const std::string& level, const std::string& exclusive = "") {
  TopologySpec t;
  t.required = level;
  t.exclusive = exclusive;
  return t;
}
TopologySpec preferred(const std::string& level) {
  TopologySpec t;
  t.preferred = level;
  return t;
}
TopologySpec sliced(const std::string& level, int size) {
  TopologySpec t;
  t.slice = SliceSpec{level, size};
  return t;
}

class PlacementTest : public ::testing::Test {
 protected:
  // Adds nodes `prefix`-1..n under layer-3 domain `domain` (all in one layer-2 and layer-1 domain).
  void domain(const std::string& domain, const std::string& prefix, int n) {
    for (int i = 1; i <= n; ++i)
      ASSERT_TRUE(add_node(s, NodeSpec{prefix + "-" + std::to_string(i), kType, "",
                                       {{"network-node-layer-1", "nn-1"}, {"network-node-layer-2", "nn-2"}, {kL3, domain}}},
                           0)
                      .ok());
  }
  void SetUp() override {
    TeamSpec t;
    t.name = "ml";
    AmountSpec a;
    a.instances = 64;
    t.allocation = {{kType, a}};
    ASSERT_TRUE(upsert_team(s, t).ok());
  }
  const Job& job(const std::string& name, int replicas, TopologySpec topo = {}) {
    const JobSpec j = job_spec(name, "ml").replicas(replicas).instance_type(kType).whole_nodes().topology(std::move(topo));
    auto id = submit_job(s, j, 0);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    return *s.find_job(name);
  }
  // Marks a node as holding another job's replica.
  void occupy(RoomTable& room, const std::string& node) {
    NodeRoom& r = room[s.find_node(node)->id.index()];
    r.replicas = 1;
    r.free = {};
    r.accelerators_free = 0;
  }
  PlacementOutcome place(const Job& j, const RoomTable& room) { return place_job(s, room, j, *s.catalog.find(kType)); }
  // Telling "blocked now" from "never fits" is admission's part: it places the job again on the empty cluster.
  AdmissionAttempt attempt(const Job& j, const RoomTable& room) {
    pristine = pristine_room(s);
    return try_admit(s, room, s.usage, j, AdmitOptions{.pristine = &pristine});
  }
  std::set<std::string> nodes(const PlacementOutcome& p) {
    std::set<std::string> out;
    for (NodeId n : p.placement.nodes()) out.insert(s.nodes[n.index()].name);
    return out;
  }
  // Node names start with their domain's letter: a-1 is in nn-a.
  static std::string domain_of(const std::string& node) { return "nn-" + node.substr(0, 1); }
  std::set<std::string> domains(const PlacementOutcome& p) {
    std::set<std::string> out;
    for (const auto& n : nodes(p)) out.insert(domain_of(n));
    return out;
  }
  ClusterState s;
  RoomTable pristine;
};

TEST_F(PlacementTest, RequiredTakesTheTightestDomainThatHoldsTheWholeJob) {
  domain("nn-a", "a", 4);
  domain("nn-b", "b", 3);
  RoomTable room = s.room;
  auto p = place(job("three", 3, required(kL3)), room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  EXPECT_EQ(nodes(p), (std::set<std::string>{"b-1", "b-2", "b-3"})) << "nn-b fits exactly; nn-a stays whole";
}

TEST_F(PlacementTest, RequiredWaitsWhenNoDomainHasRoomButIsNotNeverFits) {
  domain("nn-a", "a", 2);
  domain("nn-b", "b", 2);
  RoomTable room = s.room;
  occupy(room, "a-1");
  occupy(room, "b-1");
  auto p = attempt(job("two", 2, required(kL3)), room);
  EXPECT_FALSE(p.ok());
  EXPECT_FALSE(p.never()) << "an empty cluster holds it: it waits";
  EXPECT_EQ(p.refusal(), Refusal::kPlacement) << "quota allows it; placement found no room";
  EXPECT_EQ(p.why.code, ReasonCode::kTopology);
  EXPECT_NE(p.why.text.str().find("no network-node-layer-3 domain has room for 2"), std::string::npos) << p.why.text.str();
  EXPECT_NE(p.why.text.str().find("the roomiest has 1"), std::string::npos) << p.why.text.str();
}

TEST_F(PlacementTest, RequiredLargerThanAnyDomainNeverFits) {
  domain("nn-a", "a", 2);
  domain("nn-b", "b", 2);
  auto p = attempt(job("three", 3, required(kL3)), s.room);
  EXPECT_FALSE(p.ok());
  EXPECT_TRUE(p.never());
  EXPECT_EQ(p.refusal(), Refusal::kPlacement);
  EXPECT_EQ(p.why.code, ReasonCode::kNeverFits);
  EXPECT_EQ(p.why.text.str().rfind("never fits", 0), 0u) << p.why.text.str();
}

TEST_F(PlacementTest, AQuotaRefusalIsNotAPlacementOne) {
  domain("nn-a", "a", 4);
  TeamSpec t;
  t.name = "small";
  AmountSpec a;
  a.instances = 1;
  t.allocation = {{kType, a}};
  t.strategy = SharingStrategy::kDontLend;
  ASSERT_TRUE(upsert_team(s, t).ok());
  ASSERT_TRUE(submit_job(s, job_spec("big", "small").replicas(2).instance_type(kType).whole_nodes(), 0).ok());
  const AdmissionAttempt within = try_admit(s, s.room, s.usage, *s.find_job("big"), AdmitOptions{.mode = BorrowMode::kWithinNominalOnly});
  EXPECT_FALSE(within.ok());
  EXPECT_EQ(within.refusal(), Refusal::kQuota) << within.why.text.str();
  EXPECT_FALSE(within.borrowing());
  const AdmissionAttempt fits = attempt(job("one", 1), s.room);
  ASSERT_TRUE(fits.ok()) << fits.why.text.str();
  EXPECT_EQ(fits.refusal(), std::nullopt);
  EXPECT_FALSE(fits.never());
}

// Every refusal has its own name, and whether nothing can ever help follows from the kind: waiting for a plan or
// a reservation always, the others only when the reason says the job can never fit.
TEST(AdmissionOutcome, EveryRefusalIsNamedAndSaysWhetherItIsFinal) {
  std::set<std::string> names;
  for (int i = 0; i < kRefusalCount; ++i) {
    const Refusal r = static_cast<Refusal>(i);
    const std::string name = refusal_name(r);
    EXPECT_NE(name, "?") << i;
    EXPECT_TRUE(names.insert(name).second) << name << " named twice";
    for (bool feasible : {true, false}) {
      AdmissionAttempt a;
      a.outcome = r;
      a.why = explain(ReasonCode::kCapacity, "x", feasible);
      const bool final_whatever_reason = r == Refusal::kPlan || r == Refusal::kReservation;
      EXPECT_EQ(a.never(), final_whatever_reason || !feasible) << name << " feasible=" << feasible;
      EXPECT_FALSE(a.ok()) << name;
      EXPECT_EQ(a.refusal(), r) << name;
    }
  }
  EXPECT_EQ(std::string(refusal_name(static_cast<Refusal>(kRefusalCount))), "?") << "kRefusalCount is the last";
  AdmissionAttempt admitted;
  admitted.outcome = Admitted{.borrowing = true};
  EXPECT_TRUE(admitted.ok());
  EXPECT_TRUE(admitted.borrowing());
  EXPECT_FALSE(admitted.never());
}

TEST_F(PlacementTest, PreferredFallsBackToTheFewestDomains) {
  domain("nn-a", "a", 2);
  domain("nn-b", "b", 2);
  domain("nn-c", "c", 1);
  // 3 replicas: no layer-3 domain holds them, so the layer-2 domain is split over the fewest layer-3
  // domains: the roomiest first (nn-a), then the tightest that finishes the job (nn-c, not half of nn-b).
  auto p = place(job("three", 3, preferred(kL3)), s.room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  EXPECT_EQ(domains(p).size(), 2u);
  EXPECT_EQ(nodes(p), (std::set<std::string>{"a-1", "a-2", "c-1"}));
}

TEST_F(PlacementTest, PackingWithoutARequestKeepsWholeDomainsFree) {
  domain("nn-a", "a", 4);
  domain("nn-b", "b", 4);
  RoomTable room = s.room;
  for (const char* n : {"b-1", "b-2", "b-3"}) occupy(room, n);
  // The leaf-switch rule: a one-node job goes where it fits tightest (b-4), so nn-a stays free for a
  // 4-node job.
  auto p = place(job("one", 1), room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  EXPECT_EQ(nodes(p), (std::set<std::string>{"b-4"}));
}

TEST_F(PlacementTest, SlicesStayInsideOneDomainEach) {
  domain("nn-a", "a", 3);
  domain("nn-b", "b", 3);
  // 4 replicas in slices of 2 at layer 3: each domain holds one slice (3 nodes make one slice of 2), so the
  // job takes 2 + 2, never 3 + 1.
  auto p = place(job("sliced", 4, sliced(kL3, 2)), s.room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  std::map<std::string, int> per_domain;
  for (NodeId n : p.placement.nodes()) ++per_domain[domain_of(s.nodes[n.index()].name)];
  EXPECT_EQ(per_domain, (std::map<std::string, int>{{"nn-a", 2}, {"nn-b", 2}}));
}

TEST_F(PlacementTest, ExclusiveSkipsDomainsWithOtherJobsAndHoldsItsOwn) {
  domain("nn-a", "a", 3);
  domain("nn-b", "b", 3);
  RoomTable room = s.room;
  occupy(room, "a-1");
  // nn-a has room for 2 but holds another job's replica: an exclusive job must use nn-b.
  const Job& excl = job("excl", 2, required(kL3, kL3));
  auto p = place(excl, room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  EXPECT_EQ(domains(p), (std::set<std::string>{"nn-b"}));
  // Once admitted, the rest of nn-b is closed to other jobs.
  ASSERT_TRUE(admit_job(s, excl.id, p.placement, false, 0, "test").ok());
  const Job& other = job("other", 1);
  RoomTable after = s.room;
  occupy(after, "a-1");
  auto q = place(other, after);
  ASSERT_TRUE(q.ok) << q.why.text.str();
  EXPECT_EQ(domains(q), (std::set<std::string>{"nn-a"})) << "b-3 is free but belongs to the exclusive job's domain";
}

TEST_F(PlacementTest, UnlabelledNodesPackByBestFitOnTheNode) {
  // No labels: placement works on nodes alone. Two 2-GPU replicas on g5.12xlarge (4 GPUs) nodes where one
  // node has 2 GPUs free and one has 4: both replicas fit the emptier node, but best fit puts the first on
  // the tighter node and keeps whole nodes whole where it can.
  ClusterState c;
  TeamSpec t;
  t.name = "ml";
  AmountSpec a;
  a.instances = 2;
  t.allocation = {{"ml.g5.12xlarge", a}};
  ASSERT_TRUE(upsert_team(c, t).ok());
  ASSERT_TRUE(add_node(c, NodeSpec{"n-1", "ml.g5.12xlarge", "", {}}, 0).ok());
  ASSERT_TRUE(add_node(c, NodeSpec{"n-2", "ml.g5.12xlarge", "", {}}, 0).ok());
  ASSERT_TRUE(submit_job(c, job_spec("two", "ml").accelerators(2), 0).ok());
  RoomTable room = c.room;
  NodeRoom& n1 = room[c.find_node("n-1")->id.index()];
  n1.accelerators_free = 0b1100;  // two GPUs taken
  n1.free.accelerators = 2;
  n1.replicas = 1;
  auto p = place_job(c, room, *c.find_job("two"), *c.catalog.find("ml.g5.12xlarge"));
  ASSERT_TRUE(p.ok) << p.why.text.str();
  ASSERT_EQ(p.placement.pod_sets[0].replicas.size(), 1u);
  EXPECT_EQ(c.nodes[p.placement.pod_sets[0].replicas[0].node.index()].name, "n-1");
  EXPECT_EQ(p.placement.pod_sets[0].replicas[0].accelerators, (std::vector<int>{2, 3}));
}


// Placement on a cluster of 4-GPU ml.g5.12xlarge hosts, each under its own layer-3 domain when `own_domains`,
// else all under one, with per-replica GPU requests: the cases where a host holds more than one replica.
class GpuPlacementTest : public ::testing::Test {
 protected:
  static constexpr const char* kGpuType = "ml.g5.12xlarge";
  void host(const std::string& name, const std::string& l3) {
    ASSERT_TRUE(add_node(s, NodeSpec{name, kGpuType, "",
                                     {{"network-node-layer-1", "nn-1"}, {"network-node-layer-2", "nn-2"}, {kL3, l3}}},
                         0)
                    .ok());
  }
  void SetUp() override {
    TeamSpec t;
    t.name = "ml";
    AmountSpec a;
    a.instances = 16;
    t.allocation = {{kGpuType, a}};
    ASSERT_TRUE(upsert_team(s, t).ok());
  }
  const Job& job(const std::string& name, int replicas, int gpus, TopologySpec topo = {}) {
    const JobSpec j = job_spec(name, "ml").replicas(replicas).instance_type(kGpuType).accelerators(gpus).topology(std::move(topo));
    auto id = submit_job(s, j, 0);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    return *s.find_job(name);
  }
  // Takes `gpus` accelerators of a host, as another job's replica would.
  void use(RoomTable& room, const std::string& node, int gpus) {
    NodeRoom& r = room[s.find_node(node)->id.index()];
    r.free.accelerators -= gpus;
    r.accelerators_free >>= gpus;
    r.accelerators_free &= (uint64_t{1} << r.free.accelerators) - 1;
    ++r.replicas;
  }
  PlacementOutcome place(const Job& j, const RoomTable& room) { return place_job(s, room, j, *s.catalog.find(kGpuType)); }
  // Replicas per node.
  std::map<std::string, int> spread(const PlacementOutcome& p) {
    std::map<std::string, int> out;
    for (const auto& r : p.placement.pod_sets[0].replicas) ++out[s.nodes[r.node.index()].name];
    return out;
  }
  ClusterState s;
};

TEST_F(GpuPlacementTest, HostLevelSlicesPlaceEveryReplica) {
  // Slices at the lowest level: the pick at that level is in slices and must come back as replicas, both when
  // placement starts at the slice level (a request at hostname) and when it descends into it.
  for (const char* h : {"h-1", "h-2", "h-3", "h-4"}) host(h, "nn-3a");
  TopologySpec at_host = sliced("hostname", 2);
  auto p = place(job("sliced", 4, 2, at_host), s.room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  EXPECT_EQ(spread(p), (std::map<std::string, int>{{"h-1", 2}, {"h-2", 2}}));
  TopologySpec in_l3 = sliced("hostname", 2);
  in_l3.required = kL3;
  auto q = place(job("sliced-l3", 6, 2, in_l3), s.room);
  ASSERT_TRUE(q.ok) << q.why.text.str();
  EXPECT_EQ(spread(q), (std::map<std::string, int>{{"h-1", 2}, {"h-2", 2}, {"h-3", 2}}));
}

TEST_F(GpuPlacementTest, EqualSlicesPreferFewerReplicasOfRoomInBothOrders) {
  // Each host is its own layer-3 domain and holds one slice of 2 one-GPU replicas; x1 has 3 GPUs free, the
  // others 2. Three slices: "most free first" takes the tighter of equals first (x3, x5), best fit ends on the
  // tightest remaining (x7), and x1, with a GPU more to give, is left.
  host("x1", "nn-3-x1");
  host("x3", "nn-3-x3");
  host("x5", "nn-3-x5");
  host("x7", "nn-3-x7");
  RoomTable room = s.room;
  use(room, "x1", 1);
  for (const char* h : {"x3", "x5", "x7"}) use(room, h, 2);
  auto p = place(job("sliced", 6, 1, sliced(kL3, 2)), room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  EXPECT_EQ(spread(p), (std::map<std::string, int>{{"x3", 2}, {"x5", 2}, {"x7", 2}}));
  // One slice: best fit alone, the same tie-break.
  auto q = place(job("one-slice", 2, 1, sliced(kL3, 2)), room);
  ASSERT_TRUE(q.ok) << q.why.text.str();
  EXPECT_EQ(spread(q), (std::map<std::string, int>{{"x3", 2}}));
}

TEST_F(GpuPlacementTest, OneHostJobTakesTheTightestHostAndTheLeafOnlyBreaksTies) {
  host("b-1", "nn-3b");
  host("b-2", "nn-3b");
  host("b-3", "nn-3b");
  host("z-1", "nn-3z");
  RoomTable room = s.room;
  use(room, "b-1", 2);
  // nn-3z (4 GPUs free) is tighter than nn-3b (10), but b-1 (2 free) is the tightest host.
  auto p = place(job("one", 1, 1), room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  EXPECT_EQ(spread(p), (std::map<std::string, int>{{"b-1", 1}}));
  // Three GPUs: b-2, b-3 and z-1 are equal hosts; z-1's leaf has the least room, so it wins over the names.
  auto q = place(job("three", 1, 3), room);
  ASSERT_TRUE(q.ok) << q.why.text.str();
  EXPECT_EQ(spread(q), (std::map<std::string, int>{{"z-1", 1}}));
  // Two replicas of 2 GPUs fit on one host: still one host, the first of the equal ones.
  use(room, "z-1", 2);
  auto r = place(job("pair", 2, 2), room);
  ASSERT_TRUE(r.ok) << r.why.text.str();
  EXPECT_EQ(spread(r), (std::map<std::string, int>{{"b-2", 2}}));
}

TEST_F(GpuPlacementTest, ManyDomainsKeepTheOrderPastTheScannedPicks) {
  // Eleven hosts, each its own layer-3 domain, with 4,4,3,3,3,2,2,2,2,1,1 GPUs free. No domain holds the job,
  // so it is split over the fewest: roomiest first (equals by name), the last by best fit. The first eight
  // picks are found by scanning (pick_fewest's kScanSteps); what follows walks the rest sorted, and must keep
  // the same order: the 9th and 10th picks below come from there.
  const std::vector<std::pair<std::string, int>> free = {{"h01", 4}, {"h02", 4}, {"h03", 3}, {"h04", 3},
                                                         {"h05", 3}, {"h06", 2}, {"h07", 2}, {"h08", 2},
                                                         {"h09", 2}, {"h10", 1}, {"h11", 1}};
  for (const auto& [h, gpus] : free) host(h, "nn-3-" + h);
  RoomTable room = s.room;
  for (const auto& [h, gpus] : free) use(room, h, 4 - gpus);
  const std::map<std::string, int> first_eight = {{"h01", 4}, {"h02", 4}, {"h03", 3}, {"h04", 3},
                                                  {"h05", 3}, {"h06", 2}, {"h07", 2}, {"h08", 2}};
  // 24 replicas: 23 in the first eight picks, then the tightest host that holds the last one (h10, not h09).
  auto p = place(job("ninth", 24, 1, preferred(kL3)), room);
  ASSERT_TRUE(p.ok) << p.why.text.str();
  auto want = first_eight;
  want["h10"] = 1;
  EXPECT_EQ(spread(p), want);
  // 26: after the eight, nothing holds the 3 left, so the roomiest (h09) and then the tightest for the last one.
  auto q = place(job("tenth", 26, 1, preferred(kL3)), room);
  ASSERT_TRUE(q.ok) << q.why.text.str();
  want["h09"] = 2;
  EXPECT_EQ(spread(q), want);
  // 28 fits nowhere: every GPU free is 27.
  auto r = place(job("too-many", 28, 1, preferred(kL3)), room);
  EXPECT_FALSE(r.ok);
}

}  // namespace
}  // namespace allot::placement_test
