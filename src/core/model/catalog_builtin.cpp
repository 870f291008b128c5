// The built-in instance types: every type a SageMaker HyperPod cluster's instance group may have.
//
// Where the figures come from:
// - The list of types: the SageMaker API reference, ClusterInstanceGroupSpecification.InstanceType and
//   ClusterInstanceRequirements.InstanceTypes ("Valid Values"), and the HyperPod CLI's and Helm chart's lists
//   (which add the i3en, m7i and r7i families). The c6i/m6i/r6i families that the newest API lists are not
//   here yet: an admin adds them in the policy file's `instance_types` section (docs/teams-and-policy.md).
// - Accelerators, accelerator memory, vCPUs, memory and EFA interfaces: the EC2 instance type pages
//   (Accelerated computing, Compute optimized, General purpose, Memory optimized, Storage optimized) for the
//   type without the `ml.` prefix. Memory is in whole GiB, rounded down where EC2 gives a fraction
//   (c5n.large 5.25 GiB, c5n.xlarge 10.5 GiB): a job may be placed only in memory the node surely has.
// - NUMA domains: the processor sockets the size spans (EC2's "metal" size of each family gives the socket
//   count; a size with more vCPUs than one socket has spans two), with accelerators and vCPUs split evenly.
//   Sizes within one socket are one domain.
// - Neuron devices: NeuronCores per device from the AWS Neuron documentation (Trainium 2, Trainium2 8,
//   Inferentia2 2).
// The first sixteen entries keep their place: a type's TypeId is its index, and journals name types by name,
// so order matters only for reproducible simulator output.
#include "core/model/catalog.h"
#include "core/model/mig.h"

