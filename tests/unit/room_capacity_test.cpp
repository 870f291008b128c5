// Unit tests of RoomCapacity (core/placement/room_capacity.h), the capacity cache a scheduler pass keeps of its live room:
// after random changes to the room, each told to the cache as a pass tells it, every answer must equal the
// from-scratch computation. A change the cache missed, or applied wrongly, shows as a difference here.
#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <tuple>

#include "core/placement/placement.h"
#include "core/placement/room_capacity.h"

#include "spec_builders.h"

namespace allot::room_capacity_test {
namespace {

using allot::test::job_spec;

constexpr const char* kBig = "ml.p5.48xlarge";   // 8 accelerators
constexpr const char* kSmall = "ml.g5.12xlarge";  // 4 accelerators

struct Shape {
  TypeId type;
  Resources req;
  bool whole = false;
};

class RoomCapacityTest : public ::testing::Test {
 protected:
  // Leaf domains of different sizes (1 to 9 hosts) under two layer-2 domains, both instance types mixed, and
  // with `labelled` false no labels at all (every host its own group in the host index).
  void build(bool labelled) {
    int n = 0;
    for (int leaf = 0; leaf < 12; ++leaf) {
      for (int i = 0; i <= leaf % 9; ++i, ++n) {
        NodeSpec spec{"node-" + std::to_string(n), n % 3 == 0 ? kSmall : kBig, "", {}};
        if (labelled)
          spec.labels = {{"network-node-layer-1", "nn1"},
                         {"network-node-layer-2", "nn2-" + std::to_string(leaf % 2)},
                         {"network-node-layer-3", "nn3-" + std::to_string(leaf)}};
        ASSERT_TRUE(add_node(s, spec, 0).ok());
      }
    }
    room = pristine_room(s);
    const TypeId big = *s.catalog.find(kBig), small = *s.catalog.find(kSmall);
    auto gpus = [&](TypeId t, int64_t k) {
      const Resources c = s.catalog.at(t).capacity();
      return Resources{k, c.vcpu_milli / c.accelerators * k, c.memory_mib / c.accelerators * k};
    };
    shapes = {{big, gpus(big, 1)},   {big, gpus(big, 2)},   {big, gpus(big, 8)},  {big, gpus(big, 0), true},
              {small, gpus(small, 1)}, {small, gpus(small, 3)},
              // CPU only, 100 replicas on an empty node: too many room values for the index, so it scans.
              {big, Resources{0, 1000, 1024}}};
  }

  // A random change to one node: some of its room taken or given back, its health, an exclusive holder.
  void change(std::mt19937_64& rng, size_t n) {
    NodeRoom& r = room[n];
    const Resources cap = s.catalog.at(r.type).capacity();
    switch (rng() % 6) {
      case 0:  // everything given back
        r.free = cap;
        r.replicas = 0;
        break;
      case 1:
      case 2: {  // a replica of some accelerators takes its share of CPUs and memory
        const int64_t k = static_cast<int64_t>(rng() % (cap.accelerators + 1));
        r.free = max0(r.free - Resources{k, cap.vcpu_milli / cap.accelerators * k, cap.memory_mib / cap.accelerators * k});
        ++r.replicas;
        break;
      }
      case 3:  // CPUs only
        r.free.vcpu_milli = static_cast<int64_t>(rng() % static_cast<uint64_t>(cap.vcpu_milli + 1));
        ++r.replicas;
        break;
      case 4:
        r.usable = !r.usable;
        break;
      case 5:
        // Held by a running job: never one the tests place, which wait and so hold nothing.
        r.exclusive_owner = r.exclusive_owner.valid() ? JobId{} : JobId(static_cast<uint32_t>(1000 + rng() % 5));
        break;
    }
  }

  std::vector<int64_t> from_scratch(const Shape& sh) const {
    const TopologyTree& t = s.tree;
    std::vector<int64_t> out(t.domains.size(), 0);
    for (size_t n = 0; n < room.size(); ++n) {
      if (room[n].type != sh.type) continue;
      const int64_t fit = node_fit(room[n], sh.req, sh.whole, JobId{});
      for (int d = t.leaf_of_node[n]; d >= 0; d = t.parent[d]) out[d] += fit;
    }
    return out;
  }

  // Every host, by name, for the least (room, room of its leaf domain, domain index) that holds `need`.
  int tightest_by_scan(const std::vector<int64_t>& rep, int64_t need) const {
    const TopologyTree& t = s.tree;
    const std::vector<int>& hosts = t.by_level[t.levels - 1];
    int best = -1;
    std::tuple<int64_t, int64_t, int> best_key{INT64_MAX, INT64_MAX, INT_MAX};
    for (size_t i = 0; i < hosts.size(); ++i) {
      if (rep[hosts[i]] < need) continue;
      const int leaf = t.leaf_domain_of_host[i];
      const std::tuple<int64_t, int64_t, int> k{rep[hosts[i]], leaf < 0 ? 0 : rep[leaf], hosts[i]};
      if (k < best_key) best_key = k, best = hosts[i];
    }
    return best;
  }

