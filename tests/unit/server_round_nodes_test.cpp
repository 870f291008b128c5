// The nodes the writer's per-batch rounds look at (server/lifecycle/round_nodes.h): every node a round may act on,
// in the table's order, with a walk over all nodes only when a change was noted, the table changed, or time may
// have made a quiet node silent. The servers of every other server test check the same on live writers
// (ServerOptions::verify_round_nodes).
#include "server/lifecycle/round_nodes.h"

#include <gtest/gtest.h>

#include <random>

#include "server/lifecycle/node_silence.h"

namespace allot::server::test::server_round_nodes_test {
namespace {

constexpr int64_t kTimeout = 10'000;  // the heartbeat timeout; a missed heartbeat (interval 1 s) is 2,200 ms

NodeInfo agent_heard_at(int64_t ms) {
  NodeInfo info;
  info.agent = true;
  info.cause = store::HealthCause::kAgent;
  info.last_heartbeat_ms = ms;
  return info;
}

std::vector<std::string> names(const std::vector<RoundNodes::Entry>& due) {
  std::vector<std::string> out;
  for (const auto& e : due) out.push_back(*e.first);
  return out;
}

// What a walk over the whole table would give: the nodes a round may act on, in the table's order.
std::vector<std::string> every_node_acted_on(const ServerState& st, int64_t now_ms) {
  std::vector<std::string> out;
  for (const auto& [name, info] : st.nodes)
    if (round_may_act_on(info, silent_for(st, info, now_ms), kTimeout)) out.push_back(name);
  return out;
}

TEST(RoundNodes, OnlyTheNodesARoundMayActOnInTheTablesOrder) {
  ServerState st;
  for (int i = 0; i < 8; ++i) st.nodes["n" + std::to_string(i)] = agent_heard_at(1'000);
  st.nodes["n2"].suspect = true;
  st.nodes["n5"].fault_since_ms = 900;
  st.nodes["n6"].cause = store::HealthCause::kDeepCheck;  // a phase that times out
  st.nodes["n7"].agent = false;                           // an administrator's node: no heartbeats expected
  st.nodes["n7"].last_heartbeat_ms = 0;
  RoundNodes rounds;
  EXPECT_EQ(names(rounds.due(st, 2'000, kTimeout)), every_node_acted_on(st, 2'000));
  EXPECT_EQ(names(rounds.due(st, 2'000, kTimeout)).size(), 3u);
  EXPECT_FALSE(st.round_nodes_changed);  // taken by the walk
  EXPECT_EQ(rounds.walks(), 1u);
}

TEST(RoundNodes, NoWalkUntilAQuietNodeCouldMissAHeartbeat) {
  ServerState st;
  st.nodes["early"] = agent_heard_at(1'000);
  st.nodes["late"] = agent_heard_at(1'500);
  RoundNodes rounds;
  EXPECT_TRUE(rounds.due(st, 1'500, kTimeout).empty());
  EXPECT_EQ(rounds.walks(), 1u);
  // "early" misses a heartbeat once silent for more than 2,200 ms: at 3,201 ms, not before.
  EXPECT_TRUE(rounds.due(st, 3'200, kTimeout).empty());
  EXPECT_EQ(rounds.walks(), 1u);
  EXPECT_EQ(names(rounds.due(st, 3'201, kTimeout)), std::vector<std::string>{"early"});
  EXPECT_EQ(rounds.walks(), 2u);
}

TEST(RoundNodes, HeartbeatsNeedNoWalk) {
  ServerState st;
  st.nodes["a"] = agent_heard_at(1'000);
  RoundNodes rounds;
  EXPECT_TRUE(rounds.due(st, 1'000, kTimeout).empty());
  // Heard again and again (the writer folds the times in): it never goes silent, and the walk comes only when the
  // time first noted could have run out, then is put off again.
  for (int64_t t = 1'100; t <= 3'200; t += 100) {
    st.nodes["a"].last_heartbeat_ms = t;
    EXPECT_TRUE(rounds.due(st, t, kTimeout).empty());
  }
  EXPECT_EQ(rounds.walks(), 1u);
  st.nodes["a"].last_heartbeat_ms = 3'201;
  EXPECT_TRUE(rounds.due(st, 3'201, kTimeout).empty());
  EXPECT_EQ(rounds.walks(), 2u);
  EXPECT_TRUE(rounds.due(st, 5'401, kTimeout).empty());
  EXPECT_EQ(rounds.walks(), 2u);
}

TEST(RoundNodes, ATimeoutShorterThanAMissedHeartbeatSetsTheWalk) {
  ServerState st;
  st.nodes["a"] = agent_heard_at(0);
  st.nodes["a"].heartbeat_interval_ms = 5'000;  // a missed heartbeat: 10,200 ms
  RoundNodes rounds;
  EXPECT_TRUE(rounds.due(st, 0, 3'000).empty());
  EXPECT_TRUE(rounds.due(st, 3'000, 3'000).empty());
  EXPECT_EQ(names(rounds.due(st, 3'001, 3'000)), std::vector<std::string>{"a"});
}

TEST(RoundNodes, ANotedChangeATableChangeOrAClockBackWalksAgain) {
  ServerState st;
  st.nodes["a"] = agent_heard_at(1'000);
  RoundNodes rounds;
  EXPECT_TRUE(rounds.due(st, 1'000, kTimeout).empty());
  st.nodes["a"].suspect = true;  // as set_suspect does, which notes the change
  EXPECT_TRUE(rounds.due(st, 1'001, kTimeout).empty()) << "not noted: no walk";
  st.round_nodes_changed = true;
  EXPECT_EQ(names(rounds.due(st, 1'001, kTimeout)), std::vector<std::string>{"a"});
  EXPECT_EQ(rounds.walks(), 2u);
  st.nodes["b"] = agent_heard_at(1'000);  // a node more in the table (suspect, so that a round acts on it)
  st.nodes["b"].suspect = true;
  EXPECT_EQ(rounds.due(st, 1'002, kTimeout).size(), 2u);
  EXPECT_EQ(rounds.walks(), 3u);
  rounds.due(st, 500, kTimeout);  // the clock went back
  EXPECT_EQ(rounds.walks(), 4u);
}

TEST(RoundNodes, TheServersStallPutsTheWalkOffButNeverMissesANode) {
  ServerState st;
  st.nodes["a"] = agent_heard_at(1'000);
  RoundNodes rounds;
  EXPECT_TRUE(rounds.due(st, 1'000, kTimeout).empty());
  st.hearing_since_ms = 5'000;  // the server could not hear until 5 s: every silence counts from there
  EXPECT_TRUE(rounds.due(st, 3'201, kTimeout).empty());  // walked: the earlier time had come
  EXPECT_EQ(rounds.walks(), 2u);
  EXPECT_TRUE(rounds.due(st, 7'200, kTimeout).empty());
  EXPECT_EQ(names(rounds.due(st, 7'201, kTimeout)), std::vector<std::string>{"a"});
}

// Random tables, heartbeats, clock steps, stalls and noted changes: every node a walk over the whole table finds,
// the rounds' nodes hold too, in the same order; and most steps walk nothing.
TEST(RoundNodes, NeverMissesANodeAWholeWalkWouldFind) {
  std::mt19937 rng(20261202);
  for (int trial = 0; trial < 50; ++trial) {
    ServerState st;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      st.nodes["n" + std::to_string(i)] = agent_heard_at(0);
      st.nodes["n" + std::to_string(i)].heartbeat_interval_ms = 200 + static_cast<int64_t>(rng() % 2000);
    }
    RoundNodes rounds;
    int64_t now = 0;
    for (int step = 0; step < 400; ++step) {
      now += static_cast<int64_t>(rng() % 400);
      auto& [name, info] = *std::next(st.nodes.begin(), static_cast<long>(rng() % st.nodes.size()));
      switch (rng() % 10) {
        case 0: info.suspect = !info.suspect; st.round_nodes_changed = true; break;  // as set_suspect
        case 1: info.fault_since_ms = info.fault_since_ms ? 0 : now; st.round_nodes_changed = true; break;
        case 2: st.hearing_since_ms = std::max(st.hearing_since_ms, now); break;      // a stall: quieter, no note
        case 3: info.fenced = !info.fenced; st.round_nodes_changed = true; break;
        default:
          // Most nodes are heard on time; some fall silent.
          for (auto& [_, other] : st.nodes)
            if (rng() % 4 != 0) other.last_heartbeat_ms = now;
      }
      const auto due = names(rounds.due(st, now, kTimeout));
      const auto every = every_node_acted_on(st, now);
      // `every` in order within `due` (which may hold some a round no longer acts on).
      auto it = due.begin();
      for (const auto& e : every) {
        it = std::find(it, due.end(), e);
        ASSERT_NE(it, due.end()) << "trial " << trial << " step " << step << ": " << e << " missed at " << now;
      }
    }
    EXPECT_LT(rounds.walks(), 400u);
  }
}

}  // namespace
}  // namespace allot::server::test::server_round_nodes_test
