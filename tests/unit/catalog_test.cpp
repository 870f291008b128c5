#include <gtest/gtest.h>

#include "core/model/catalog.h"
#include "core/model/request.h"

namespace allot::catalog_test {
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

// Every type a SageMaker HyperPod instance group may have (the API reference's InstanceType values and the
// HyperPod CLI's list) is built in, each consistent (Catalog::add checked its NUMA layout).
TEST(Catalog, EveryHyperPodTypeIsBuiltIn) {
  Catalog c = Catalog::builtin();
  // None refused by add; the MIG types (core/model/mig.h, mig_test.cpp) come after them.
  size_t whole = 0;
  for (const auto& t : c.types()) whole += !t.is_mig();
  EXPECT_EQ(whole, builtin_instance_types().size());
  const std::vector<std::string> hyperpod = {
      "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
      "p6e-gb200.36xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge", "trn2.48xlarge", "g5.xlarge", "g5.2xlarge",
      "g5.4xlarge", "g5.8xlarge", "g5.12xlarge", "g5.16xlarge", "g5.24xlarge", "g5.48xlarge", "g6.xlarge", "g6.2xlarge",
      "g6.4xlarge", "g6.8xlarge", "g6.12xlarge", "g6.16xlarge", "g6.24xlarge", "g6.48xlarge", "gr6.4xlarge", "gr6.8xlarge",
      "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge",
      "g6e.48xlarge", "c5.large", "c5.xlarge", "c5.2xlarge", "c5.4xlarge", "c5.9xlarge", "c5.12xlarge", "c5.18xlarge",
      "c5.24xlarge", "c5n.large", "c5n.2xlarge", "c5n.4xlarge", "c5n.9xlarge", "c5n.18xlarge", "m5.large", "m5.xlarge",
      "m5.2xlarge", "m5.4xlarge", "m5.8xlarge", "m5.12xlarge", "m5.16xlarge", "m5.24xlarge", "t3.medium", "t3.large",
      "t3.xlarge", "t3.2xlarge", "i3en.large", "i3en.xlarge", "i3en.2xlarge", "i3en.3xlarge", "i3en.6xlarge",
      "i3en.12xlarge", "i3en.24xlarge", "m7i.large", "m7i.xlarge", "m7i.2xlarge", "m7i.4xlarge", "m7i.8xlarge",
      "m7i.12xlarge", "m7i.16xlarge", "m7i.24xlarge", "m7i.48xlarge", "r7i.large", "r7i.xlarge", "r7i.2xlarge",
      "r7i.4xlarge", "r7i.8xlarge", "r7i.12xlarge", "r7i.16xlarge", "r7i.24xlarge", "r7i.48xlarge"};
  for (const auto& name : hyperpod) EXPECT_TRUE(c.find(name).has_value()) << name;
  const InstanceType& c5 = c.at(*c.find("ml.c5.4xlarge"));  // refused at agent start before
  EXPECT_EQ(c5.accelerator_kind, AcceleratorKind::kNone);
  EXPECT_EQ(c5.vcpus, 16);
  EXPECT_EQ(c5.memory_gib, 32);
  const InstanceType& g548 = c.at(*c.find("ml.g5.48xlarge"));
  EXPECT_EQ(g548.accelerators, 8);
  ASSERT_EQ(g548.numa.size(), 2u);
  EXPECT_EQ(g548.numa[1].accelerators, (std::vector<int>{4, 5, 6, 7}));
  const InstanceType& inf2 = c.at(*c.find("ml.inf2.48xlarge"));
  EXPECT_EQ(inf2.accelerator_kind, AcceleratorKind::kNeuron);
  EXPECT_EQ(inf2.accelerator_model, "Inferentia2");
  EXPECT_EQ(inf2.accelerators, 12);
  EXPECT_EQ(inf2.neuron_cores_per_accelerator, 2);
  // Every accelerated type names its model, every CPU type has none; memory and vCPUs are positive.
  for (const auto& t : c.types()) {
    EXPECT_EQ(t.accelerators > 0, t.accelerator_kind != AcceleratorKind::kNone) << t.name;
    EXPECT_EQ(t.accelerators > 0, !t.accelerator_model.empty()) << t.name;
    EXPECT_EQ(t.accelerator_kind == AcceleratorKind::kNeuron, t.neuron_cores_per_accelerator > 0) << t.name;
  }
}

TEST(Catalog, PutReplacesInPlaceAndDifferencesAreNamed) {
  Catalog c = Catalog::builtin();
  const TypeId id = *c.find("ml.m5.large");
  InstanceType t = c.at(id);
  EXPECT_EQ(fact_differences(t, c.at(id)), "");
  t.memory_gib = 6;
  t.numa = even_numa(2, 0, 2);
  EXPECT_EQ(fact_differences(t, c.at(id)), "memory_gib 6 (not 8), numa_domains 2 (not 1)");
  EXPECT_FALSE(c.add(t).ok());  // add never replaces
  auto put = c.put(t);
  ASSERT_TRUE(put.ok()) << put.error().message;
  EXPECT_EQ(*put, id);
  EXPECT_EQ(c.at(id).memory_gib, 6);
  t.vcpus = 0;
  EXPECT_FALSE(c.put(t).ok());  // put checks as add does
  EXPECT_EQ(c.at(id).vcpus, 2);
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

TEST(AmountText, FractionsOfAGibAreThousandthsOfIt) {
  // Memory is in MiB and shown in GiB: 1280 MiB is 1.25 GiB (it was shown as 1.274, the thousandths taken as
  // if the unit were 1000), in quota reasons among others.
  EXPECT_EQ(format_amount(Resource::kMemory, 1280), "1.25");
  EXPECT_EQ(format_amount(Resource::kMemory, 768), "0.75");
  EXPECT_EQ(format_amount(Resource::kMemory, 64), "0.062");
  EXPECT_EQ(format_amount(Resource::kMemory, 2048), "2");
  EXPECT_EQ(format_amount(Resource::kVcpu, 2500), "2.5");
  EXPECT_EQ(format_amount(Resource::kVcpu, 50), "0.05");
  EXPECT_EQ(format_amount(Resource::kVcpu, -500), "-0.5");
}

}  // namespace
}  // namespace allot::catalog_test