namespace allot {
namespace {

InstanceType make(std::string name, AcceleratorKind kind, std::string model, int accelerators, int accel_mem,
                  int vcpus, int memory_gib, int efa, int numa_domains, int ultraserver = 0, int neuron_cores = 0) {
  InstanceType t;
  t.name = std::move(name);
  t.accelerator_kind = kind;
  t.accelerator_model = std::move(model);
  t.accelerators = accelerators;
  t.accelerator_memory_gib = accel_mem;
  t.neuron_cores_per_accelerator = neuron_cores;
  t.vcpus = vcpus;
  t.memory_gib = memory_gib;
  t.efa_interfaces = efa;
  t.numa = even_numa(numa_domains, accelerators, vcpus);
  t.ultraserver_size = ultraserver;
  return t;
}

// A CPU-only type: vCPUs, memory (GiB), EFA interfaces, NUMA domains.
InstanceType cpu(std::string name, int vcpus, int memory_gib, int efa = 0, int numa_domains = 1) {
  return make(std::move(name), AcceleratorKind::kNone, "", 0, 0, vcpus, memory_gib, efa, numa_domains);
}

}  // namespace

std::vector<InstanceType> builtin_instance_types() {
  using K = AcceleratorKind;
  // make(name, kind, model, accelerators, accelerator GiB, vCPUs, memory GiB, EFA, NUMA domains[, UltraServer
  // nodes[, NeuronCores per device]])
  return {
      // --- the types of the first catalog (kept first, in their order) ---
      make("ml.p4d.24xlarge", K::kNvidiaGpu, "A100", 8, 40, 96, 1152, 4, 2),
      make("ml.p5.48xlarge", K::kNvidiaGpu, "H100", 8, 80, 192, 2048, 32, 2),
      make("ml.p5e.48xlarge", K::kNvidiaGpu, "H200", 8, 141, 192, 2048, 32, 2),
      make("ml.p5en.48xlarge", K::kNvidiaGpu, "H200", 8, 141, 192, 2048, 16, 2),
      make("ml.p6-b200.48xlarge", K::kNvidiaGpu, "B200", 8, 179, 192, 2048, 8, 2),
      // One GB200 compute tray: two Grace CPUs with two Blackwell GPUs each; 18 trays form an NVL72 UltraServer.
      make("ml.p6e-gb200.36xlarge", K::kNvidiaGpu, "GB200", 4, 185, 144, 960, 17, 2, 18),
      make("ml.g5.2xlarge", K::kNvidiaGpu, "A10G", 1, 24, 8, 32, 0, 1),
      make("ml.g5.8xlarge", K::kNvidiaGpu, "A10G", 1, 24, 32, 128, 1, 1),
      make("ml.g5.12xlarge", K::kNvidiaGpu, "A10G", 4, 24, 48, 192, 0, 1),
      make("ml.g6.12xlarge", K::kNvidiaGpu, "L4", 4, 24, 48, 192, 0, 1),
      make("ml.g6e.12xlarge", K::kNvidiaGpu, "L40S", 4, 48, 48, 384, 0, 1),
      make("ml.trn1.32xlarge", K::kNeuron, "Trainium", 16, 32, 128, 512, 8, 2, 0, 2),
      make("ml.trn2.48xlarge", K::kNeuron, "Trainium2", 16, 96, 192, 2048, 16, 2, 0, 8),
      cpu("ml.m5.xlarge", 4, 16),
      cpu("ml.c5.2xlarge", 8, 16),

      // --- NVIDIA GPU: P family ---
      make("ml.p4de.24xlarge", K::kNvidiaGpu, "A100", 8, 80, 96, 1152, 4, 2),
      make("ml.p5.4xlarge", K::kNvidiaGpu, "H100", 1, 80, 16, 256, 1, 1),

      // --- NVIDIA GPU: G5 (A10G, 24 GB) ---
      make("ml.g5.xlarge", K::kNvidiaGpu, "A10G", 1, 24, 4, 16, 0, 1),
      make("ml.g5.4xlarge", K::kNvidiaGpu, "A10G", 1, 24, 16, 64, 0, 1),
      make("ml.g5.16xlarge", K::kNvidiaGpu, "A10G", 1, 24, 64, 256, 1, 1),
      make("ml.g5.24xlarge", K::kNvidiaGpu, "A10G", 4, 24, 96, 384, 1, 1),
      make("ml.g5.48xlarge", K::kNvidiaGpu, "A10G", 8, 24, 192, 768, 1, 2),

      // --- NVIDIA GPU: G6 (L4, 24 GB) and Gr6 (L4, more memory per vCPU) ---
      make("ml.g6.xlarge", K::kNvidiaGpu, "L4", 1, 24, 4, 16, 0, 1),
      make("ml.g6.2xlarge", K::kNvidiaGpu, "L4", 1, 24, 8, 32, 0, 1),
      make("ml.g6.4xlarge", K::kNvidiaGpu, "L4", 1, 24, 16, 64, 0, 1),
      make("ml.g6.8xlarge", K::kNvidiaGpu, "L4", 1, 24, 32, 128, 1, 1),
      make("ml.g6.16xlarge", K::kNvidiaGpu, "L4", 1, 24, 64, 256, 1, 1),
      make("ml.g6.24xlarge", K::kNvidiaGpu, "L4", 4, 24, 96, 384, 1, 1),
      make("ml.g6.48xlarge", K::kNvidiaGpu, "L4", 8, 24, 192, 768, 1, 2),
      make("ml.gr6.4xlarge", K::kNvidiaGpu, "L4", 1, 24, 16, 128, 0, 1),
      make("ml.gr6.8xlarge", K::kNvidiaGpu, "L4", 1, 24, 32, 256, 1, 1),

      // --- NVIDIA GPU: G6e (L40S, 48 GB) ---
      make("ml.g6e.xlarge", K::kNvidiaGpu, "L40S", 1, 48, 4, 32, 0, 1),
      make("ml.g6e.2xlarge", K::kNvidiaGpu, "L40S", 1, 48, 8, 64, 0, 1),
      make("ml.g6e.4xlarge", K::kNvidiaGpu, "L40S", 1, 48, 16, 128, 0, 1),
      make("ml.g6e.8xlarge", K::kNvidiaGpu, "L40S", 1, 48, 32, 256, 1, 1),
      make("ml.g6e.16xlarge", K::kNvidiaGpu, "L40S", 1, 48, 64, 512, 1, 1),
      make("ml.g6e.24xlarge", K::kNvidiaGpu, "L40S", 4, 48, 96, 768, 2, 1),
      make("ml.g6e.48xlarge", K::kNvidiaGpu, "L40S", 8, 48, 192, 1536, 4, 2),

      // --- AWS Trainium ---
      make("ml.trn1n.32xlarge", K::kNeuron, "Trainium", 16, 32, 128, 512, 16, 2, 0, 2),
      make("ml.trn2.3xlarge", K::kNeuron, "Trainium2", 1, 96, 12, 128, 1, 1, 0, 8),

      // --- AWS Inferentia2 (32 GB, 2 NeuronCores per device) ---
      make("ml.inf2.xlarge", K::kNeuron, "Inferentia2", 1, 32, 4, 16, 0, 1, 0, 2),
      make("ml.inf2.8xlarge", K::kNeuron, "Inferentia2", 1, 32, 32, 128, 0, 1, 0, 2),
      make("ml.inf2.24xlarge", K::kNeuron, "Inferentia2", 6, 32, 96, 384, 0, 1, 0, 2),
      make("ml.inf2.48xlarge", K::kNeuron, "Inferentia2", 12, 32, 192, 768, 0, 2, 0, 2),

      // --- CPU: C5 (compute optimized; 48 vCPUs per socket) ---
      cpu("ml.c5.large", 2, 4),
      cpu("ml.c5.xlarge", 4, 8),
      cpu("ml.c5.4xlarge", 16, 32),
      cpu("ml.c5.9xlarge", 36, 72),
      cpu("ml.c5.12xlarge", 48, 96),
      cpu("ml.c5.18xlarge", 72, 144, 0, 2),
      cpu("ml.c5.24xlarge", 96, 192, 0, 2),

      // --- CPU: C5n (100 Gbps networking; 36 vCPUs per socket) ---
      cpu("ml.c5n.large", 2, 5),
      cpu("ml.c5n.xlarge", 4, 10),
      cpu("ml.c5n.2xlarge", 8, 21),
      cpu("ml.c5n.4xlarge", 16, 42),
      cpu("ml.c5n.9xlarge", 36, 96, 1),
      cpu("ml.c5n.18xlarge", 72, 192, 1, 2),

      // --- CPU: M5 (general purpose; 48 vCPUs per socket) ---
      cpu("ml.m5.large", 2, 8),
      cpu("ml.m5.2xlarge", 8, 32),
      cpu("ml.m5.4xlarge", 16, 64),
      cpu("ml.m5.8xlarge", 32, 128),
      cpu("ml.m5.12xlarge", 48, 192),
      cpu("ml.m5.16xlarge", 64, 256, 0, 2),
      cpu("ml.m5.24xlarge", 96, 384, 0, 2),

      // --- CPU: T3 (burstable) ---
      cpu("ml.t3.medium", 2, 4),
      cpu("ml.t3.large", 2, 8),
      cpu("ml.t3.xlarge", 4, 16),
      cpu("ml.t3.2xlarge", 8, 32),

      // --- CPU: I3en (storage optimized; 48 vCPUs per socket) ---
      cpu("ml.i3en.large", 2, 16),
      cpu("ml.i3en.xlarge", 4, 32),
      cpu("ml.i3en.2xlarge", 8, 64),
      cpu("ml.i3en.3xlarge", 12, 96),
      cpu("ml.i3en.6xlarge", 24, 192),
      cpu("ml.i3en.12xlarge", 48, 384, 1),
      cpu("ml.i3en.24xlarge", 96, 768, 1, 2),

      // --- CPU: M7i (general purpose; 96 vCPUs per socket) ---
      cpu("ml.m7i.large", 2, 8),
      cpu("ml.m7i.xlarge", 4, 16),
      cpu("ml.m7i.2xlarge", 8, 32),
      cpu("ml.m7i.4xlarge", 16, 64),
      cpu("ml.m7i.8xlarge", 32, 128),
      cpu("ml.m7i.12xlarge", 48, 192),
      cpu("ml.m7i.16xlarge", 64, 256),
      cpu("ml.m7i.24xlarge", 96, 384),
      cpu("ml.m7i.48xlarge", 192, 768, 1, 2),

      // --- CPU: R7i (memory optimized; 96 vCPUs per socket) ---
      cpu("ml.r7i.large", 2, 16),
      cpu("ml.r7i.xlarge", 4, 32),
      cpu("ml.r7i.2xlarge", 8, 64),
      cpu("ml.r7i.4xlarge", 16, 128),
      cpu("ml.r7i.8xlarge", 32, 256),
      cpu("ml.r7i.12xlarge", 48, 384),
      cpu("ml.r7i.16xlarge", 64, 512),
      cpu("ml.r7i.24xlarge", 96, 768),
      cpu("ml.r7i.48xlarge", 192, 1536, 1, 2),
  };
}

Catalog Catalog::builtin() {
  // Built once: callers copy it and may add to their copy. A constant, not shared mutable state.
  static const Catalog kBuiltin = [] {
    Catalog c;
    for (auto& t : builtin_instance_types()) {
      auto r = c.add(std::move(t));
      (void)r;  // built-in facts are consistent; catalog_test checks every one
    }
    const size_t bases = c.size();
    for (size_t i = 0; i < bases; ++i)
      for (auto& t : mig_instance_types(c.at(TypeId(static_cast<uint32_t>(i))))) {
        auto r = c.add(std::move(t));
        (void)r;  // derived from consistent facts; mig_test checks every one
      }
    return c;
  }();
  return kBuiltin;
}

}  // namespace allot
