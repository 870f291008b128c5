// The server's goodput of an elastic job across a resize (server_state.cpp, JobAccount): the run at the old size
// ends at the resize, with its slot-seconds held and its work since the last checkpoint lost, and the new run
// counts at the new size; the live path (the writer's note_decision) and a replay of the journal agree.
#include <gtest/gtest.h>

#include "core/pass/scheduler.h"
#include "server/writer/server_state.h"
#include "server/views/views.h"
#include "store/replay.h"

#include "server_journal_fixture.h"
#include "spec_builders.h"

namespace allot::server::server_resize_goodput_test {
namespace {

constexpr const char* kType = "ml.g5.8xlarge";  // one accelerator per node

using allot::test::job_spec;
using allot::test::JobBuilder;
// Every job here takes whole nodes of kType for team-a, checkpointed every 30 s.
JobBuilder whole_node_job(const std::string& name) {
  return job_spec(name, "team-a").whole_nodes().instance_type(kType).checkpoint_interval_s(30);
}

using ResizeGoodput = test::JournalTest;

TEST_F(ResizeGoodput, TheRunBeforeAResizeIsHeldAndItsUncheckpointedWorkLost) {
  PolicySpec policy;
  policy.elastic_grow_delay_s = 50;
  put(0, store::SetPolicy{policy});
  TeamSpec team;
  team.name = "team-a";
  AmountSpec three;
  three.instances = 3;
  team.allocation = {{kType, three}};
  team.strategy = SharingStrategy::kDontLend;
  put(0, store::UpsertTeam{team});
  for (int n = 1; n <= 3; ++n) put(0, store::AddNode{NodeSpec{"gpu-" + std::to_string(n), kType, "", {}}, "", false});
  put(0, store::Submit{whole_node_job("hold")});
  put(0, store::Submit{whole_node_job("elastic").replicas(3).min_replicas(1)});
  pass(0);
  const Job* j = st_.cluster.find_job("elastic");
  ASSERT_EQ(j->size(), 2);
  put(100, store::Finish{"hold", true, ""});
  pass(160);  // the freed node has been idle for the 50 s delay: the job grows to 3
  ASSERT_EQ(j->size(), 3);
  ASSERT_EQ(j->resizes.size(), 1u);

  // Until the resize: 160 s at 2 slots held, of which 10 s since the checkpoint at 150 s lost on both replicas;
  // then 40 s at 3 slots.
  int64_t held = 0, lost = 0;
  job_goodput(st_, *j, 200, &held, &lost);
  EXPECT_EQ(held, 160 * 2 + 40 * 3);
  EXPECT_EQ(lost, 10 * 2);

  // The journal replayed gives the same figures.
  ServerState replayed;
  std::vector<Event> events;
  for (const store::Record& r : records_) ASSERT_TRUE(apply(replayed, r, events).ok()) << store::op_name(r.op);
  int64_t held2 = 0, lost2 = 0;
  job_goodput(replayed, *replayed.cluster.find_job("elastic"), 200, &held2, &lost2);
  EXPECT_EQ(held2, held);
  EXPECT_EQ(lost2, lost);
}

}  // namespace
}  // namespace allot::server::server_resize_goodput_test
