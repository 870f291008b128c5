// The per-node index of Running jobs that heartbeats read (server/lifecycle/running_index.h).
#include "server/lifecycle/running_index.h"

#include <gtest/gtest.h>

namespace allot::server::running_index_test {
namespace {

Job job(uint32_t index, JobState state, std::vector<uint32_t> nodes) {
  Job j;
  j.id = JobId{index};
  j.state = state;
  PodSetPlacement ps;
  for (uint32_t n : nodes) ps.replicas.push_back(ReplicaBinding{NodeId{n}, {}, {}, ""});
  j.placement.pod_sets.push_back(ps);
  return j;
}

std::set<uint32_t> on(const RunningIndex& ix, uint32_t node) {
  const auto* s = ix.on(NodeId{node});
  return s ? *s : std::set<uint32_t>{};
}

TEST(RunningIndex, ListsARunningJobUnderEachOfItsNodesOnce) {
  RunningIndex ix;
  ix.update(job(7, JobState::kRunning, {1, 2, 2}));
  ix.update(job(3, JobState::kRunning, {2}));
  EXPECT_EQ(on(ix, 1), (std::set<uint32_t>{7}));
  EXPECT_EQ(on(ix, 2), (std::set<uint32_t>{3, 7}));
  EXPECT_EQ(ix.on(NodeId{5}), nullptr);
}

TEST(RunningIndex, DropsAJobThatStopsRunningEvenWhenItsPlacementIsAlreadyGone) {
  RunningIndex ix;
  ix.update(job(7, JobState::kRunning, {1, 2}));
  ix.update(job(7, JobState::kPending, {}));  // preempted: the placement is cleared with the state
  EXPECT_EQ(ix.on(NodeId{1}), nullptr);
  EXPECT_EQ(ix.on(NodeId{2}), nullptr);
}

TEST(RunningIndex, FollowsANewPlacement) {
  RunningIndex ix;
  ix.update(job(7, JobState::kRunning, {1}));
  ix.update(job(7, JobState::kRunning, {4}));  // admitted again elsewhere
  EXPECT_EQ(ix.on(NodeId{1}), nullptr);
  EXPECT_EQ(on(ix, 4), (std::set<uint32_t>{7}));
}

}  // namespace
}  // namespace allot::server::running_index_test
