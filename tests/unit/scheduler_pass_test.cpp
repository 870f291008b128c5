// Unit tests of what makes a scheduler pass fast without changing its answers: the free-accelerator index kept
// through admissions (core/admission/admission.h, FreeIndex) and the answers shared by job class (core/pass/class_memo.h).
#include <gtest/gtest.h>

#include "core/admission/admission.h"
#include "core/pass/scheduler.h"

#include "spec_builders.h"

namespace allot::scheduler_pass_test {
namespace {

NodeSpec node(const std::string& name, const std::string& l3) {
  return NodeSpec{name, "ml.g5.12xlarge", "", {{"network-node-layer-3", l3}}};
}

TeamSpec team(const std::string& name, int instances, SharingStrategy strategy) {
  TeamSpec t;
  t.name = name;
  AmountSpec a;
  a.instances = instances;
  t.allocation = {{"ml.g5.12xlarge", a}};
  t.strategy = strategy;
  t.borrow_limit = 0;
  return t;
}

using allot::test::job_spec;

void expect_same(const FreeAccelerators& a, const FreeAccelerators& b, const std::string& after) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t t = 0; t < a.size(); ++t) {
    EXPECT_EQ(a[t].accelerators, b[t].accelerators) << "type " << t << " after " << after;
    EXPECT_EQ(a[t].whole_nodes, b[t].whole_nodes) << "type " << t << " after " << after;
    EXPECT_EQ(a[t].largest, b[t].largest) << "type " << t << " after " << after;
  }
}

// Every admission updates the index from the nodes it used; it must always agree with a scan of every node,
// also when a job takes whole nodes, several replicas share a node, or a job holds an exclusive domain.
TEST(FreeIndexTest, AgreesWithAFullScanAfterEveryAdmission) {
  ClusterState s;
  std::vector<NodeSpec> nodes;
  for (int i = 1; i <= 8; ++i) nodes.push_back(node("n-" + std::to_string(i), i <= 4 ? "nn-a" : "nn-b"));
  ASSERT_TRUE(add_nodes(s, nodes, 0).ok());
  ASSERT_TRUE(upsert_team(s, team("ml", 8, SharingStrategy::kLendAndBorrow)).ok());
  TopologySpec exclusive;
  exclusive.required = "network-node-layer-3";
  exclusive.exclusive = "network-node-layer-3";
  const std::vector<JobSpec> jobs = {job_spec("one", "ml"),
                                     job_spec("three", "ml").replicas(3),
                                     job_spec("pair", "ml").replicas(2).accelerators(2),
                                     job_spec("whole", "ml").whole_nodes(),
                                     job_spec("excl", "ml").replicas(2).topology(exclusive),
                                     job_spec("four", "ml").accelerators(4),
                                     job_spec("more", "ml").replicas(4)};
  FreeIndex index;
  index.reset(s, s.room);
  int admitted = 0;
  for (const JobSpec& spec : jobs) {
    auto id = submit_job(s, spec, 0);
    ASSERT_TRUE(id.ok()) << id.error().message;
    const Job& j = s.jobs[id->index()];
    AdmissionAttempt a = try_admit(s, s.room, s.usage, j, AdmitOptions{.free = &index.free()});
    if (!a.ok()) continue;
    ASSERT_TRUE(admit_job(s, j.id, a.placement, a.borrowing(), 0, "test").ok());
    index.took(s, s.room, j, a.placement);
    ++admitted;
    expect_same(index.free(), free_accelerators(s, s.room), spec.name);
  }
  EXPECT_GE(admitted, 5) << "the case should exercise most shapes";
}

// The jobs of one class (team and shape) get one answer per state; the answer a job gets among many identical
// jobs is the one it gets alone, and a team never receives another team's answer.
TEST(ClassMemoTest, IdenticalJobsGetTheReasonOneJobGetsAlone) {
  // ASSERT_* returns from the lambda, so the answer comes back through `out`.
  auto build = [](int copies, std::pair<std::string, std::string>& out) {
    ClusterState s;
    ASSERT_TRUE(add_nodes(s, {node("n-1", "nn-a"), node("n-2", "nn-a"), node("n-3", "nn-b"), node("n-4", "nn-b")}, 0).ok());
    ASSERT_TRUE(upsert_team(s, team("a", 2, SharingStrategy::kLendAndBorrow)).ok());
    ASSERT_TRUE(upsert_team(s, team("b", 2, SharingStrategy::kDontLend)).ok());
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(submit_job(s, job_spec("a-run-" + std::to_string(i), "a").whole_nodes(), 0).ok());
      ASSERT_TRUE(submit_job(s, job_spec("b-run-" + std::to_string(i), "b").whole_nodes(), 0).ok());
    }
    (void)schedule(s, 0);
    for (int i = 0; i < copies; ++i) {
      ASSERT_TRUE(submit_job(s, job_spec("a-" + std::to_string(i), "a").replicas(2).accelerators(2), 1).ok());
      ASSERT_TRUE(submit_job(s, job_spec("b-" + std::to_string(i), "b").replicas(2).accelerators(2), 1).ok());
    }
    (void)schedule(s, 1);
    std::string a0 = s.find_job("a-0")->reason, b0 = s.find_job("b-0")->reason;
    for (int i = 0; i < copies; ++i) {
      EXPECT_EQ(s.find_job("a-" + std::to_string(i))->state, JobState::kPending);
      EXPECT_EQ(s.find_job("a-" + std::to_string(i))->reason.str(), a0);
      EXPECT_EQ(s.find_job("b-" + std::to_string(i))->reason.str(), b0);
    }
    EXPECT_NE(a0.find("team a"), std::string::npos) << a0;
    EXPECT_NE(b0.find("team b"), std::string::npos) << b0;
    EXPECT_EQ(a0.find("team b"), std::string::npos) << a0;
    out = {a0, b0};
  };
  std::pair<std::string, std::string> alone, many;
  build(1, alone);
  build(40, many);
  EXPECT_FALSE(alone.first.empty());
  EXPECT_EQ(alone, many);
}

}  // namespace
}  // namespace allot::scheduler_pass_test
