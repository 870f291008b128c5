// MIG partitions (docs/mig.md): the MIG types the catalog derives, the core's decisions on them (a whole-GPU job
// never on a partitioned GPU, quotas per profile, lending of profiles), `nvidia-smi -L` with MIG devices, and the
// agent's discovery and replica environment.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "agent/container.h"
#include "agent/inventory.h"
#include "agent/replica.h"
#include "core/model/catalog.h"
#include "core/model/mig.h"
#include "core/quota/quota.h"
#include "core/pass/scheduler.h"
#include "interop/k8s_manifest.h"
#include "interop/kueue.h"
#include "interop/nvidia_smi.h"
#include "store/record_json.h"

#include "spec_builders.h"

namespace allot::core::test::mig_test {
namespace {

using allot::test::job_spec;

constexpr const char* kP4de = "ml.p4de.24xlarge";
constexpr const char* kP4de1g = "ml.p4de.24xlarge.mig-1g.10gb";
constexpr const char* kP4de3g = "ml.p4de.24xlarge.mig-3g.40gb";

// Real `nvidia-smi -L` output of a p4de whose eight A100-80GB are each partitioned in seven 1g.10gb devices
// (the form of NVIDIA's MIG user guide: the MIG lines indented under their GPU, padded columns).
std::string p4de_all_1g() {
  std::string out;
  for (int g = 0; g < 8; ++g) {
    out += "GPU " + std::to_string(g) + ": NVIDIA A100-SXM4-80GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a7" +
           std::to_string(g) + ")\n";
    for (int d = 0; d < 7; ++d)
      out += "  MIG 1g.10gb     Device  " + std::to_string(d) + ": (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb" +
             std::to_string(g) + std::to_string(d) + ")\n";
  }
  return out;
}

TEST(MigCatalog, EveryProfileOfAMigGpuIsATypeWithItsDevicesAndTheBaseTypesHost) {
  const Catalog c = Catalog::builtin();
  const InstanceType& base = c.at(*c.find(kP4de));
  const InstanceType& t = c.at(*c.find(kP4de1g));
  EXPECT_TRUE(t.is_mig());
  EXPECT_EQ(t.mig_base, kP4de);
  EXPECT_EQ(t.mig_profile, "1g.10gb");
  EXPECT_EQ(t.mig_per_gpu, 7);
  EXPECT_EQ(t.accelerators, 56);
  EXPECT_EQ(t.accelerator_memory_gib, 10);
  EXPECT_EQ(t.vcpus, base.vcpus);
  EXPECT_EQ(t.memory_gib, base.memory_gib);
  // Devices 0..27 are GPUs 0..3's, in the first NUMA domain as those GPUs are.
  ASSERT_EQ(t.numa.size(), 2u);
  EXPECT_EQ(t.numa[0].accelerators.size(), 28u);
  EXPECT_EQ(t.numa[0].accelerators.front(), 0);
  EXPECT_EQ(t.numa[1].accelerators.front(), 28);
  EXPECT_EQ(c.at(*c.find(kP4de3g)).accelerators, 16);
  // The 40 GiB A100 has other profiles, and GPUs without MIG none.
  EXPECT_TRUE(c.find("ml.p4d.24xlarge.mig-1g.5gb"));
  EXPECT_FALSE(c.find("ml.p4d.24xlarge.mig-1g.10gb.extra"));
  EXPECT_FALSE(c.find("ml.g5.48xlarge.mig-1g.10gb"));
  // Every built-in type keeps its TypeId: the MIG types come after all of them.
  const auto builtin = builtin_instance_types();
  for (size_t i = 0; i < builtin.size(); ++i) EXPECT_EQ(c.at(TypeId(static_cast<uint32_t>(i))).name, builtin[i].name);
  // Unknown profiles are answered with the type's profiles; the general list leaves MIG types out.
  auto bad = c.lookup("ml.p4de.24xlarge.mig-9g.1gb");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("ml.p4de.24xlarge has the MIG profiles 1g.10gb, 1g.20gb"), std::string::npos)
      << bad.error().message;
  EXPECT_EQ(c.known_names().find(".mig-"), std::string::npos);
  // Nobody defines a MIG type by hand.
  Catalog own = c;
  InstanceType fake = base;
  fake.name = "ml.lab.mig-1g.10gb";
  auto refused = own.add(fake);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("MIG type"), std::string::npos);
}

