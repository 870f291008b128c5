#include "core/model/catalog.h"

#include <algorithm>

#include "core/model/mig.h"

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

std::string fact_differences(const InstanceType& given, const InstanceType& known) {
  std::string out;
  auto differ = [&out](std::string_view key, const std::string& g, const std::string& k) {
    if (g == k) return;
    out += (out.empty() ? "" : ", ") + std::string(key) + " " + g + " (not " + k + ")";
  };
  auto num = [](int v) { return std::to_string(v); };
  auto layout = [](const InstanceType& t) {
    std::string s;
    for (const auto& d : t.numa) {
      s += "[";
      for (int a : d.accelerators) s += std::to_string(a) + " ";
      s += "/" + std::to_string(d.first_vcpu) + "+" + std::to_string(d.vcpus) + "]";
    }
    return s;
  };
  differ("accelerator_kind", accelerator_kind_name(given.accelerator_kind), accelerator_kind_name(known.accelerator_kind));
  differ("accelerator_model", given.accelerator_model, known.accelerator_model);
  differ("accelerators", num(given.accelerators), num(known.accelerators));
  differ("accelerator_memory_gib", num(given.accelerator_memory_gib), num(known.accelerator_memory_gib));
  differ("neuron_cores_per_accelerator", num(given.neuron_cores_per_accelerator), num(known.neuron_cores_per_accelerator));
  differ("vcpus", num(given.vcpus), num(known.vcpus));
  differ("memory_gib", num(given.memory_gib), num(known.memory_gib));
  differ("efa_interfaces", num(given.efa_interfaces), num(known.efa_interfaces));
  differ("numa_domains", num(static_cast<int>(given.numa.size())), num(static_cast<int>(known.numa.size())));
  if (given.numa.size() == known.numa.size()) differ("NUMA layout", layout(given), layout(known));
  differ("ultraserver_size", num(given.ultraserver_size), num(known.ultraserver_size));
  return out;
}

Result<TypeId> Catalog::add(InstanceType type) {
  if (find(type.name)) return Error::exists("instance type " + canonical_type_name(type.name) + " is already in the catalog");
  return put(std::move(type));
}

Result<TypeId> Catalog::put(InstanceType type) {
  type.name = canonical_type_name(type.name);
  if (type.name.size() <= 3) return Error::invalid("instance type name is empty");
  if (type.accelerators < 0 || type.accelerators > 64)
    return Error::invalid(type.name + ": accelerators must be 0..64, got " + std::to_string(type.accelerators));
  if (type.vcpus <= 0 || type.vcpus > 4096)
    return Error::invalid(type.name + ": vcpus must be 1..4096, got " + std::to_string(type.vcpus));
  if (type.memory_gib <= 0 || type.memory_gib > (1 << 20))
    return Error::invalid(type.name + ": memory_gib must be 1..1048576, got " + std::to_string(type.memory_gib));
  if (type.ultraserver_size < 0) return Error::invalid(type.name + ": ultraserver_size must be >= 0");
  // MIG types are derived from their base type (core/model/mig.h), never defined by hand.
  if (!type.is_mig() && split_mig_type_name(type.name))
    return Error::invalid(type.name + ": a name with \"" + std::string(kMigTypeInfix) +
                          "\" is a MIG type, which the catalog derives from its base type (docs/mig.md)");
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
  if (auto existing = find(type.name)) {
    types_[existing->index()] = std::move(type);
    return *existing;
  }
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
  if (auto parts = split_mig_type_name(name))
    if (auto base = find(parts->base)) {
      std::string profiles;
      for (const auto& t : types_)
        if (t.mig_base == at(*base).name) profiles += (profiles.empty() ? "" : ", ") + t.mig_profile;
      return Error::not_found("unknown instance type '" + std::string(name) + "': " + at(*base).name +
                              (profiles.empty() ? " has no MIG profiles (its GPUs cannot be partitioned)"
                                                : " has the MIG profiles " + profiles) +
                              " (docs/mig.md)");
    }
  return Error::not_found("unknown instance type '" + std::string(name) + "'; " + known_list());
}

std::string Catalog::known_list() const {
  return "known types" + (origin_.empty() ? std::string() : " (" + origin_ + ")") + ": " + known_names();
}

std::string Catalog::known_names() const {
  std::vector<std::string> names;
  for (const auto& t : types_)
    if (!t.is_mig()) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace allot
