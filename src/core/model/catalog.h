#pragma once
// The instance-type catalog: what each kind of node has (accelerators, vCPUs, memory, EFA, NUMA layout,
// UltraServer size). Built-in types (catalog_builtin.cpp) cover every SageMaker HyperPod instance type; an admin
// adds more in the policy file's `instance_types` section, which src/config parses and hands in as data.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/ids.h"
#include "core/model/resources.h"
#include "core/model/result.h"

namespace allot {

enum class AcceleratorKind { kNone, kNvidiaGpu, kNeuron };
const char* accelerator_kind_name(AcceleratorKind k);  // "none", "nvidia-gpu", "neuron"

// One NUMA domain: the accelerators and the vCPUs that share a memory bus and PCIe root.
struct NumaDomain {
  std::vector<int> accelerators;  // accelerator indices 0..n-1
  int first_vcpu = 0;             // vCPUs [first_vcpu, first_vcpu + vcpus)
  int vcpus = 0;
};

struct InstanceType {
  std::string name;  // canonical, with the ml. prefix: "ml.p5.48xlarge"
  AcceleratorKind accelerator_kind = AcceleratorKind::kNone;
  std::string accelerator_model;  // "H100", "A10G", "Trainium2"; empty for CPU types
  int accelerators = 0;
  int accelerator_memory_gib = 0;  // per accelerator
  int neuron_cores_per_accelerator = 0;  // Neuron devices only: how many NeuronCores one device exposes
  int vcpus = 0;
  int memory_gib = 0;
  int efa_interfaces = 0;
  std::vector<NumaDomain> numa;  // never empty for a valid type
  int ultraserver_size = 0;      // nodes per NVLink UltraServer; 0 where the type has none
  // A MIG type (core/model/mig.h; docs/mig.md): the type whose GPUs are all partitioned, the MIG profile they are
  // partitioned in, and how many devices of it one GPU holds; `accelerators` then counts MIG devices, device d
  // being instance d % mig_per_gpu of GPU d / mig_per_gpu. Empty for a type of whole accelerators.
  std::string mig_base;
  std::string mig_profile;
  int mig_per_gpu = 0;
  bool is_mig() const { return !mig_profile.empty(); }

  Resources capacity() const {
    return {accelerators, int64_t{vcpus} * 1000, int64_t{memory_gib} * 1024};
  }
};

// "p5.48xlarge" -> "ml.p5.48xlarge": the prefix is optional everywhere a user names a type.
std::string canonical_type_name(std::string_view name);

class Catalog {
 public:
  // The built-in types: builtin_instance_types(), in its order, then the MIG types of those with MIG-capable GPUs
  // (core/model/mig.h), after every other type so that no built-in type's TypeId moves.
  static Catalog builtin();

  // Adds a user-defined type. Rejects a duplicate name and inconsistent facts (NUMA domains that do not
  // cover the accelerators and vCPUs exactly once) with a message that says which.
  Result<TypeId> add(InstanceType type);
  // Adds a type, or replaces the facts of the type of that name (which keeps its TypeId), with add's checks.
  // REQUIRES: the caller has decided that replacing is wanted (config refuses a policy-file type that
  // differs from a built-in one unless the file says `replaces_builtin: true`).
  Result<TypeId> put(InstanceType type);

  std::optional<TypeId> find(std::string_view name) const;
  // Like find, but the error lists the known names; for an unknown MIG type of a known base type, that type's
  // MIG profiles.
  Result<TypeId> lookup(std::string_view name) const;
  const InstanceType& at(TypeId id) const { return types_[id.index()]; }
  size_t size() const { return types_.size(); }
  const std::vector<InstanceType>& types() const { return types_; }
  std::string known_names() const;  // "ml.c5.2xlarge, ml.g5.12xlarge, ..." (MIG types left out: see lookup)
  // What an error about an unknown type says: "known types: NAMES", or "known types (ORIGIN): NAMES" when the
  // catalog says where its types come from.
  std::string known_list() const;

  // Where the types come from ("built in, and the instance_types of FILE"), for people reading an error about a
  // type the catalog lacks: a server's and a client's catalogs may differ. Empty: not said (a scenario's).
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  const std::string& origin() const { return origin_; }

 private:
  std::vector<InstanceType> types_;
  std::string origin_;
};

// Every built-in type, with where its figures come from (catalog_builtin.cpp).
std::vector<InstanceType> builtin_instance_types();

// The facts in which two types differ, "vcpus 96 (not 192), memory_gib 1024 (not 2048)" (name aside); empty
// when they are the same type.
std::string fact_differences(const InstanceType& given, const InstanceType& known);

// NUMA layout helper: `domains` equal domains splitting accelerators and vCPUs in order.
std::vector<NumaDomain> even_numa(int domains, int accelerators, int vcpus);

}  // namespace allot