class MigCore : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(add_node(s, NodeSpec{"whole", kP4de, "", {}}, 0).ok());
    ASSERT_TRUE(add_node(s, NodeSpec{"mig", kP4de1g, "", {}}, 0).ok());
  }
  void team(const std::string& name, std::vector<AllocationSpec> alloc, SharingStrategy st = SharingStrategy::kLendAndBorrow) {
    TeamSpec t;
    t.name = name;
    t.allocation = std::move(alloc);
    t.strategy = st;
    t.borrow_limit = 100;
    ASSERT_TRUE(upsert_team(s, t).ok());
  }
  static AllocationSpec accels(const char* type, int64_t n) {
    AmountSpec a;
    a.accelerators = n;
    return {type, a};
  }
  void submit(const JobSpec& spec) { ASSERT_TRUE(submit_job(s, spec, 0).ok()); }
  const Job& j(const std::string& name) { return *s.find_job(name); }
  std::string node_of(const std::string& name) {
    const Job& job = j(name);
    if (job.placement.empty()) return "";
    return s.nodes[job.placement.pod_sets[0].replicas[0].node.index()].name;
  }
  ClusterState s;
};

TEST_F(MigCore, AWholeGpuJobNeverLandsOnAPartitionedGpu) {
  team("a", {accels(kP4de, 8), accels(kP4de1g, 56)});
  // Eight whole GPUs fill the whole node; the ninth has nowhere to go, though 56 MIG devices are idle.
  submit(job_spec("fill", "a").accelerators(8));
  submit(job_spec("more", "a").accelerators(1));
  submit(job_spec("typed", "a").accelerators(1).instance_type(kP4de));
  schedule(s, 0);
  EXPECT_EQ(node_of("fill"), "whole");
  EXPECT_EQ(j("more").state, JobState::kPending);
  EXPECT_EQ(j("typed").state, JobState::kPending);
  // A job that names the MIG type gets MIG devices.
  submit(job_spec("slice", "a").accelerators(2).instance_type(kP4de1g));
  schedule(s, 0);
  EXPECT_EQ(node_of("slice"), "mig");
  EXPECT_EQ(j("slice").placement.pod_sets[0].replicas[0].accelerators.size(), 2u);
  // The team holds its quota of each type apart: 8 whole GPUs, 2 of 56 devices.
  const TypeId whole = *s.catalog.find(kP4de), mig = *s.catalog.find(kP4de1g);
  EXPECT_EQ(s.usage[s.find_team("a")->id.index()][whole.index()].accelerators, 8);
  EXPECT_EQ(s.usage[s.find_team("a")->id.index()][mig.index()].accelerators, 2);
}

TEST_F(MigCore, QuotaPerProfileLimitsAndLendsWithinTheProfile) {
  // a owns 14 devices of 1g.10gb; b owns 42 and lends; c owns only whole GPUs.
  team("a", {accels(kP4de1g, 14)});
  team("b", {accels(kP4de1g, 42)}, SharingStrategy::kLend);
  team("c", {accels(kP4de, 8)});
  submit(job_spec("a-own", "a").replicas(14).accelerators(1).instance_type(kP4de1g));
  schedule(s, 0);
  EXPECT_EQ(j("a-own").state, JobState::kRunning);
  EXPECT_FALSE(j("a-own").borrowing);
  // Borrowing b's idle devices: up to a's borrow limit (100% of its own 14).
  submit(job_spec("a-borrow", "a").replicas(14).accelerators(1).instance_type(kP4de1g));
  schedule(s, 0);
  EXPECT_EQ(j("a-borrow").state, JobState::kRunning);
  EXPECT_TRUE(j("a-borrow").borrowing);
  // c has no quota of the profile: its whole-GPU quota does not reach MIG devices.
  submit(job_spec("c-slice", "c").accelerators(1).instance_type(kP4de1g));
  schedule(s, 0);
  EXPECT_EQ(j("c-slice").state, JobState::kPending);
  // b reclaims what it lent: a's borrowing job is preempted, not a's own.
  submit(job_spec("b-own", "b").replicas(42).accelerators(1).instance_type(kP4de1g));
  schedule(s, 0);
  EXPECT_EQ(j("b-own").state, JobState::kRunning);
  EXPECT_EQ(j("a-own").state, JobState::kRunning);
  EXPECT_NE(j("a-borrow").state, JobState::kRunning);
}