  // Random changes, told node by node (sometimes many at once, sometimes as "anything changed"); after each
  // round a random subset of the shapes is asked, so entries replay logs of different lengths.
  void run(uint64_t seed, int rounds) {
    std::mt19937_64 rng(seed);
    RoomCapacity cache;
    cache.track(s, &room);
    int checked = 0;
    for (int round = 0; round < rounds; ++round) {
      const uint64_t kind = rng() % 20;
      const size_t changes = kind == 0 ? room.size() / 4 : 1 + rng() % 3;  // the first: more than a replay is worth
      for (size_t c = 0; c < changes; ++c) {
        const size_t n = rng() % room.size();
        change(rng, n);
        if (kind != 1) cache.changed(NodeId(static_cast<uint32_t>(n)));
      }
      if (kind == 1) cache.changed_all();
      for (const Shape& sh : shapes) {
        if (rng() % 3 != 0) continue;
        const auto got = cache.replicas(sh.type, sh.req, sh.whole);
        const auto want = from_scratch(sh);
        ASSERT_EQ(std::vector<int64_t>(got.begin(), got.end()), want) << "seed " << seed << " round " << round;
        for (int64_t need = 0; need <= 4; ++need)
          ASSERT_EQ(cache.tightest_host(need), tightest_by_scan(want, need))
              << "seed " << seed << " round " << round << " need " << need;
        ++checked;
      }
    }
    EXPECT_GT(checked, rounds);  // most rounds asked something
  }

  ClusterState s;
  RoomTable room;
  std::vector<Shape> shapes;
};

TEST_F(RoomCapacityTest, MatchesFromScratchAfterRandomChangesOnALabelledTree) {
  build(true);
  for (uint64_t seed = 1; seed <= 4; ++seed) run(seed, 600);
}

TEST_F(RoomCapacityTest, MatchesFromScratchWithoutLabels) {
  build(false);
  for (uint64_t seed = 11; seed <= 12; ++seed) run(seed, 600);
}

// A change the cache is not told of is not seen: what the owner's promise to tell it is for (and what makes the
// test above able to fail).
TEST_F(RoomCapacityTest, AnUntoldChangeIsNotSeen) {
  build(true);
  RoomCapacity cache;
  cache.track(s, &room);
  const Shape sh = shapes[0];
  const auto before = cache.replicas(sh.type, sh.req, sh.whole);
  const std::vector<int64_t> kept(before.begin(), before.end());
  size_t n = 0;
  while (room[n].type != sh.type) ++n;
  room[n].usable = false;
  const auto untold = cache.replicas(sh.type, sh.req, sh.whole);
  EXPECT_EQ(std::vector<int64_t>(untold.begin(), untold.end()), kept);
  cache.changed(NodeId(static_cast<uint32_t>(n)));
  const auto told = cache.replicas(sh.type, sh.req, sh.whole);
  EXPECT_EQ(std::vector<int64_t>(told.begin(), told.end()), from_scratch(sh));
  EXPECT_NE(std::vector<int64_t>(told.begin(), told.end()), kept);
}

// Placement with the pass's cache chooses exactly what placement from scratch chooses, job shape by job shape,
// on rooms changed at random between the placements.
TEST_F(RoomCapacityTest, PlacementWithTheCacheChoosesAsWithout) {
  build(true);
  TeamSpec team;
  team.name = "ml";
  ASSERT_TRUE(upsert_team(s, team).ok());
  std::vector<const Job*> jobs;
  int k = 0;
  for (int replicas : {1, 2, 3, 5}) {
    for (int gpus : {1, 2, 4, 8}) {
      for (int topo = 0; topo < 3; ++topo) {
        auto spec = job_spec("j" + std::to_string(k++), "ml").replicas(replicas).accelerators(gpus).instance_type(kBig);
        if (topo == 1) spec.topology(TopologySpec{.required = "network-node-layer-3"});
        if (topo == 2) spec.topology(TopologySpec{.preferred = "network-node-layer-2"});
        auto id = submit_job(s, spec, 0);
        ASSERT_TRUE(id.ok()) << id.error().message;
      }
    }
  }
  for (const Job& j : s.jobs) jobs.push_back(&j);
  RoomCapacity cache;
  cache.track(s, &room);
  PlacementScratch with, without;
  with.live = &cache;
  std::mt19937_64 rng(7);
  const TypeId big = *s.catalog.find(kBig);
  int placed = 0;
  for (int round = 0; round < 400; ++round) {
    for (int c = 0; c < 2; ++c) {
      const size_t n = rng() % room.size();
      change(rng, n);
      cache.changed(NodeId(static_cast<uint32_t>(n)));
    }
    const Job& j = *jobs[rng() % jobs.size()];
    const PlacementOutcome a = place_job(s, room, j, big, &with);
    const PlacementOutcome b = place_job(s, room, j, big, &without);
    ASSERT_EQ(a.ok, b.ok) << j.spec.name << " round " << round;
    ASSERT_EQ(a.why.text.str(), b.why.text.str()) << j.spec.name << " round " << round;
    ASSERT_EQ(a.placement.nodes(), b.placement.nodes()) << j.spec.name << " round " << round;
    placed += a.ok;
  }
  EXPECT_GT(placed, 40);  // the comparison covered placements that succeed, not only refusals
}

}  // namespace
}  // namespace allot::room_capacity_test
