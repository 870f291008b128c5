#include "core/catalog.h"

#include <algorithm>

namespace allot {

const char* accelerator_kind_name(AcceleratorKind k) {
  switch (k) {
    case AcceleratorKind::kNone: return "none";
    case AcceleratorKind::kNvidiaGpu: return "nvidia-gpu";
    case AcceleratorKind::kNeuron: return "neuron";
  }
  return "none";
}

std::string canonical_type_name(std::string_view name) {
  if (name.starts_with("ml.")) return std::string(name);
  return "ml." + std::string(name);
}

std::vector<NumaDomain> even_numa(int domains, int accelerators, int vcpus) {
  std::vector<NumaDomain> out;
  for (int d = 0; d < domains; ++d) {
    NumaDomain nd;
    for (int a = d * accelerators / domains; a < (d + 1) * accelerators / domains; ++a) nd.accelerators.push_back(a);
    nd.first_vcpu = d * vcpus / domains;
    nd.vcpus = (d + 1) * vcpus / domains - nd.first_vcpu;
    out.push_back(std::move(nd));
  }
  return out;
}

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

}  // namespace

Catalog Catalog::builtin() {
  using K = AcceleratorKind;
  Catalog c;
  // Facts from the EC2 / SageMaker instance pages: accelerators, accelerator memory (GiB), vCPUs, memory (GiB),
  // EFA interfaces, NUMA domains (sockets; accelerators and vCPUs split evenly between them).
  const InstanceType builtins[] = {
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
      make("ml.m5.xlarge", K::kNone, "", 0, 0, 4, 16, 0, 1),
      make("ml.c5.2xlarge", K::kNone, "", 0, 0, 8, 16, 0, 1),
  };
  for (const auto& t : builtins) {
    auto r = c.add(t);
    (void)r;  // built-in facts are consistent; catalog_test checks every one
  }
  return c;
}

Result<TypeId> Catalog::add(InstanceType type) {
  type.name = canonical_type_name(type.name);
  if (type.name.size() <= 3) return Error::invalid("instance type name is empty");
  if (find(type.name)) return Error::exists("instance type " + type.name + " is already in the catalog");
  if (type.accelerators < 0 || type.accelerators > 64)
    return Error::invalid(type.name + ": accelerators must be 0..64, got " + std::to_string(type.accelerators));
  if (type.vcpus <= 0 || type.vcpus > 4096)
    return Error::invalid(type.name + ": vcpus must be 1..4096, got " + std::to_string(type.vcpus));
  if (type.memory_gib <= 0 || type.memory_gib > (1 << 20))
    return Error::invalid(type.name + ": memory_gib must be 1..1048576, got " + std::to_string(type.memory_gib));
  if (type.ultraserver_size < 0) return Error::invalid(type.name + ": ultraserver_size must be >= 0");
  if (type.numa.empty()) type.numa = even_numa(1, type.accelerators, type.vcpus);
  // Every accelerator and vCPU must belong to exactly one NUMA domain, or binding would double-book them.
  std::vector<int> accel_seen(type.accelerators, 0), vcpu_seen(type.vcpus, 0);
  for (const auto& d : type.numa) {
    for (int a : d.accelerators) {
      if (a < 0 || a >= type.accelerators)
        return Error::invalid(type.name + ": NUMA domain names accelerator " + std::to_string(a) + " outside 0.." +
                              std::to_string(type.accelerators - 1));
      ++accel_seen[a];
    }
    if (d.first_vcpu < 0 || d.vcpus < 0 || d.first_vcpu + d.vcpus > type.vcpus)
      return Error::invalid(type.name + ": NUMA domain vCPU range lies outside 0.." + std::to_string(type.vcpus - 1));
    for (int v = d.first_vcpu; v < d.first_vcpu + d.vcpus; ++v) ++vcpu_seen[v];
  }
  if (std::any_of(accel_seen.begin(), accel_seen.end(), [](int n) { return n != 1; }) ||
      std::any_of(vcpu_seen.begin(), vcpu_seen.end(), [](int n) { return n != 1; }))
    return Error::invalid(type.name + ": NUMA domains must cover every accelerator and vCPU exactly once");
  types_.push_back(std::move(type));
  return TypeId(static_cast<uint32_t>(types_.size() - 1));
}

std::optional<TypeId> Catalog::find(std::string_view name) const {
  std::string canonical = canonical_type_name(name);
  for (size_t i = 0; i < types_.size(); ++i)
    if (types_[i].name == canonical) return TypeId(static_cast<uint32_t>(i));
  return std::nullopt;
}

Result<TypeId> Catalog::lookup(std::string_view name) const {
  if (auto id = find(name)) return *id;
  return Error::not_found("unknown instance type '" + std::string(name) + "'; known types: " + known_names());
}

std::string Catalog::known_names() const {
  std::vector<std::string> names;
  for (const auto& t : types_) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace allot