TEST_F(MigCore, AProfileNoNodeHasNeverFitsAndSaysWhichType) {
  team("a", {accels(kP4de3g, 16)});
  submit(job_spec("big-slice", "a").accelerators(1).instance_type(kP4de3g));
  schedule(s, 0);
  EXPECT_EQ(j("big-slice").state, JobState::kPending);
  EXPECT_FALSE(j("big-slice").feasible);
  EXPECT_NE(j("big-slice").reason.str().find(kP4de3g), std::string::npos) << j("big-slice").reason.str();
}

TEST_F(MigCore, ANodeThatLeavesWithACauseSaysItInTheJobsReason) {
  team("a", {accels(kP4de1g, 56)});
  submit(job_spec("slice", "a").accelerators(1).instance_type(kP4de1g));
  schedule(s, 0);
  ASSERT_EQ(j("slice").state, JobState::kRunning);
  ASSERT_TRUE(remove_node(s, "mig", 5, "its MIG layout changed").ok());
  EXPECT_EQ(j("slice").state, JobState::kSuspended);
  EXPECT_EQ(j("slice").reason_code, ReasonCode::kNodeRemoved);
  EXPECT_NE(j("slice").reason.str().find("left the cluster: its MIG layout changed"), std::string::npos);
}

TEST(NvidiaSmiMig, ReadsMigDevicesUnderTheirGpus) {
  auto l = interop::parse_nvidia_smi_mig(p4de_all_1g());
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->gpus, 8);
  ASSERT_EQ(l->mig.size(), 56u);
  EXPECT_EQ(l->mig[8], (interop::MigDevice{1, 1, "1g.10gb", "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb11"}));
  // Older drivers' UUIDs and a plain GPU list.
  auto old = interop::parse_nvidia_smi_mig("GPU 0: A100-SXM4-40GB (UUID: GPU-e91edf3b)\n"
                                           "  MIG 3g.20gb Device 0: (UUID: MIG-GPU-e91edf3b/1/0)\n");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->mig.at(0).uuid, "MIG-GPU-e91edf3b/1/0");
  auto plain = interop::parse_nvidia_smi_mig("GPU 0: NVIDIA A10G (UUID: GPU-1)\nGPU 1: NVIDIA A10G (UUID: GPU-2)\n");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->gpus, 2);
  EXPECT_TRUE(plain->mig.empty());
  // Malformed MIG lines name their line.
  for (const char* bad : {"  MIG 1g.10gb Device 0: (UUID: MIG-x)\n", "GPU 0: x\n  MIG 1g.10gb Device a: (UUID: MIG-x)\n",
                          "GPU 0: x\n  MIG 1g.10gb Device 0: (UUID: GPU-x)\n", "GPU 0: x\n  MIG 1g10gb Device 0: (UUID: MIG-x)\n"}) {
    auto r = interop::parse_nvidia_smi_mig(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("line "), std::string::npos) << r.error().message;
  }
}

TEST(NvidiaSmiMig, ALayoutIsAMigTypeOnlyWhenEveryGpuHoldsTheFullCountOfOneProfile) {
  const Catalog c = Catalog::builtin();
  const InstanceType& base = c.at(*c.find(kP4de));
  auto all = interop::parse_nvidia_smi_mig(p4de_all_1g());
  ASSERT_TRUE(all);
  auto t = interop::mig_type_of(base, *all, c);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(*t, kP4de1g);
  // GPU 3 partitioned in 3g.40gb instead: refused, naming the GPU.
  std::string text = p4de_all_1g();
  interop::NvidiaSmiList mixed = *all;
  std::erase_if(mixed.mig, [](const auto& d) { return d.gpu == 3; });
  mixed.mig.push_back({3, 0, "3g.40gb", "MIG-a"});
  mixed.mig.push_back({3, 1, "3g.40gb", "MIG-b"});
  auto m = interop::mig_type_of(base, mixed, c);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("GPU 3 holds 2 x 3g.40gb, not 7 x 1g.10gb"), std::string::npos) << m.error().message;
  // A GPU with fewer devices than the profile's count.
  interop::NvidiaSmiList partial = *all;
  partial.mig.pop_back();
  EXPECT_FALSE(interop::mig_type_of(base, partial, c));
  // No MIG devices: the base type.
  EXPECT_EQ(*interop::mig_type_of(base, interop::NvidiaSmiList{8, {}}, c), kP4de);
}

