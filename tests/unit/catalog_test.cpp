#include <gtest/gtest.h>

#include "core/catalog.h"
#include "core/request.h"

namespace allot {
namespace {

TEST(Catalog, BuiltinTypesHaveTheirFacts) {
  Catalog c = Catalog::builtin();
  for (const char* name : {"ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge",
                           "ml.p6-b200.48xlarge", "ml.p6e-gb200.36xlarge", "ml.g5.2xlarge", "ml.g5.8xlarge",
                           "ml.g5.12xlarge", "ml.g6.12xlarge", "ml.g6e.12xlarge", "ml.trn1.32xlarge",
                           "ml.trn2.48xlarge", "ml.m5.xlarge", "ml.c5.2xlarge"})
    EXPECT_TRUE(c.find(name).has_value()) << name;
  const InstanceType& p5 = c.at(*c.find("p5.48xlarge"));  // the ml. prefix is optional
  EXPECT_EQ(p5.accelerators, 8);
  EXPECT_EQ(p5.accelerator_model, "H100");
  EXPECT_EQ(p5.vcpus, 192);
  EXPECT_EQ(p5.memory_gib, 2048);
  EXPECT_EQ(p5.efa_interfaces, 32);
  ASSERT_EQ(p5.numa.size(), 2u);
  EXPECT_EQ(p5.numa[0].accelerators, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p5.numa[1].first_vcpu, 96);
  EXPECT_EQ(p5.numa[1].vcpus, 96);
  const InstanceType& g5 = c.at(*c.find("ml.g5.2xlarge"));
  EXPECT_EQ(g5.accelerators, 1);
  EXPECT_EQ(g5.vcpus, 8);
  EXPECT_EQ(g5.memory_gib, 32);
  const InstanceType& g6 = c.at(*c.find("ml.g6.12xlarge"));
  EXPECT_EQ(g6.accelerators, 4);
  EXPECT_EQ(g6.accelerator_model, "L4");
  EXPECT_EQ(g6.vcpus, 48);
  EXPECT_EQ(g6.memory_gib, 192);
  EXPECT_EQ(c.at(*c.find("ml.p6e-gb200.36xlarge")).ultraserver_size, 18);
  EXPECT_EQ(c.at(*c.find("ml.c5.2xlarge")).accelerator_kind, AcceleratorKind::kNone);
  EXPECT_EQ(c.at(*c.find("ml.trn2.48xlarge")).accelerator_kind, AcceleratorKind::kNeuron);
}

TEST(Catalog, UnknownTypeListsKnownOnes) {
  Catalog c = Catalog::builtin();
  auto r = c.lookup("ml.p9.huge");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("ml.p9.huge"), std::string::npos);
  EXPECT_NE(r.error().message.find("ml.g5.2xlarge"), std::string::npos);
}

TEST(Catalog, UserDefinedTypesAreCheckedAndAdded) {
  Catalog c = Catalog::builtin();
  InstanceType t;
  t.name = "custom.8gpu";
  t.accelerators = 8;
  t.vcpus = 64;
  t.memory_gib = 512;
  t.numa = even_numa(2, 8, 64);
  auto id = c.add(t);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(c.at(*id).name, "ml.custom.8gpu");
  EXPECT_FALSE(c.add(t).ok());  // duplicate
  InstanceType bad = t;
  bad.name = "custom.bad";
  bad.numa = {NumaDomain{{0, 1, 2, 3}, 0, 32}};  // accelerators 4..7 and vCPUs 32..63 belong nowhere
  auto r = c.add(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("NUMA"), std::string::npos);
  InstanceType zero = t;
  zero.name = "custom.zero";
  zero.vcpus = 0;
  EXPECT_FALSE(c.add(zero).ok());
}

const InstanceType& type(const char* name) {
  static const Catalog c = Catalog::builtin();
  return c.at(*c.find(name));
}

AmountSpec accel(int64_t a) {
  AmountSpec s;
  s.accelerators = a;
  return s;
}

TEST(ProportionalDefaults, AcceleratorsBringTheirShareOfVcpuAndMemory) {
  auto p5 = resolve_allocation(type("ml.p5.48xlarge"), accel(2));
  ASSERT_TRUE(p5.ok());
  EXPECT_EQ(p5->accelerators, 2);
  EXPECT_EQ(p5->vcpu_milli, 48'000);
  EXPECT_EQ(p5->memory_mib, 512 * 1024);
  auto g5 = resolve_allocation(type("ml.g5.2xlarge"), accel(2));
  ASSERT_TRUE(g5.ok());
  EXPECT_EQ(g5->vcpu_milli, 16'000);
  EXPECT_EQ(g5->memory_mib, 64 * 1024);
  auto g6 = resolve_allocation(type("ml.g6.12xlarge"), accel(2));
  ASSERT_TRUE(g6.ok());
  EXPECT_EQ(g6->vcpu_milli, 24'000);
  EXPECT_EQ(g6->memory_mib, 96 * 1024);
}

TEST(ProportionalDefaults, MemoryFollowsExplicitVcpu) {
  AmountSpec a = accel(2);
  a.vcpu_milli = 48'000;
  auto g6 = resolve_allocation(type("ml.g6.12xlarge"), a);
  ASSERT_TRUE(g6.ok());
  EXPECT_EQ(g6->accelerators, 2);
  EXPECT_EQ(g6->vcpu_milli, 48'000);
  EXPECT_EQ(g6->memory_mib, 192 * 1024);
}

TEST(ProportionalDefaults, ExplicitMemoryOverrides) {
  AmountSpec a = accel(2);
  a.memory_mib = 100 * 1024;
  auto r = resolve_allocation(type("ml.p5.48xlarge"), a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->vcpu_milli, 48'000);
  EXPECT_EQ(r->memory_mib, 100 * 1024);
}

TEST(ProportionalDefaults, VcpuAloneGivesNoAccelerators) {
  AmountSpec a;
  a.vcpu_milli = 96'000;
  auto r = resolve_allocation(type("ml.p5.48xlarge"), a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->accelerators, 0);
  EXPECT_EQ(r->memory_mib, 1024 * 1024);
  AmountSpec m;
  m.memory_mib = 1024;
  auto rm = resolve_allocation(type("ml.p5.48xlarge"), m);
  ASSERT_TRUE(rm.ok());
  EXPECT_EQ(rm->accelerators, 0);
  EXPECT_EQ(rm->vcpu_milli, 0);
}

TEST(ProportionalDefaults, InstancesAreWholeNodesAndExclusiveOfAmounts) {
  AmountSpec a;
  a.instances = 3;
  auto r = resolve_allocation(type("ml.g5.8xlarge"), a);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (Resources{3, 96'000, 384 * 1024}));
  a.accelerators = 1;
  EXPECT_FALSE(resolve_allocation(type("ml.g5.8xlarge"), a).ok());
}

TEST(ProportionalDefaults, ReplicaRequestsFollowTheSameRule) {
  AmountSpec whole;
  whole.whole_node = true;
  auto w = resolve_replica(type("ml.p5.48xlarge"), whole);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->accelerators, 8);
  auto four = resolve_replica(type("ml.p5.48xlarge"), accel(4));
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->vcpu_milli, 96'000);
  EXPECT_FALSE(resolve_replica(type("ml.c5.2xlarge"), accel(1)).ok());  // a CPU type has no accelerators
  EXPECT_FALSE(resolve_replica(type("ml.p5.48xlarge"), AmountSpec{}).ok());  // asks for nothing
  AmountSpec neg = accel(-1);
  EXPECT_FALSE(resolve_replica(type("ml.p5.48xlarge"), neg).ok());
}

}  // namespace
}  // namespace allot
