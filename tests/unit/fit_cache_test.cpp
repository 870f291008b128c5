// The answers a caller keeps between scheduler passes (core/placement/fit_cache.h): they follow the cluster as nodes join and
// change health, they change no decision, and admission on a ClusterState shared read-only between threads writes
// nothing (scripts/tsan.sh runs these tests under ThreadSanitizer).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/admission/admission.h"
#include "core/placement/fit_cache.h"
#include "core/placement/placement.h"
#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::fit_cache_test {
namespace {

using allot::test::job_spec;

constexpr const char* kL3 = "network-node-layer-3";
constexpr const char* kType = "ml.g5.8xlarge";

class FitCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TeamSpec t;
    t.name = "ml";
    AmountSpec a;
    a.instances = 64;
    t.allocation = {{kType, a}};
    ASSERT_TRUE(upsert_team(s, t).ok());
    for (int i = 1; i <= 2; ++i) node("a-" + std::to_string(i));
  }
  void node(const std::string& name) {
    ASSERT_TRUE(add_node(s, NodeSpec{name, kType, "", {{kL3, "nn-a"}}}, 0).ok());
  }
  // A gang of `replicas` whole nodes that must share one layer-3 domain.
  const Job& gang(const std::string& name, int replicas) {
    TopologySpec topo;
    topo.required = kL3;
    auto id = submit_job(s, job_spec(name, "ml").replicas(replicas).instance_type(kType).whole_nodes().topology(topo), 0);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    return *s.find_job(name);
  }
  TypeId type() const { return *s.catalog.find(kType); }

  ClusterState s{Catalog::builtin()};
};

TEST_F(FitCacheTest, NeverFitsFollowsTheClusterAsNodesJoin) {
  const Job& three = gang("three", 3);
  FitCache cache;
  Explanation why;
  EXPECT_TRUE(cache.never_fits(s, three, type(), pristine_room(s), why)) << "two nodes in the domain, three needed";
  EXPECT_EQ(why.code, ReasonCode::kNeverFits);
  // Asked again on the same cluster: the same answer (from the cache).
  Explanation again;
  EXPECT_TRUE(cache.never_fits(s, three, type(), pristine_room(s), again));
  EXPECT_EQ(again.text.str(), why.text.str());
  // A third node joins the domain: the remembered answer no longer holds.
  node("a-3");
  Explanation now;
  EXPECT_FALSE(cache.never_fits(s, *s.find_job("three"), type(), pristine_room(s), now)) << now.text.str();
}

TEST_F(FitCacheTest, WaitsForNodesFollowsTheNodesHealth) {
  const Job& two = gang("two", 2);
  FitCache cache;
  EXPECT_FALSE(cache.waits_for_nodes(s, two, type())) << "every node is schedulable";
  ASSERT_TRUE(set_node_health(s, "a-2", NodeHealth::kUnschedulablePendingReboot, 10).ok());
  EXPECT_TRUE(cache.waits_for_nodes(s, *s.find_job("two"), type())) << "one schedulable node left, two needed";
  ASSERT_TRUE(set_node_health(s, "a-2", NodeHealth::kSchedulable, 20).ok());
  EXPECT_FALSE(cache.waits_for_nodes(s, *s.find_job("two"), type()));
}

TEST_F(FitCacheTest, APassDecidesTheSameWithTheCallersCacheAsWithItsOwn) {
  gang("three", 3);
  gang("two", 2);
  ClusterState copy = s;
  FitCache kept;
  std::set<ReasonCode> seen;  // the answers the cache gives were asked for
  for (Time now : {Time{0}, Time{10}, Time{20}}) {
    if (now == 10) {
      // Between passes the cluster changes: a node fails, then one joins.
      ASSERT_TRUE(set_node_health(s, "a-1", NodeHealth::kUnschedulablePendingReboot, now).ok());
      ASSERT_TRUE(set_node_health(copy, "a-1", NodeHealth::kUnschedulablePendingReboot, now).ok());
    }
    if (now == 20) {
      node("a-3");
      ASSERT_TRUE(add_node(copy, NodeSpec{"a-3", kType, "", {{kL3, "nn-a"}}}, 0).ok());
    }
    ScheduleResult with = schedule(s, now, ScheduleOptions{.fit_cache = &kept});
    ScheduleResult without = schedule(copy, now);
    ASSERT_EQ(with.decisions.size(), without.decisions.size()) << "at " << now;
    ASSERT_EQ(with.waiting.size(), without.waiting.size()) << "at " << now;
    for (size_t i = 0; i < with.waiting.size(); ++i) {
      EXPECT_EQ(with.waiting[i].code, without.waiting[i].code) << "at " << now;
      seen.insert(with.waiting[i].code);
      EXPECT_EQ(std::string(with.waiting[i].text), std::string(without.waiting[i].text)) << "at " << now;
    }
  }
  EXPECT_TRUE(seen.count(ReasonCode::kNeverFits)) << "three never fits two nodes";
  EXPECT_TRUE(seen.count(ReasonCode::kUnhealthyNodes)) << "three waits for a-1 once a-3 joins";
}

TEST_F(FitCacheTest, AdmissionOnAStateSharedBetweenThreadsWritesNothingToIt) {
  gang("three", 3);
  gang("two", 2);
  const ClusterState& shared = s;
  const RoomTable pristine = pristine_room(shared);
  // Each reader its own cache; the state is only read. Under ThreadSanitizer a write to it would be a race.
  std::vector<std::thread> readers;
  std::vector<std::string> answers(4);
  for (size_t r = 0; r < answers.size(); ++r)
    readers.emplace_back([&, r] {
      FitCache mine;
      for (int i = 0; i < 50; ++i) {
        const AdmissionAttempt a =
            try_admit(shared, shared.room, shared.usage, *shared.find_job("three"), AdmitOptions{.pristine = &pristine, .fit_cache = &mine});
        answers[r] = a.ok() ? "admitted" : a.why.text.str();
      }
    });
  for (auto& t : readers) t.join();
  for (const std::string& a : answers) EXPECT_EQ(a.rfind("never fits", 0), 0u) << a;
}

}  // namespace
}  // namespace allot::fit_cache_test