TEST(NvidiaSmiMig, EmulatedUuidsAreStablePerNodeGpuAndDevice) {
  const Catalog c = Catalog::builtin();
  const InstanceType& t = c.at(*c.find(kP4de1g));
  auto a = interop::emulated_mig_devices("gpu-1", t), again = interop::emulated_mig_devices("gpu-1", t),
       other = interop::emulated_mig_devices("gpu-2", t);
  ASSERT_EQ(a.size(), 56u);
  EXPECT_EQ(a, again);
  std::set<std::string> uuids;
  for (const auto& d : a) uuids.insert(d.uuid);
  for (const auto& d : other) uuids.insert(d.uuid);
  EXPECT_EQ(uuids.size(), 112u);
  EXPECT_EQ(a[9].gpu, 1);
  EXPECT_EQ(a[9].device, 2);
  EXPECT_EQ(a[9].uuid.rfind("MIG-", 0), 0u);
  EXPECT_EQ(a[9].uuid.size(), 40u);
}

TEST(MigAgent, DiscoveryTakesTheTypeFromTheDevicesAndReplicasGetTheirUuids) {
  const Catalog c = Catalog::builtin();
  // A real p4de partitioned in 1g.10gb, started as the base type: it is the MIG type.
  auto inv = agent::discover_with(kP4de, c, "gpu-1", agent::Inventory{}, p4de_all_1g());
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->instance_type, kP4de1g);
  EXPECT_EQ(inv->accelerators, 56);
  ASSERT_EQ(inv->mig_devices.size(), 56u);
  // Named as another MIG type: refused with what nvidia-smi shows.
  auto wrong = agent::discover_with(kP4de3g, c, "gpu-1", agent::Inventory{}, p4de_all_1g());
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find(kP4de1g), std::string::npos) << wrong.error().message;
  // Without MIG devices, a MIG type is emulated, with the node's stable UUIDs.
  auto emu = agent::discover_with(kP4de3g, c, "gpu-1", agent::Inventory{}, "");
  ASSERT_TRUE(emu);
  EXPECT_TRUE(emu->emulated);
  EXPECT_EQ(emu->mig_devices, interop::emulated_mig_devices("gpu-1", c.at(*c.find(kP4de3g))));
  EXPECT_EQ(agent::inventory_json(*emu)["mig_devices"].size(), 16u);

  agent::MachineFacts m;
  m.kind = AcceleratorKind::kNvidiaGpu;
  for (const auto& d : inv->mig_devices) m.mig_uuids.push_back(d.uuid);
  agent::Assignment a;
  a.accelerators = {8, 9};
  auto env = agent::replica_env(a, m);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"],
            "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb11,MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb12");
  // In a container with a CDI spec: GPU:device names, as nvidia-ctk makes them.
  auto dir = std::filesystem::temp_directory_path() / ("allot-mig-cdi-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "nvidia.yaml") << "kind: nvidia.com/gpu\n"; }
  EXPECT_EQ(agent::mig_container_devices(inv->mig_devices, {8, 9}, {dir.string()}),
            (std::vector<std::string>{"nvidia.com/gpu=1:1", "nvidia.com/gpu=1:2"}));
  std::filesystem::remove_all(dir);
}


Result<interop::ManifestJob> manifest_with(const std::string& resources, const std::string& selector) {
  return interop::job_from_manifest(YAML::Load(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: embed, namespace: hyperpod-ns-infer}
spec:
  template:
    spec:
)" + selector + R"(
      containers:
        - name: main
          image: busybox
          command: [sleep, "1"]
          resources:
            limits: )" + resources + "\n"),
                                         "embed.yaml");
}

TEST(MigManifest, TheDevicePluginsMigResourceAsksForDevicesOfTheMigType) {
  auto m = manifest_with("{nvidia.com/mig-1g.10gb: 2}",
                         "      nodeSelector: {node.kubernetes.io/instance-type: ml.p4de.24xlarge}");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->spec.pod_sets.at(0).instance_type, kP4de1g);
  EXPECT_EQ(m->spec.pod_sets.at(0).per_replica.accelerators, 2);
  // Refused, naming what to do: no instance type, two profiles, MIG devices and whole GPUs.
  auto untyped = manifest_with("{nvidia.com/mig-1g.10gb: 1}", "");
  ASSERT_FALSE(untyped);
  EXPECT_NE(untyped.error().message.find("selects the instance type"), std::string::npos) << untyped.error().message;
  EXPECT_FALSE(manifest_with("{nvidia.com/mig-1g.10gb: 1, nvidia.com/mig-3g.40gb: 1}",
                             "      nodeSelector: {node.kubernetes.io/instance-type: ml.p4de.24xlarge}"));
  auto both = manifest_with("{nvidia.com/mig-1g.10gb: 1, nvidia.com/gpu: 1}",
                            "      nodeSelector: {node.kubernetes.io/instance-type: ml.p4de.24xlarge}");
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().message.find("MIG node offers MIG devices only"), std::string::npos) << both.error().message;
}

TEST(MigKueue, QuotasOfMigTypesExportAsMigResourcesAndImportBack) {
  const Catalog c = Catalog::builtin();
  TeamSpec t;
  t.name = "infer";
  t.fair_share_weight = 10;
  AmountSpec devices;
  devices.accelerators = 14;
  AmountSpec gpus;
  gpus.accelerators = 4;  // half a node (8 would read back as `instances: 1`)
  t.allocation = {{kP4de1g, devices}, {kP4de, gpus}};
  auto out = interop::export_kueue(PolicySpec{}, {t}, c, {});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_NE(out->yaml.find("nvidia.com/mig-1g.10gb"), std::string::npos) << out->yaml;
  EXPECT_NE(out->yaml.find("nvidia.com/mig.config: all-1g.10gb"), std::string::npos) << out->yaml;
  interop::KueueImport back;
  ASSERT_TRUE(interop::import_kueue(out->yaml, "export.yaml", c, back).ok());
  ASSERT_EQ(back.teams.size(), 1u);
  std::map<std::string, int64_t> accelerators;
  for (const auto& a : back.teams[0].allocation) accelerators[a.instance_type] = a.amount.accelerators.value_or(-1);
  EXPECT_EQ(accelerators[kP4de1g], 14);
  EXPECT_EQ(accelerators[kP4de], 4);

  // A ClusterQueue written for Kubernetes, MIG devices listed in the flavor of their base type.
  interop::KueueImport hand;
  ASSERT_TRUE(interop::import_kueue(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: p4de}
spec: {nodeLabels: {node.kubernetes.io/instance-type: p4de.24xlarge}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: hyperpod-ns-serve-clusterqueue}
spec:
  cohort: allot
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu, nvidia.com/mig-3g.40gb]
      flavors:
        - name: p4de
          resources:
            - {name: cpu, nominalQuota: 96}
            - {name: memory, nominalQuota: 1152Gi}
            - {name: nvidia.com/gpu, nominalQuota: 4}
            - {name: nvidia.com/mig-3g.40gb, nominalQuota: 6}
)", "hand.yaml", c, hand).ok());
  ASSERT_EQ(hand.teams.size(), 1u);
  accelerators.clear();
  for (const auto& a : hand.teams[0].allocation) accelerators[a.instance_type] = a.amount.accelerators.value_or(-1);
  EXPECT_EQ(accelerators[kP4de3g], 6);
  EXPECT_EQ(accelerators[kP4de], 4);
}

// The journal keeps why a node left (its MIG layout changed), and writes nothing new for a node removed without one,
// so older journals and their checksums read the same.
TEST(MigJournal, ARemoveNodeRecordCarriesItsCauseOnlyWhenThereIsOne) {
  const nlohmann::json plain = store::op_to_json(store::RemoveNode{"gpu-1"});
  EXPECT_FALSE(plain.contains("cause")) << plain.dump();
  const store::RemoveNode moved{"gpu-1", "its MIG layout changed from a to b"};
  const nlohmann::json j = store::op_to_json(moved);
  EXPECT_EQ(j["cause"], moved.cause);
  auto back = store::op_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_TRUE(std::holds_alternative<store::RemoveNode>(*back));
  EXPECT_EQ(std::get<store::RemoveNode>(*back), moved);
  auto old = store::op_from_json(plain);
  ASSERT_TRUE(old);
  EXPECT_EQ(std::get<store::RemoveNode>(*old).cause, "");
}

}  // namespace
}  // namespace allot::core::test::mig_test
